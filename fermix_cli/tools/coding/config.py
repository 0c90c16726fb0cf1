"""The coding toolset's capabilities: `[capabilities.tools.NAME]`."""

from __future__ import annotations

from ...core.config import Section


class PathToolCapability(Section):
    """`[capabilities.tools.NAME]` of a tool that takes caller paths."""

    absolute_paths: bool = True  # false: absolute paths outside the working directory are refused


class HashEditCapability(PathToolCapability):
    repairs: bool = True  # the automatic SWAP/INS.POST repairs of hashline.md §4.4


class BashCapability(Section):
    """`[capabilities.tools.bash]` of the coding toolset's bash tool."""

    shell_expansion: bool = True  # false: `$ ~ ` { }` are refused before anything runs


CONFIG_SECTIONS = {
    "capabilities.tools.read": PathToolCapability,
    "capabilities.tools.write": PathToolCapability,
    "capabilities.tools.hash_edit": HashEditCapability,
    "capabilities.tools.bash": BashCapability,
    "capabilities.tools.grep": PathToolCapability,
    "capabilities.tools.find": PathToolCapability,
    "capabilities.tools.list_files": PathToolCapability,
    "capabilities.tools.ast_grep": PathToolCapability,
}
