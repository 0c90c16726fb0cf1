"""Subagent identities: `NAME.md` agent files that give `subagents` workers a role, tools and a model.

The format is the one other agents use for their subagents (Claude Code's `.claude/agents/NAME.md`): a
`---` line, YAML frontmatter, a `---` line, then the identity's instructions. Keys: `name` (required,
`^[A-Za-z0-9_-]{1,64}$`), `description` (required), `tools` (a list or a comma-separated string, mapped
like a skill's `allowed_tools` to the names of the toolset the worker runs in; absent: the workers' tools
as they are), `model` (`inherit` or absent: the
call's or routing's; `opus`, `sonnet` or `haiku`, Claude Code's aliases: that Claude family on an Anthropic
provider when one can run here, else the same as `inherit`, which the listing says). Other keys (`color` ...)
are ignored. The frontmatter is read by SKILL.md's parser
(`core/skillfile.py`), with its limits and its errors naming the file and the line.

Files are found directly in `<home>/agents/`, then in each `[fermix_core.subagents] roots` directory; the
first file of a name wins. A bad file (or a symlink, or anything not a regular file) is skipped and
reported, never fatal.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...core.errors import ToolError
from ...core.fsops import read_bytes
from ...core.parsedfiles import ParsedFiles
from ...core.records import Record, field
from ...core.skillfile import (
    MAX_SKILL_BYTES,
    SKILL_NAME,
    declared_tools,
    parse_frontmatter,
    resolve_tools,
    skill_error,
)

if TYPE_CHECKING:
    from ...core.config import Config
    from ...core.context import ToolContext
    from ...core.paths import FermixPaths
    from ...core.sandbox import Sandbox

MAX_IDENTITY_BYTES = MAX_SKILL_BYTES
MAX_DESCRIPTION = 8192  # other agents' descriptions carry worked examples; the listing shows a line
INHERIT = "inherit"
# Claude Code's model aliases: "a Claude model of that family" (providers.CLAUDE_FAMILIES).
CLAUDE_ALIASES = ("opus", "sonnet", "haiku")
NO_ANTHROPIC = "not available: no Anthropic provider; the default is used"
HOW_TO_ADD = (
    "Add one as <home>/agents/NAME.md (YAML frontmatter with name and description, then its instructions), "
    "or point [fermix_core.subagents] roots at a folder of agent files (Claude Code's .claude/agents works "
    "unchanged); `fermix subagents identities` lists them with their load errors."
)


class Identity(Record, frozen=True):
    """One loaded identity. `tools` None means "the workers' tools as they are"; () means none."""

    name: str
    description: str
    instructions: str
    path: str
    digest: str
    tools: tuple[str, ...] | None = None  # the declared tools in the fermix toolset
    unmapped_tools: tuple[str, ...] = ()
    declared_tools: tuple[str, ...] | None = None  # as written (`Read`, `file_read` ...)
    model: str | None = None  # None: the call's, else routing's (`inherit` reads as None)
    model_line: int = 0
    root: str = ""  # the root's origin: home or config

    def tools_in(self, toolset: str | None) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
        """(its tools as `toolset` names them, the names that map to nothing there); None when it names
        none (the workers' tools as they are)."""
        return None if self.declared_tools is None else resolve_tools(self.declared_tools, toolset)

    def summary(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "tools": None if self.tools is None else list(self.tools),
            "unmapped_tools": list(self.unmapped_tools),
            "model": self.model,
            "path": self.path,
            "root": self.root,
        }


class ModelRoute(Record, frozen=True):
    """What an identity's `model` asks the workers for here: a provider (None: inferred from the model, or
    routing's) and a model (None: the call's or routing's default), and for a Claude alias what it became
    (`note`, shown beside the model in `fermix subagents identities`)."""

    provider: str | None = None
    model: str | None = None
    note: str | None = None


def model_route(identity: Identity, config: Config) -> ModelRoute:
    """The route of `identity`'s model under `config`. A Claude alias (`sonnet` ...) is that family on an
    Anthropic provider that can run here, else the default (as `inherit`): never a run-time failure."""
    if identity.model is None:
        return ModelRoute()
    family = identity.model.lower()
    if family not in CLAUDE_ALIASES:
        return ModelRoute(model=identity.model)
    from ..providers import claude_family_route

    choice = claude_family_route(config, family)
    if choice is None:
        return ModelRoute(note=NO_ANTHROPIC)
    return ModelRoute(choice.name, choice.model, f"{choice.model} on {choice.name}")


class IdentityRoot(Record, frozen=True):
    """A directory whose `*.md` files are identities: `home` (<home>/agents) or `config` (with its entry)."""

    path: str
    origin: str
    entry: str | None = None


class Identities(Record):
    """The identities found (name -> identity, in discovery order) and the files that did not load."""

    identities: dict[str, Identity] = field(default_factory=dict)
    errors: list[dict[str, Any]] = field(default_factory=list)  # {path, code, message, root}

    def error_for(self, name: str) -> dict[str, Any] | None:
        """The load error of a file called `name`.md, if one did not load."""
        return next((e for e in self.errors if Path(e["path"]).stem == name), None)


def _bad(path: str, line: int, message: str) -> ToolError:
    return skill_error("invalid_frontmatter", path, line, message)


def _tools(value: Any, path: str, line: int) -> tuple[str, ...]:
    if value is None:  # a key that is present is never read as absent: blank grants no tools
        return ()
    items = value if isinstance(value, list) else [value]
    if not isinstance(value, str | list) or not all(isinstance(t, str) and t.strip() for t in items):
        raise _bad(path, line, "tools must be a list of tool names or a comma-separated string")
    return declared_tools(value, path, line)


def parse_identity(data: bytes, path: str) -> Identity:
    """The identity `data` (the bytes of `path`) declares; `ToolError` naming the file and line otherwise.

    The model is taken as written; `check_model` resolves it against a config.
    """
    if len(data) > MAX_IDENTITY_BYTES:
        raise skill_error("too_large", path, 1, f"the agent file is over {MAX_IDENTITY_BYTES} bytes")
    try:
        text = data.decode("utf-8").replace("\r\n", "\n").removeprefix("\ufeff")
    except UnicodeDecodeError as e:
        raise _bad(path, data[: e.start].count(b"\n") + 1, "the agent file is not UTF-8 text") from None
    if text.split("\n", 1)[0].strip() != "---":
        raise _bad(
            path, 1, "an agent file must start with a '---' line (YAML frontmatter: name, description)"
        )
    entries, body, body_line = parse_frontmatter(text, path)
    values = {key: (value, line) for key, value, line in entries}
    for required in ("name", "description"):
        if values.get(required, (None, 0))[0] is None:
            raise _bad(path, values.get(required, (None, 2))[1] or 2, f"missing required key: {required}")
    name, name_line = values["name"]
    if not isinstance(name, str) or not SKILL_NAME.fullmatch(name):
        shown = repr(name) if isinstance(name, str) else f"(a YAML {type(name).__name__})"
        raise skill_error("invalid_name", path, name_line, f"name {shown} must match ^[A-Za-z0-9_-]{{1,64}}$")
    description, line = values["description"]
    if not isinstance(description, str) or not description.strip():
        raise _bad(path, line, "description must be a non-empty string")
    if len(description) > MAX_DESCRIPTION:
        raise _bad(path, line, f"description is longer than {MAX_DESCRIPTION} characters")
    out: dict[str, Any] = {}
    if "tools" in values:
        value, line = values["tools"]
        out["declared_tools"] = _tools(value, path, line)
        out["tools"], out["unmapped_tools"] = resolve_tools(out["declared_tools"], None)
    if "model" in values:
        model, line = values["model"]
        if not isinstance(model, str) or not model.strip() or len(model) > 256:
            raise _bad(path, line, f"model must be a model name (at most 256 characters), or {INHERIT}")
        if model.strip() != INHERIT:
            out["model"], out["model_line"] = model.strip(), line
    instructions = body.strip()
    if not instructions:
        raise _bad(path, body_line, "the instructions (the text after the frontmatter) are empty")
    return Identity(
        name=name,
        description=description.strip(),
        instructions=instructions,
        path=path,
        digest=hashlib.sha256(data).hexdigest(),
        **out,
    )


def check_model(identity: Identity, config: Config) -> None:
    """Refuse (naming the file and the `model` line) an identity whose model fermix cannot resolve:
    the model goes where a call's `model` would, its provider inferred from the slug the same way.
    A Claude alias always resolves (`model_route`)."""
    route = model_route(identity, config)
    if route.model is None or route.provider is not None:
        return
    from ..providers import choose_provider, worker_route

    routing = config.fermix_core.routing
    provider, model = worker_route(routing.subagent_provider, routing.subagent_model, model=route.model)
    try:
        choose_provider(config, provider=provider, model=model)
    except ToolError as e:
        raise skill_error(
            e.code,
            identity.path,
            identity.model_line,
            f"model {identity.model!r} cannot be used: {e.message}",
        ) from None


def roots_of(paths: FermixPaths, config: Config) -> list[IdentityRoot]:
    """`<home>/agents`, then `[fermix_core.subagents] roots` (relative to config.toml's directory, `~`
    expanded), each directory once (its first place wins)."""
    roots = [IdentityRoot(str(Path(paths.data_dir) / "agents"), "home")]
    section = getattr(config.fermix_core, "subagents", None)
    for extra in getattr(section, "roots", None) or ():
        path = os.path.abspath(os.path.join(paths.config_dir, os.path.expanduser(str(extra))))
        roots.append(IdentityRoot(path, "config", str(extra)))
    unique: dict[str, IdentityRoot] = {}
    for root in roots:
        unique.setdefault(os.path.realpath(root.path), root)
    return list(unique.values())


def _root_error(root: IdentityRoot, error: OSError) -> dict[str, Any] | None:
    if isinstance(error, FileNotFoundError):
        if root.origin == "home":
            return None  # not made yet: no identities, no error
        why = "does not exist"
    elif isinstance(error, NotADirectoryError):
        why = "is not a directory"
    else:
        why = f"cannot be read ({error.strerror or error})"
    where = (
        f"[fermix_core.subagents] roots entry {root.entry!r}; fix or remove the entry"
        if root.origin == "config"
        else "the home's agents directory; move it away or make it a directory"
    )
    return {
        "path": root.path,
        "code": "invalid_identity_root",
        "message": f"identity root {root.path} {why} ({where})",
        "root": root.origin,
    }


_PARSED: ParsedFiles[Identity] = ParsedFiles()


def _load(path: str) -> Identity:
    """Parse the agent file at the canonical `path` (opened without following a symlink); a file
    unchanged since its last load is not parsed again (`core/parsedfiles.py`)."""
    try:
        st = os.stat(path, follow_symlinks=False)
    except OSError as e:
        raise skill_error("not_found", path, 1, f"cannot read the agent file: {e.strerror or e}") from None
    return _PARSED.get(path, st, lambda: _read(path))


def _read(path: str) -> Identity:
    try:
        data = read_bytes(path, MAX_IDENTITY_BYTES)
    except OSError as e:
        raise skill_error("not_found", path, 1, f"cannot read the agent file: {e.strerror or e}") from None
    except ToolError as e:
        raise skill_error(e.code, path, 1, e.message) from None
    return parse_identity(data, path)


def _refusal(path: str, entry: os.DirEntry[str]) -> tuple[str, str] | None:
    """(code, message) when the directory entry is not a regular file fermix will read."""
    if entry.is_symlink():
        return (
            "symlink_refused",
            f"{path}:1: the agent file is a symbolic link; identities must be real files",
        )
    st = entry.stat(follow_symlinks=False)
    if not stat.S_ISREG(st.st_mode):
        return "not_a_file", f"{path}:1: not a regular file; an identity is a NAME.md file"
    return None


def discover_in(
    roots: Sequence[IdentityRoot], config: Config | None = None, sandbox: Sandbox | None = None
) -> Identities:
    """Load every `<root>/*.md`; with `config`, an identity whose model does not resolve is a load error.
    With `sandbox`, a file that is protected or a hard link to a protected file is skipped unread and
    reported `protected_path`, as skill files are (its body would go into a worker's system prompt)."""
    from ...core.skillrefs import protected_skill_file

    found = Identities()
    for root in roots:
        real = os.path.realpath(root.path)
        try:
            entries = sorted(os.scandir(real), key=lambda e: e.name)
        except OSError as e:
            problem = _root_error(root, e)
            if problem is not None:
                found.errors.append(problem)
            continue
        for entry in entries:
            if not entry.name.endswith(".md") or entry.name.startswith("."):
                continue
            path = os.path.join(real, entry.name)
            try:
                refused = _refusal(path, entry)
                if refused is None and sandbox is not None and protected_skill_file(sandbox, path, real):
                    refused = (
                        "protected_path",
                        f"{path}:1: the agent file is protected by the sandbox, or a hard link to a protected "
                        "file; it is not read. Run: fermix sandbox explain",
                    )
                if refused is not None:
                    found.errors.append(
                        {"path": path, "code": refused[0], "message": refused[1], "root": root.origin}
                    )
                    continue
                identity = _load(path).replace(root=root.origin)
                if config is not None:
                    check_model(identity, config)
            except ToolError as e:
                found.errors.append({"path": path, "code": e.code, "message": e.message, "root": root.origin})
                continue
            except Exception as e:  # a loader bug must cost this file only
                from ...core.logs import logger

                logger("fermix.subagents").warning("agent file %s failed to load", path, exc_info=e)
                found.errors.append(
                    {
                        "path": path,
                        "code": "invalid_identity",
                        "message": f"{path}:1: the agent file cannot be loaded ({type(e).__name__}); it is "
                        "skipped. Details are in the fermix log",
                        "root": root.origin,
                    }
                )
                continue
            first = found.identities.get(identity.name)
            if first is not None:
                found.errors.append(
                    {
                        "path": path,
                        "code": "duplicate_identity",
                        "message": f"{path}: identity {identity.name} is already loaded from {first.path} "
                        "(the first root wins); this file is skipped, rename it to use both",
                        "root": root.origin,
                    }
                )
                continue
            found.identities[identity.name] = identity
    return found


def discover_identities(ctx: ToolContext) -> Identities:
    """The identities of `ctx`'s roots, their models checked against its config."""
    return discover_in(roots_of(ctx.paths, ctx.config), ctx.config, ctx.sandbox)


def role_section(identity: Identity) -> str:
    """The system prompt section that gives a worker the identity's role (after fermix's own framing)."""
    return f"## Your role: {identity.name}\n\n{identity.instructions}"


def unknown_identity(name: str, found: Identities) -> ToolError:
    """The refusal of an identity that is not installed: what is, why a file of that name did not load,
    and how to add one."""
    names = sorted(found.identities)
    available = ", ".join(names) if names else "none installed"
    failed = found.error_for(name)
    why = f" {Path(failed['path']).name} did not load: {failed['message']}." if failed else ""
    return ToolError(
        "unknown_identity",
        f"Unknown subagent identity: {name} (available: {available}).{why} {HOW_TO_ADD}",
        {"identity": name, "available": names},
    )


def listing(found: Identities, *, limit: int = 20, width: int = 160) -> str:
    """The identities as `name: description` lines for a model, bounded (`limit` entries, each cut)."""
    lines = []
    for identity in list(found.identities.values())[:limit]:
        first = " ".join(identity.description.split())
        if len(first) > width:
            first = first[: width - 3].rstrip() + "..."
        lines.append(f"{identity.name}: {first}")
    more = len(found.identities) - limit
    if more > 0:
        lines.append(f"... and {more} more")
    return "; ".join(lines)
