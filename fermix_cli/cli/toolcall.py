"""`fermix tool NAME ...` and `fermix tool list`: the machine fast path, without Typer or rich.

Input comes from `--json '<obj>'`, `--json -`, `--json @file`, per-parameter flags (which override
JSON keys), or `--jsonl` (one object per stdin line, one envelope per output line).
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable
from typing import IO, Any, NoReturn

from ..core.errors import ExitClass, ToolError
from ..core.jsonin import json_text, parse_json, parse_object
from .globalopts import GlobalOptions

RESERVED = {"json", "jsonl", "schema", "pretty", "text", "help"}


def _dumps(value: Any, pretty: bool) -> str:
    if pretty:
        return json_text(value, indent=2)
    return json_text(value, separators=(",", ":"))


def report_error(err: ToolError, stream: IO[str] | None = None) -> int:
    """Write the error envelope (or a readable line on a terminal) to stderr; return the exit code."""
    stream = stream or sys.stderr
    if stream.isatty():
        stream.write(f"fermix: {err.code}: {err.message}\n")
    else:
        stream.write(_dumps({"error": err.to_dict()}, False) + "\n")
    stream.flush()
    return int(err.exit_class)


def _usage(message: str, **details: Any) -> NoReturn:
    raise ToolError("usage", message, details)


# ----- flags derived from the schema ------------------------------------------------------------


def _flag_table(schema: dict[str, Any]) -> dict[str, tuple[str, dict[str, Any]]]:
    from ..core.registry import without_null

    table: dict[str, tuple[str, dict[str, Any]]] = {}
    for name, prop in schema.get("properties", {}).items():
        if name in RESERVED:
            continue
        for spelling in {name, name.replace("_", "-")}:
            table[spelling] = (name, without_null(prop))
    return table


def _convert(flag: str, value: str, prop: dict[str, Any]) -> Any:
    kind = prop.get("type")
    try:
        if kind == "integer":
            # ASCII digits only, as in JSON: no spaces, no other scripts' digits, no underscores.
            if re.fullmatch(r"[+-]?[0-9]+", value) is None:
                raise ValueError
            return int(value)
        if kind == "number":
            return float(value)
        if kind == "boolean":
            if value.lower() in ("true", "1", "yes"):
                return True
            if value.lower() in ("false", "0", "no"):
                return False
            raise ValueError
        if kind in ("array", "object"):
            parsed = parse_json(value) if value.lstrip().startswith(("[", "{")) else None
            if parsed is not None:
                return parsed
            if kind == "array":
                return [_convert(flag, value, prop.get("items", {}))]
            raise ValueError
    except ValueError:
        raise ToolError(
            "invalid_input",
            f"--{flag}: {value!r} is not a valid {kind}",
            {"errors": [{"field": flag.replace("-", "_"), "message": f"not a valid {kind}"}]},
        ) from None
    return value


class ToolArgs:
    """The parsed command line of one `fermix tool NAME` call."""

    def __init__(self) -> None:
        self.json_source: str | None = None
        self.jsonl = False
        self.schema = False
        self.pretty = False
        self.text = False
        self.help = False
        self.flags: dict[str, Any] = {}


def parse_tool_argv(argv: list[str], schema: Callable[[], dict[str, Any]], tool: str = "<name>") -> ToolArgs:
    """Parse the arguments; the schema (costly to build) is consulted only for parameter flags."""
    table_cache: list[dict[str, tuple[str, dict[str, Any]]]] = []

    def flag_table() -> dict[str, tuple[str, dict[str, Any]]]:
        if not table_cache:
            table_cache.append(_flag_table(schema()))
        return table_cache[0]

    out = ToolArgs()
    i = 0
    while i < len(argv):
        arg = argv[i]
        i += 1
        if arg in ("-h", "--help"):
            out.help = True
            continue
        if not arg.startswith("--") or arg == "--":
            _usage(
                f"unexpected argument {arg!r}; pass parameters as --name value or with --json", argument=arg
            )
        name, eq, inline = arg[2:].partition("=")

        def take_value(n: str = name, has: str = eq, val: str = inline) -> str:
            nonlocal i
            if has:
                return val
            if i >= len(argv):
                _usage(f"--{n} needs a value", flag=n)
            i += 1
            return argv[i - 1]

        if name == "json":
            out.json_source = take_value()
        elif name in ("jsonl", "schema", "pretty", "text"):
            if eq:
                _usage(f"--{name} takes no value", flag=name)
            setattr(out, name, True)
        elif name in flag_table():
            key, prop = flag_table()[name]
            if prop.get("type") == "boolean" and not eq:
                nxt = argv[i].lower() if i < len(argv) else ""
                if nxt in ("true", "false"):
                    i += 1
                    out.flags[key] = nxt == "true"
                else:
                    out.flags[key] = True
                continue
            value = _convert(name, take_value(), prop)
            if prop.get("type") == "array" and key in out.flags and not inline.lstrip().startswith("["):
                out.flags[key] = [*out.flags[key], *value]
            else:
                out.flags[key] = value
        elif name.startswith("no-") and flag_table().get(name[3:], ("", {}))[1].get("type") == "boolean":
            out.flags[flag_table()[name[3:]][0]] = False
        else:
            raise ToolError(
                "unknown_flag",
                f"unknown flag --{name}. Run: fermix tool {tool} --help",
                {"flag": name},
            )
    return out


def _read_json_source(source: str) -> str:
    from ..core.jsonin import read_bounded

    if source == "-":
        # Undecodable bytes become lone surrogates, which validation names by field.
        return read_bounded(sys.stdin.buffer).decode("utf-8", "surrogateescape")
    if source.startswith("@"):
        try:
            with open(source[1:], "rb") as f:
                return read_bounded(f).decode("utf-8")
        except OSError as e:
            raise ToolError(
                "invalid_json", f"cannot read {source[1:]}: {e.strerror}", {"path": source[1:]}
            ) from None
        except UnicodeDecodeError:
            raise ToolError("invalid_json", f"{source[1:]} is not UTF-8 text", {"path": source[1:]}) from None
    return source


# ----- running ---------------------------------------------------------------------------------


def _context(g: GlobalOptions) -> Any:
    from ..core.context import ToolContext

    return ToolContext.for_cli(home=g.home, cwd=g.cwd, session=g.session, trust=g.trust)  # type: ignore[arg-type]


def run_tool(name: str, argv: list[str], g: GlobalOptions) -> int:
    from ..core.logs import setup_logging
    from ..core.registry import default_registry
    from ..core.startup import resume_collector

    reg = default_registry()
    ctx = _context(g)
    try:
        spec = reg.find(name)  # a built-in: its family alone is imported
        if spec is None:
            # Another toolset's (an MCP server's tool starts that server): failures go to the log.
            setup_logging(ctx.paths.log_file)
            spec = reg.resolve(name, ctx)
        args = parse_tool_argv(argv, spec.input_schema, spec.name)
        out = sys.stdout
        if args.help:
            out.write(tool_usage(spec))
            return 0
        if args.schema:
            out.write(_dumps(spec.input_schema(), args.pretty or out.isatty()) + "\n")
            return 0
        if args.jsonl and args.json_source is not None:
            _usage("--jsonl reads objects from stdin; it cannot be combined with --json")
        setup_logging(ctx.paths.log_file)
        resume_collector()  # the tool's family is loaded: its work is collected as usual
        if args.jsonl:
            return _run_jsonl(reg, spec.name, args, ctx)
        data: dict[str, Any] = {}
        if args.json_source is not None:
            data = parse_object(_read_json_source(args.json_source))
        data.update(args.flags)
        ctx.pin_home()
        result = reg.invoke(spec.name, data, ctx)
        ctx.verify_home()  # a home deleted during the call: its work is lost, not done
    finally:
        ctx.close()
    if args.text:
        text = spec.render_for_model(result)
        out.write(text if text.endswith("\n") else text + "\n")
    else:
        out.write(_dumps(result, args.pretty or out.isatty()) + "\n")
    out.flush()
    return 0


def _run_jsonl(reg: Any, name: str, args: ToolArgs, ctx: Any) -> int:
    """One envelope per input line, in order; exit code of the first failure, else 0."""
    from ..core.jsonin import read_bounded_line

    first_failure = 0
    out = sys.stdout
    while True:
        try:
            raw = read_bounded_line(sys.stdin.buffer)
        except ToolError as e:  # the line's end is unknown, so no later line can be trusted
            out.write(_dumps({"ok": False, "error": e.to_dict()}, args.pretty) + "\n")
            return first_failure or int(e.exit_class)
        if not raw:
            break
        line = raw.decode("utf-8", "surrogateescape")
        if not line.strip():
            continue
        try:
            data = parse_object(line)
            data.update(args.flags)
            ctx.pin_home()
            envelope: dict[str, Any] = {"ok": True, "result": reg.invoke(name, data, ctx)}
            ctx.verify_home()
        except ToolError as e:
            envelope = {"ok": False, "error": e.to_dict()}
            first_failure = first_failure or int(e.exit_class)
        out.write(_dumps(envelope, args.pretty) + "\n")
        out.flush()
    return first_failure


def tool_usage(spec: Any) -> str:
    from ..core.tooldoc import parameter_lines

    flags = []
    for name, prop in spec.input_schema().get("properties", {}).items():
        flag = f"--{name.replace('_', '-')}" if name not in RESERVED else f"(json only) {name}"
        kind = prop.get("type", "value")
        flags.append(f"  {flag} {kind.upper() if kind != 'boolean' else '/ --no-' + name.replace('_', '-')}")
    return (
        f"Usage: fermix tool {spec.name} [--json OBJ|-|@FILE] [--jsonl] [--schema] [--pretty] [--text] [FLAGS]\n\n"
        f"{spec.description}\n\nPolicy class: {spec.policy_class}\n\nParameters:\n"
        + "\n".join(parameter_lines(spec))
        + "\n\nFlags:\n"
        + "\n".join(flags)
        + "\n\nExit codes: 0 ok, 1 tool failed, 2 bad input, 3 refused by policy or sandbox, 4 internal error.\n"
    )


def run_tool_list(argv: list[str], g: GlobalOptions) -> int:
    as_json = False
    for arg in argv:
        if arg == "--json":
            as_json = True
        elif arg in ("-h", "--help"):
            sys.stdout.write("Usage: fermix tool list [--json]\n\nList the tools this caller may run.\n")
            return 0
        else:
            raise ToolError("unknown_flag", f"unknown argument {arg!r} for tool list", {"flag": arg})
    from ..core import policy
    from ..core.registry import default_registry
    from ..core.toolsets import FilteredToolset, RegistryToolset

    ctx = _context(g)
    try:
        # The built-ins: listing starts no MCP server (`fermix mcp tools` does; tool_search finds them).
        tools = FilteredToolset(RegistryToolset(default_registry()), policy.can_see).tools(ctx)
    finally:
        ctx.close()
    rows: list[dict[str, Any]] = [
        {
            "name": s.name,
            "category": s.category,
            "policy_class": s.policy_class,
            "owner_only": s.owner_only,
            "toolsets": sorted(s.toolsets),
            "description": s.description,
        }
        for s in tools
    ]
    if as_json:
        sys.stdout.write(_dumps(rows, sys.stdout.isatty()) + "\n")
    else:
        width = max((len(r["name"]) for r in rows), default=4)
        for r in rows:
            first = r["description"].split(". ")[0].rstrip(".")
            sys.stdout.write(f"{r['name']:<{width}}  {r['category']:<11} {r['policy_class']:<12} {first}\n")
    return 0


def main_tool(argv: list[str], g: GlobalOptions) -> int:
    """Entry for `fermix tool ...` (argv starts after `tool`)."""
    _terminate_cleanly()
    try:
        if not argv or argv[0] in ("list", "ls"):
            return run_tool_list(argv[1:], g)
        return run_tool(argv[0], argv[1:], g)
    except ToolError as e:
        return report_error(e)
    except KeyboardInterrupt:
        sys.stderr.write("fermix: interrupted\n")
        return 130
    except BrokenPipeError:
        _quiet_broken_pipe()
        return 0


def _terminate_cleanly() -> None:
    """Turn SIGTERM into SystemExit so `finally` blocks run (a running shell's process group is killed)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return

    def on_term(signum: int, _frame: Any) -> None:
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, on_term)


def _quiet_broken_pipe() -> None:
    # The reader went away (e.g. `| head`); point stdout at devnull so the exit flush is silent.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())


def internal_error(exc: BaseException, log_file: Any = None) -> int:
    from ..core.errors import environment_error
    from ..core.logs import logger

    logger("fermix").error("internal error", exc_info=exc)
    err = environment_error(exc) or ToolError(
        "internal_error",
        f"unexpected {type(exc).__name__}: {exc}. Details are in the fermix log",
        {},
        exit_class=ExitClass.INTERNAL,
    )
    return report_error(err)
