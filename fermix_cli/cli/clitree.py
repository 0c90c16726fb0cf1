"""One neutral description of the whole command line, read from the Typer app and the tool registry.

Completions and man pages are rendered from this model, so they offer exactly what the CLI accepts:
the Typer commands with their options and arguments, and for `fermix tool NAME` the reserved options
plus the flags `cli/toolcall.py` derives from each tool's schema. Everything is sorted, so the output
is the same on every run.
"""

from __future__ import annotations

import typing
from typing import TYPE_CHECKING, Any

from ..core.records import Record
from .toolcall import RESERVED

if TYPE_CHECKING:
    from ..core.registry import Registry

# Parameter names whose values are paths (tool parameters and command arguments).
PATH_NAMES = frozenset({"path", "paths", "file", "files", "dir", "directory", "cwd", "working_dir", "root"})
DIR_NAMES = frozenset({"dir", "directory", "cwd", "working_dir", "root", "home"})


class Opt(Record, frozen=True):
    """One option: its spellings, a metavar when it takes a value, and how that value completes."""

    flags: tuple[str, ...]
    help: str
    metavar: str | None = None
    choices: tuple[str, ...] = ()
    complete: str = ""  # "file", "dir" or "" (nothing special)
    repeat: bool = False
    aliases: tuple[str, ...] = ()  # also accepted (a tool's --timeout_ms), never offered

    @property
    def takes_value(self) -> bool:
        return self.metavar is not None

    @property
    def spellings(self) -> tuple[str, ...]:
        """Every spelling the command accepts: what completion recognises, where `flags` is what it offers."""
        return self.flags + self.aliases


class Arg(Record, frozen=True):
    name: str
    help: str
    required: bool
    choices: tuple[str, ...] = ()
    complete: str = ""


class Command(Record, frozen=True):
    path: tuple[str, ...]
    help: str
    options: tuple[Opt, ...] = ()
    args: tuple[Arg, ...] = ()
    subcommands: tuple[Command, ...] = ()

    @property
    def name(self) -> str:
        return self.path[-1] if self.path else "fermix"

    @property
    def summary(self) -> str:
        return first_sentence(self.help)

    def walk(self) -> typing.Iterator[Command]:
        yield self
        for sub in self.subcommands:
            yield from sub.walk()


class Tool(Record, frozen=True):
    """A registry tool as `fermix tool NAME` sees it."""

    name: str
    spec: Any  # ToolSpec
    options: tuple[Opt, ...]  # parameter flags, derived like cli/toolcall.py does

    @property
    def summary(self) -> str:
        return first_sentence(self.spec.description)


class CliModel(Record, frozen=True):
    root: Command
    tools: tuple[Tool, ...]
    tool_options: tuple[Opt, ...]  # the options every `fermix tool NAME` takes

    def command(self, *path: str) -> Command:
        node = self.root
        for part in path:
            node = next(c for c in node.subcommands if c.name == part)
        return node


HELP_OPT = Opt(("-h", "--help"), "Show help and exit.")

TOOL_OPTIONS = (
    Opt(
        ("--json",),
        "Arguments as a JSON object: inline, - for stdin, or @FILE.",
        "OBJ|-|@FILE",
        complete="file",
    ),
    Opt(("--jsonl",), "Read one JSON object per stdin line; write one envelope per line."),
    Opt(("--schema",), "Print the input JSON schema and exit."),
    Opt(("--pretty",), "Indent the JSON output."),
    Opt(("--text",), "Print what a model would see instead of JSON."),
    HELP_OPT,
)


def first_sentence(text: str) -> str:
    line = text.strip().split("\n\n", 1)[0].replace("\n", " ")
    head, dot, _ = line.partition(". ")
    return (head + "." if dot else line).rstrip()


def _choices_of(param: Any) -> tuple[str, ...]:
    click_type = getattr(param, "type", None)
    choices = getattr(click_type, "choices", None) or ()
    return tuple(str(getattr(c, "value", c)) for c in choices)


def _path_kind(name: str) -> str:
    if name in DIR_NAMES:
        return "dir"
    return "file" if name in PATH_NAMES else ""


def _command(cmd: Any, path: tuple[str, ...]) -> Command:
    options: list[Opt] = []
    args: list[Arg] = []
    for p in cmd.params:
        if getattr(p, "hidden", False):
            continue
        name = p.name or ""
        if p.param_type_name == "argument":
            args.append(Arg(name, p.help or "", bool(p.required), _choices_of(p), _path_kind(name)))
            continue
        flags = tuple(p.opts) + tuple(p.secondary_opts)
        if getattr(p, "is_flag", False):
            options.append(Opt(flags, p.help or ""))
        else:
            metavar = p.metavar or name.upper()
            kind = _path_kind(flags[0].lstrip("-").replace("-", "_"))
            options.append(Opt(flags, p.help or "", metavar, _choices_of(p), kind, bool(p.multiple)))
    options.append(HELP_OPT)
    subs = getattr(cmd, "commands", {}) or {}
    children = tuple(
        _command(sub, (*path, name))
        for name, sub in sorted(subs.items())
        if not getattr(sub, "hidden", False)
    )
    return Command(
        path=path,
        help=(cmd.help or "").strip(),
        options=tuple(sorted(options, key=lambda o: o.flags[-1].lstrip("-"))),
        args=tuple(args),
        subcommands=children,
    )


def tool_flags(schema: dict[str, Any]) -> tuple[Opt, ...]:
    """The flags `fermix tool NAME` accepts for a schema (mirrors cli/toolcall.py's flag table)."""
    from ..core.registry import without_null

    out: list[Opt] = []
    for name, raw in sorted(schema.get("properties", {}).items()):
        if name in RESERVED:
            continue
        prop = without_null(raw)
        # Both spellings work; completion offers the dashed one only (`--timeout-ms`, not `--timeout_ms`).
        offered = f"--{name.replace('_', '-')}"
        aliases = (f"--{name}",) if "_" in name else ()
        desc = prop.get("description", "")
        kind = prop.get("type")
        if kind == "boolean":
            out.append(Opt((offered,), desc, aliases=aliases))
            out.append(
                Opt(
                    (f"--no-{offered[2:]}",),
                    f"Set {name} to false.",
                    aliases=(f"--no-{name}",) if aliases else (),
                )
            )
            continue
        item = prop.get("items", {}) if kind == "array" else prop
        choices = tuple(str(v) for v in item.get("enum", ()))
        metavar = {"integer": "INT", "number": "NUM", "array": "VALUE", "object": "JSON"}.get(
            kind or "", "TEXT"
        )
        out.append(Opt((offered,), desc, metavar, choices, _path_kind(name), kind == "array", aliases))
    return tuple(out)


def build_model(registry: Registry | None = None) -> CliModel:
    """Read the Typer app (every command group registered) and the registry's built-in tools."""
    from ..core.registry import default_registry
    from .app import command

    root = _command(command(), ())
    specs = (registry or default_registry()).all()
    tools = tuple(Tool(s.name, s, tool_flags(s.input_schema())) for s in specs if s.kind == "builtin")
    return CliModel(root, tools, TOOL_OPTIONS)


def config_keys() -> tuple[str, ...]:
    """Dotted config keys with fixed names (for completing `fermix config get|set|unset KEY`)."""
    import typing

    from ..core.config import root_class
    from ..core.params import Params

    keys: list[str] = []

    def walk(model: type[Params], prefix: str) -> None:
        for name, ann in typing.get_type_hints(model).items():
            if name.startswith("_") or name == "model_config":
                continue
            if isinstance(ann, type) and issubclass(ann, Params):
                walk(ann, f"{prefix}{name}.")
            else:
                keys.append(prefix + name)

    walk(root_class(), "")
    return tuple(sorted(keys))
