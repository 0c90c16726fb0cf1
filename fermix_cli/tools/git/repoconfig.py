"""What a repository's config may set for the git tools: no key that makes git run a program, no remote
whose host starts with `-`. Pure rules, and readers for `git config --list --null` output."""

from __future__ import annotations

import re

from ...core.errors import ToolError
from .args import check_remote_url

RUNS_PROGRAMS = ", which can run programs"
DASH_HOST = " to a host that starts with '-'"

# Config keys that make git run a program (lower-cased; `*` is any subsection, dots included).
_CODE_KEYS = (
    "core.fsmonitor", "core.hookspath", "core.sshcommand", "core.gitproxy", "core.pager", "core.editor",
    "core.askpass", "core.alternaterefscommand", "core.worktree",
    "sequence.editor", "diff.external", "diff.*.textconv", "*.textconv", "diff.*.command",
    "filter.*", "merge.*.driver",
    "credential.helper", "credential.*.helper", "gpg.program", "gpg.*.program", "gpg.ssh.defaultkeycommand",
    "pager.*",
    "interactive.difffilter", "uploadpack.packobjectshook", "remote.*.uploadpack", "remote.*.receivepack",
    "remote.*.vcs", "trailer.*.command", "trailer.*.cmd", "mergetool.*.cmd", "difftool.*.cmd",
    "include.*", "includeif.*",
)  # fmt: skip
_CODE_KEY_RES = tuple(re.compile("^" + re.escape(k).replace(r"\*", ".+") + "$") for k in _CODE_KEYS)
_FALSE_VALUES = frozenset({"", "false", "no", "off", "0"})


def code_running_key(key: str, value: str | None) -> bool:
    """True when a repository config entry would make git run a program."""
    k = key.lower()
    if k == "core.fsmonitor":
        return (value or "").strip().lower() not in _FALSE_VALUES
    if k.startswith("submodule.") and k.endswith(".update"):
        return (value or "").lstrip().startswith("!")
    if k == "diff.submodule":  # `diff` runs git diff inside each changed submodule
        return (value or "").strip().lower() == "diff"
    return any(r.match(k) for r in _CODE_KEY_RES)


def parse_config_list(raw: bytes) -> list[tuple[str, str, str | None]]:
    """(scope, key, value) from `git config --list --null --show-scope`; value None for a bare key."""
    parts = raw.split(b"\0")
    out: list[tuple[str, str, str | None]] = []
    for i in range(0, len(parts) - 1, 2):
        scope = parts[i].decode("utf-8", "replace")
        entry = parts[i + 1].decode("utf-8", "replace")
        key, nl, value = entry.partition("\n")
        out.append((scope, key, value if nl else None))
    return out


def parse_config_entries(raw: bytes) -> list[tuple[str, str | None]]:
    """(key, value) from `git config --list --null`; value None for a bare key."""
    out: list[tuple[str, str | None]] = []
    for entry in raw.split(b"\0")[:-1]:
        key, nl, value = entry.decode("utf-8", "replace").partition("\n")
        out.append((key, value if nl else None))
    return out


def config_refusal(key: str, value: str | None) -> str | None:
    """Why a config entry makes the git tools refuse the repository (RUNS_PROGRAMS, DASH_HOST), or None."""
    if code_running_key(key, value):
        return RUNS_PROGRAMS
    low = key.lower()
    url = None
    if low.startswith("remote.") and low.endswith((".url", ".pushurl")):
        url = value or ""
    elif low.startswith("url.") and low.endswith((".insteadof", ".pushinsteadof")):
        url = key[4 : key.rfind(".")]
    if url is not None and _dash_host(url):
        return DASH_HOST
    return None


def _dash_host(url: str) -> bool:
    """A configured URL whose host or user starts with `-` (other transports are git's to refuse)."""
    try:
        check_remote_url(url)
    except ToolError as e:
        return e.details.get("rule") == "dash_host"
    return False
