"""SKILL.md: a `---` line, YAML frontmatter, a `---` line, then the instructions.

The frontmatter is read with a real YAML parser (PyYAML, imported only when a skill is loaded) and
checked key by key; every error names the file and the line. The format is the one other agent tools
share, so a skill written for another agent loads unchanged: `allowed-tools` is read like
`allowed_tools`, and the tool names such agents use (`Read`, `Grep`, `Bash` ...) map to fermix's in the
toolset the skill runs in (`file_read` in the personal set, `read` in the coding set).
A name that maps to nothing (or a narrowed form such as `Bash(git:*)`, which fermix cannot enforce)
grants nothing and is reported in `unmapped_tools`: a translation never widens what a skill may do.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from .errors import ToolError
from .fsops import read_bytes
from .parsedfiles import ParsedFiles
from .records import Record, field

SKILL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
SKILL_FILE = "SKILL.md"
MAX_SKILL_BYTES = 65_536
SKILL_POLICIES = ("read_only", "read_write", "exec", "network", "external_api")
DEFAULT_MAX_ITERATIONS = 25
DEFAULT_TIMEOUT_SECONDS = 300

# Tool names of other agents' skills and subagents -> fermix's tools, per toolset: `fermix` (the personal
# set) and `coding`. Only exact equivalents are listed; a name with no entry for a toolset maps to nothing
# there. The one table: a declared list is kept as written and read for the toolset it runs in.
FOREIGN_TOOLS: dict[str, dict[str, str]] = {
    "Read": {"fermix": "file_read", "coding": "read"},
    "Write": {"fermix": "file_write", "coding": "write"},
    "Edit": {"fermix": "file_edit", "coding": "hash_edit"},
    "MultiEdit": {"fermix": "file_edit", "coding": "hash_edit"},
    "Bash": {"fermix": "shell", "coding": "bash"},
    "Grep": {"fermix": "content_search", "coding": "grep"},
    "Glob": {"fermix": "glob_search", "coding": "find"},
    "LS": {"coding": "list_files"},
    "WebFetch": {"fermix": "web_fetch", "coding": "web"},
    "WebSearch": {"fermix": "web_search", "coding": "web"},
}
DEFAULT_TOOLSET = "fermix"
_FERMIX_TOOL = re.compile(r"^[a-z][a-z0-9_]{0,63}$")


class SkillDef(Record, frozen=True):
    """One loaded skill. `allowed_tools` None means "the caller's tools"; () means none."""

    name: str
    description: str
    instructions: str
    directory: str
    path: str
    digest: str
    allowed_tools: tuple[str, ...] | None = None  # the declared tools in the fermix toolset
    unmapped_tools: tuple[str, ...] = ()
    declared_tools: tuple[str, ...] | None = None  # as written (`Read`, `file_read` ...)
    policy: tuple[str, ...] | None = None
    model: str | None = None
    provider: str | None = None
    temperature: float | None = None
    max_iterations: int = DEFAULT_MAX_ITERATIONS
    timeout_seconds: int = DEFAULT_TIMEOUT_SECONDS
    metadata: dict[str, Any] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "path": self.directory}

    def tools_in(self, toolset: str | None) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
        """(its allowed tools as `toolset` names them, the names that map to nothing there); None when it
        names none (the caller's tools)."""
        return None if self.declared_tools is None else resolve_tools(self.declared_tools, toolset)


def skill_error(code: str, path: str, line: int, message: str) -> ToolError:
    return ToolError(code, f"{path}:{line}: {message}", {"path": path, "line": line})


def _str(value: Any, key: str, path: str, line: int, *, limit: int = 1024) -> str:
    if not isinstance(value, str) or not value.strip():
        raise skill_error("invalid_frontmatter", path, line, f"{key} must be a non-empty string")
    if len(value) > limit:
        raise skill_error("invalid_frontmatter", path, line, f"{key} is longer than {limit} characters")
    return value.strip()


def _int(value: Any, key: str, path: str, line: int, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise skill_error("invalid_frontmatter", path, line, f"{key} must be an integer from {low} to {high}")
    return value


def declared_tools(value: Any, path: str, line: int) -> tuple[str, ...]:
    """The tool names an `allowed_tools` value declares (a list or a comma/space-separated string), once each."""
    if isinstance(value, str):
        items: list[Any] = [t for t in re.split(r"[,\s]+", value) if t]
    elif isinstance(value, list):
        items = value
    else:
        raise skill_error(
            "invalid_frontmatter", path, line, "allowed_tools must be a list of tool names (or [] for none)"
        )
    names: list[str] = []
    for item in items:
        if not isinstance(item, str) or not item.strip():
            raise skill_error("invalid_frontmatter", path, line, "allowed_tools entries must be tool names")
        names.append(item.strip())
    return tuple(dict.fromkeys(names))


def resolve_tools(names: tuple[str, ...], toolset: str | None) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(fermix tool names in `toolset`, names that map to nothing there) for declared tool names: another
    agent's name (`Read`) through `FOREIGN_TOOLS`, a fermix name as it is."""
    column = toolset or DEFAULT_TOOLSET
    mapped: list[str] = []
    unmapped: list[str] = []
    for name in names:
        foreign = FOREIGN_TOOLS.get(name)
        if foreign is not None:
            target = foreign.get(column)
        else:
            target = name if _FERMIX_TOOL.fullmatch(name) else None
        if target is None:
            unmapped.append(name)
        elif target not in mapped:
            mapped.append(target)
    return tuple(mapped), tuple(unmapped)


def map_tools(
    value: Any, path: str, line: int, toolset: str | None = None
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(fermix tool names in `toolset`, names that map to nothing there) for an `allowed_tools` value."""
    return resolve_tools(declared_tools(value, path, line), toolset)


def _policy(value: Any, path: str, line: int) -> tuple[str, ...]:
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(p, str) and p in SKILL_POLICIES for p in items):
        raise skill_error(
            "invalid_frontmatter", path, line, f"policy must be one or more of {', '.join(SKILL_POLICIES)}"
        )
    return tuple(dict.fromkeys(items))


def _jsonable(value: Any, key: str, path: str, line: int) -> Any:
    try:
        return json.loads(json.dumps(value, default=str))
    except (ValueError, RecursionError) as e:  # an integer too long to write out (PyYAML builds any size)
        raise skill_error(
            "invalid_frontmatter",
            path,
            line,
            f"{key}: the value cannot be kept ({_why(e)}); quote it as text",
        ) from None


def _construct(loader: Any, node: Any, key: str, path: str, line: int) -> Any:
    """The value of `node`; a value YAML parses but Python cannot build is a typed error at `line`.

    PyYAML raises plain Python errors for some well-formed values: a date that does not exist
    (`2024-02-30`), an integer of more than 4300 digits, a timezone offset of 24 hours or more.
    """
    import yaml  # type: ignore[import-untyped]

    try:
        return loader.construct_object(node, deep=True)
    except yaml.YAMLError:
        raise
    except (ValueError, TypeError, OverflowError, RecursionError) as e:
        what = f"{key}: the value" if key else "a key"
        raise skill_error(
            "invalid_frontmatter",
            path,
            line,
            f"{what} cannot be read ({_why(e)}); fix it, or quote it to keep it as text",
        ) from None


def _why(error: BaseException) -> str:
    if "integer string conversion" in str(error):  # Python's guard, whose advice is for programmers
        return "an integer of more than 4300 digits"
    return str(error) or type(error).__name__


def _refuse_aliases(source: str, loader_class: Any, path: str) -> None:
    """Refuse a YAML alias (`*name`), at its line: aliases let a few hundred bytes expand into gigabytes."""
    import yaml  # type: ignore[import-untyped]

    for event in yaml.parse(source, Loader=loader_class):
        if isinstance(event, yaml.AliasEvent):
            raise skill_error(
                "invalid_frontmatter",
                path,
                2 + event.start_mark.line,
                f"YAML aliases (*{event.anchor}) are not allowed in the frontmatter; write the value out",
            )


def _frontmatter(text: str, path: str) -> tuple[list[tuple[str, Any, int]], str, int]:
    """The frontmatter's (key, value, line) entries, the body, and the body's first line number."""
    lines = text.split("\n")
    if not lines or lines[0].strip() != "---":
        raise skill_error("invalid_frontmatter", path, 1, "SKILL.md must start with a '---' line")
    end = next((i for i in range(1, len(lines)) if lines[i].strip() == "---"), None)
    if end is None:
        raise skill_error("invalid_frontmatter", path, 1, "the frontmatter has no closing '---' line")
    import yaml  # type: ignore[import-untyped]

    source = "\n".join(lines[1:end])
    loader_class = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when PyYAML was built with it
    loader = loader_class(source)
    try:
        _refuse_aliases(source, loader_class, path)
        node = loader.get_single_node()
        if node is None:
            return [], "\n".join(lines[end + 1 :]), end + 2
        if not isinstance(node, yaml.MappingNode):
            raise skill_error(
                "invalid_frontmatter",
                path,
                2 + node.start_mark.line,
                "the frontmatter must be key: value lines",
            )
        entries: list[tuple[str, Any, int]] = []
        seen: set[str] = set()
        for key_node, value_node in node.value:
            line = 2 + key_node.start_mark.line
            key = _construct(loader, key_node, "", path, line)
            if not isinstance(key, str):
                raise skill_error("invalid_frontmatter", path, line, "frontmatter keys must be strings")
            if key in seen:
                raise skill_error("invalid_frontmatter", path, line, f"duplicate key {key}")
            seen.add(key)
            entries.append((key, _construct(loader, value_node, key, path, line), line))
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        line = 2 + (mark.line if mark is not None else 0)
        raise skill_error("invalid_frontmatter_line", path, line, f"YAML: {e.problem or e.context}") from None
    except yaml.YAMLError as e:
        raise skill_error("invalid_frontmatter_line", path, 2, f"YAML: {e}") from None
    except RecursionError:  # the pure-Python parser, on values nested thousands deep
        raise skill_error(
            "invalid_frontmatter_line", path, 2, "YAML: the frontmatter is nested too deeply"
        ) from None
    finally:
        loader.dispose()
    return entries, "\n".join(lines[end + 1 :]), end + 2


def parse_skill(data: bytes, path: str, directory: str) -> SkillDef:
    """The skill `data` (the bytes of `path`) declares; `ToolError` naming the file and line otherwise."""
    if len(data) > MAX_SKILL_BYTES:
        raise skill_error(
            "too_large", path, 1, f"SKILL.md is over {MAX_SKILL_BYTES} bytes; move detail into references/"
        )
    # A leading byte-order mark (Windows editors write one) is not text: the file starts after it.
    raw = data.removeprefix(b"\xef\xbb\xbf")
    try:
        text = raw.decode("utf-8").replace("\r\n", "\n")
    except UnicodeDecodeError as e:
        line = raw[: e.start].count(b"\n") + 1
        raise skill_error("invalid_frontmatter", path, line, "SKILL.md is not UTF-8 text") from None
    entries, body, body_line = _frontmatter(text, path)
    values: dict[str, Any] = {}
    lines: dict[str, int] = {}
    metadata: dict[str, Any] = {}
    for key, value, line in entries:
        canonical = key.replace("-", "_")
        if canonical in values:
            raise skill_error("invalid_frontmatter", path, line, f"duplicate key {key}")
        values[canonical], lines[canonical] = value, line
    for required in ("name", "description"):
        if required not in values or values[required] is None:
            raise skill_error("invalid_frontmatter", path, 2, f"missing required key: {required}")
    name = values.pop("name")
    if not isinstance(name, str) or not SKILL_NAME.fullmatch(name):
        shown = repr(name) if isinstance(name, str) else f"(a YAML {type(name).__name__})"
        raise skill_error(
            "invalid_name", path, lines["name"], f"name {shown} must match ^[A-Za-z0-9_-]{{1,64}}$"
        )
    out: dict[str, Any] = {
        "description": _str(values.pop("description"), "description", path, lines["description"])
    }
    # A key that is present is never read as absent: a blank `allowed_tools:` (YAML null) grants no
    # tools, like `[]` (only a missing key means the caller's tools), and a blank value of any other
    # known key is refused by its check below instead of being dropped or kept as metadata.
    if "allowed_tools" in values:
        raw = values.pop("allowed_tools")
        out["declared_tools"] = declared_tools([] if raw is None else raw, path, lines["allowed_tools"])
        out["allowed_tools"], out["unmapped_tools"] = resolve_tools(out["declared_tools"], None)
    if "policy" in values:
        out["policy"] = _policy(values.pop("policy"), path, lines["policy"])
    for key in ("model", "provider"):
        if key in values:
            out[key] = _str(values.pop(key), key, path, lines[key], limit=256)
    if "temperature" in values:
        t = values.pop("temperature")
        if isinstance(t, bool) or not isinstance(t, int | float) or not 0 <= t <= 2:
            raise skill_error("invalid_frontmatter", path, lines["temperature"], "temperature must be 0 to 2")
        out["temperature"] = float(t)
    if "max_iterations" in values:
        out["max_iterations"] = _int(
            values.pop("max_iterations"), "max_iterations", path, lines["max_iterations"], 1, 100
        )
    if "timeout_seconds" in values:
        out["timeout_seconds"] = _int(
            values.pop("timeout_seconds"), "timeout_seconds", path, lines["timeout_seconds"], 5, 900
        )
    if "role" in values and values["role"] not in ("main", "sub"):
        raise skill_error("invalid_frontmatter", path, lines["role"], "role must be main or sub")
    for key, value in values.items():
        metadata[key] = _jsonable(value, key, path, lines[key])
    instructions = body.strip()
    if not instructions:
        raise skill_error(
            "invalid_frontmatter",
            path,
            body_line,
            "the instructions (the text after the frontmatter) are empty",
        )
    return SkillDef(
        name=name,
        instructions=instructions,
        directory=directory,
        path=path,
        digest=hashlib.sha256(data).hexdigest(),
        metadata=metadata,
        **out,
    )


_PARSED: ParsedFiles[SkillDef] = ParsedFiles()


def load_skill(path: str, directory: str) -> SkillDef:
    """Read and parse the SKILL.md at the canonical `path` (a symlink is refused); a file unchanged
    since its last load is not parsed again (`core/parsedfiles.py`)."""
    import os

    try:
        st = os.stat(path)
    except OSError:
        return _read_skill(path, directory)  # raises the read's own error
    return _PARSED.get((path, directory), st, lambda: _read_skill(path, directory))


def _read_skill(path: str, directory: str) -> SkillDef:
    try:
        data = read_bytes(path, MAX_SKILL_BYTES)
    except OSError as e:
        raise skill_error("not_found", path, 1, f"cannot read SKILL.md: {e.strerror or e}") from None
    except ToolError as e:
        raise skill_error(e.code, path, 1, e.message) from None
    return parse_skill(data, path, directory)


def parse_frontmatter(text: str, path: str) -> tuple[list[tuple[str, Any, int]], str, int]:
    """A Markdown file's YAML frontmatter as (key, value, line) entries, its body, and the body's first line.

    SKILL.md's parser and limits (real YAML, aliases refused, every error naming `path` and a line), for
    other files in the same format (a subagent identity). `text` must open with a `---` line.
    """
    return _frontmatter(text, path)
