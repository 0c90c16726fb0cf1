"""`fermix tool NAME ...` and `fermix tool list`: the machine fast path, without Typer or rich.

Input comes from `--json '<obj>'`, `--json -`, `--json @file`, per-parameter flags (which override
JSON keys), or `--jsonl` (one object per stdin line, one envelope per output line).
"""

from __future__ import annotations

import errno
import math
import os
import re
import sys
from collections.abc import Callable
from typing import IO, Any, NoReturn, TextIO

from ..core.errors import ExitClass, ToolError
from ..core.jsonin import json_text, parse_json, parse_object
from .globalopts import GlobalOptions

RESERVED = {"json", "jsonl", "schema", "pretty", "text", "help"}


def _dumps(value: Any, pretty: bool) -> str:
    if pretty:
        return json_text(value, indent=2)
    return json_text(value, separators=(",", ":"))


def report_error(err: ToolError, stream: IO[str] | None = None, *, prog: str = "fermix") -> int:
    """Write the error envelope (or a readable line, `PROG: code: message`, on a terminal) to stderr;
    return the exit code.

    A closed or failing stderr loses the message, never the exit code."""
    stream = stream or sys.stderr
    if stream is not None:
        try:
            if _is_terminal(stream):
                stream.write(f"{prog}: {err.code}: {err.message}\n")
            else:
                stream.write(_dumps({"error": err.to_dict()}, False) + "\n")
            stream.flush()
        except (OSError, ValueError):
            pass  # nowhere left to say it; the exit code still does
    return int(err.exit_class)


def report_warning(err: ToolError, what: str, stream: IO[str] | None = None, *, prog: str = "fermix") -> None:
    """Write a warning that does not change the command's answer or exit code to stderr:
    `PROG: warning: code: WHAT: message` on a terminal, else `{"warning": {...}}` as one JSON line."""
    stream = stream or sys.stderr
    if stream is None:
        return
    try:
        if _is_terminal(stream):
            stream.write(f"{prog}: warning: {err.code}: {what}: {err.message}\n")
        else:
            warning = {**err.to_dict(), "message": f"{what}: {err.message}"}
            stream.write(_dumps({"warning": warning}, False) + "\n")
        stream.flush()
    except (OSError, ValueError):
        pass  # nowhere left to say it


def _usage(message: str, **details: Any) -> NoReturn:
    raise ToolError("usage", message, details)


# ----- flags derived from the schema ------------------------------------------------------------


def without_null(prop: dict[str, Any]) -> dict[str, Any]:
    from ..core.registry import without_null as strip

    return strip(prop)


def _flag_table(schema: dict[str, Any]) -> dict[str, tuple[str, dict[str, Any]]]:
    table: dict[str, tuple[str, dict[str, Any]]] = {}
    for name, prop in schema.get("properties", {}).items():
        if name in RESERVED:
            continue
        for spelling in {name, name.replace("_", "-")}:
            table[spelling] = (name, without_null(prop))
    return table


# A JSON number as a flag value: no spaces, underscores, other scripts' digits, `nan` or `inf`.
_NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_BOOLEANS = {"true": True, "yes": True, "1": True, "false": False, "no": False, "0": False}


def _bad_value(flag: str, value: str, kind: Any, why: str = "") -> ToolError:
    shown = value if len(value) <= 80 else f"{value[:60]}… ({len(value)} characters)"
    return ToolError(
        "invalid_input",
        f"--{flag}: {shown!r} is not a valid {kind}{why}",
        {"errors": [{"field": flag.replace("-", "_"), "message": f"not a valid {kind}"}], "flag": flag},
    )


def _flag_json(flag: str, value: str) -> Any:
    """`value` parsed as strict JSON; a failure names the flag."""
    try:
        return parse_json(value)
    except ToolError as e:
        raise ToolError(e.code, f"--{flag}: {e.message}", {**e.details, "flag": flag}) from None


def _convert(flag: str, value: str, prop: dict[str, Any]) -> Any:
    """One flag value as the parameter's type (an array parameter: the list of items it adds)."""
    kind = prop.get("type")
    if kind == "integer":
        # ASCII digits only, as in JSON: no spaces, no other scripts' digits, no underscores.
        if re.fullmatch(r"[+-]?[0-9]+", value) is None:
            raise _bad_value(flag, value, kind)
        try:
            return int(value)
        except ValueError:  # more digits than Python converts (sys.get_int_max_str_digits)
            raise _bad_value(flag, value, kind, " (too many digits)") from None
    if kind == "number":
        if _NUMBER.fullmatch(value) is None:
            raise _bad_value(flag, value, kind)
        number = float(value)
        if not math.isfinite(number):
            raise _bad_value(flag, value, kind, " (too large; send a finite number)")
        return number
    if kind == "boolean":
        if value.lower() not in _BOOLEANS:
            raise _bad_value(flag, value, kind, " (use true or false)")
        return _BOOLEANS[value.lower()]
    if kind == "object":
        parsed = _flag_json(flag, value)
        if not isinstance(parsed, dict):
            raise _bad_value(flag, value, "JSON object")
        return parsed
    if kind == "array":
        items = without_null(prop.get("items", {}))
        if items.get("type") == "string":
            # A JSON array of strings is that list; any other value (a regex such as `[0-9]+`, `[1]`)
            # is one item, as written.
            if value.startswith("["):
                try:
                    parsed = parse_json(value)
                except ToolError:
                    parsed = None
                if isinstance(parsed, list) and all(isinstance(v, str) for v in parsed):
                    return parsed
            return [value]
        if value.lstrip().startswith("["):
            parsed = _flag_json(flag, value)
            if not isinstance(parsed, list):
                raise _bad_value(flag, value, "JSON array")
            return parsed
        return [_convert(flag, value, items)]
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
            if out.json_source is not None:
                _usage("--json given twice; pass one JSON object (flags may add or override keys)", flag=name)
            out.json_source = take_value()
        elif name in ("jsonl", "schema", "pretty", "text"):
            if eq:
                _usage(f"--{name} takes no value", flag=name)
            setattr(out, name, True)
        elif name in flag_table():
            key, prop = flag_table()[name]
            if prop.get("type") == "boolean" and not eq and (i >= len(argv) or argv[i].startswith("--")):
                out.flags[key] = True  # a bare boolean flag; `--flag VALUE` and `--flag=VALUE` convert VALUE
                continue
            value = _convert(name, take_value(), prop)
            if prop.get("type") == "array" and key in out.flags:
                out.flags[key] = [*out.flags[key], *value]  # each repetition adds its items
            else:
                out.flags[key] = value
        elif name.startswith("no-") and flag_table().get(name[3:], ("", {}))[1].get("type") == "boolean":
            if eq:
                _usage(
                    f"--{name} takes no value; write --{name} alone, or --{name[3:]}=true|false", flag=name
                )
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
        return read_bounded(_stdin("--json -").buffer).decode("utf-8", "surrogateescape")
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


def _stdin(option: str) -> TextIO:
    """sys.stdin, or a usage error when the process was started with it closed (`<&-`)."""
    if sys.stdin is None:
        _usage(f"{option} reads from stdin, but stdin is closed; pipe the input in", option=option)
    return sys.stdin


# ----- output ----------------------------------------------------------------------------------


def _is_terminal(stream: IO[str] | None) -> bool:
    try:
        return stream is not None and stream.isatty()
    except (OSError, ValueError):
        return False


def _emit(text: str, *, after_work: bool = True) -> None:
    """Write to stdout and flush. A closed or failing stdout is `output_failed` (exit 1), saying whether
    the call's work was already done; a reader that went away (`| head`) stays a BrokenPipeError."""
    out = sys.stdout
    try:
        if out is None:
            raise OSError(errno.EBADF, "stdout is closed")
        out.write(text)
        out.flush()
    except BrokenPipeError:
        raise
    except (OSError, ValueError) as e:  # ValueError: a closed file object
        why = "stdout is closed" if out is None or isinstance(e, ValueError) else (e.strerror or str(e))
        done = "the tool ran and its work is done, but " if after_work else ""
        raise ToolError(
            "output_failed",
            f"{done}the result could not be written: {why}. Start fermix with stdout open "
            "(send it to /dev/null when the result is not wanted)",
            {"stream": "stdout", "reason": why, "work_done": after_work},
        ) from None


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
        if args.help:
            _emit(tool_usage(spec), after_work=False)
            return 0
        if args.schema:
            _emit(
                _dumps(spec.input_schema(), args.pretty or _is_terminal(sys.stdout)) + "\n", after_work=False
            )
            return 0
        if args.jsonl and args.json_source is not None:
            _usage("--jsonl reads objects from stdin; it cannot be combined with --json")
        if args.jsonl:
            _stdin("--jsonl")
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
        _emit(text if text.endswith("\n") else text + "\n")
    else:
        _emit(_dumps(result, args.pretty or _is_terminal(sys.stdout)) + "\n")
    return 0


def _run_jsonl(reg: Any, name: str, args: ToolArgs, ctx: Any) -> int:
    """One envelope per input line, in order; exit code of the first failure, else 0."""
    from ..core.jsonin import read_bounded_line

    first_failure = 0
    stdin = _stdin("--jsonl").buffer
    while True:
        try:
            raw = read_bounded_line(stdin)
        except ToolError as e:  # a line over the limit: its envelope, then on with the next line
            first_failure = first_failure or int(e.exit_class)
            _emit(_dumps({"ok": False, "error": e.to_dict()}, args.pretty) + "\n")
            if not e.details.get("line_skipped"):
                break  # no end to that line (endless input): nothing after it can be found
            continue
        if not raw:
            break
        line = raw.decode("utf-8", "surrogateescape").removesuffix("\n").removesuffix("\r")
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
        _emit(_dumps(envelope, args.pretty) + "\n")
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


TOOL_LIST_USAGE = (
    "Usage: fermix tool list [--json] [--mcp]\n\n"
    "List the tools this caller may run: the built-ins and the installed skills, each with its kind.\n"
    "--mcp also lists the enabled MCP servers' tools (mcp_SERVER_TOOL), starting the servers to ask them;\n"
    "without it no server is started.\n"
)


def run_tool_list(argv: list[str], g: GlobalOptions) -> int:
    as_json = with_mcp = False
    for arg in argv:
        if arg == "--json":
            as_json = True
        elif arg == "--mcp":
            with_mcp = True
        elif arg in ("-h", "--help"):
            _emit(TOOL_LIST_USAGE, after_work=False)
            return 0
        else:
            raise ToolError("unknown_flag", f"unknown argument {arg!r} for tool list", {"flag": arg})
    from ..core import policy
    from ..core.logs import setup_logging
    from ..core.registry import default_registry
    from ..core.toolsets import FilteredToolset

    ctx = _context(g)
    try:
        setup_logging(ctx.paths.log_file)  # a skill or server that does not load is logged, not shown
        source = FilteredToolset(default_registry().toolset(), policy.can_see)
        # Without --mcp nothing is started: MCP tools are known only from their running server.
        tools = source.tools(ctx) if with_mcp else source.tools_at_hand(ctx)
        failed = source.failures()
        servers = sorted(n for n, c in ctx.config.mcp.servers.items() if c.enabled)
    finally:
        ctx.close()
    rows: list[dict[str, Any]] = [
        {
            "name": s.name,
            "kind": s.kind,
            "category": s.category,
            "policy_class": s.policy_class,
            "owner_only": s.owner_only,
            "toolsets": sorted(s.toolsets),
            "description": s.description,
        }
        for s in tools
    ]
    if as_json:
        _emit(_dumps(rows, _is_terminal(sys.stdout)) + "\n", after_work=False)
    else:
        width = max((len(r["name"]) for r in rows), default=4)
        lines = []
        for r in rows:
            first = r["description"].split(". ")[0].rstrip(".")
            lines.append(
                f"{r['name']:<{width}}  {r['kind']:<7} {r['category']:<11} {r['policy_class']:<12} {first}\n"
            )
        _emit("".join(lines), after_work=False)
        if servers and not with_mcp and sys.stderr is not None:
            sys.stderr.write(
                f"MCP servers {', '.join(servers)}: their tools are listed with --mcp (which starts them)\n"
            )
    if sys.stderr is not None:
        for name, why in sorted(failed.items()):
            sys.stderr.write(f"MCP server {name} skipped: {why}\n")
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
        if sys.stderr is not None:
            sys.stderr.write("fermix: interrupted\n")
        return 130
    except BrokenPipeError:
        quiet_broken_pipe()
        return 0


def _terminate_cleanly() -> None:
    """Turn SIGTERM and SIGHUP into SystemExit (143, 129) so `finally` blocks run (a running shell's
    process group is killed: it is in its own session, so a closed terminal's hangup never reaches it).

    A SIGHUP that is ignored (`nohup fermix tool ...`) stays ignored."""
    import signal

    def on_term(signum: int, _frame: Any) -> None:
        raise SystemExit(128 + signum)

    try:
        signal.signal(signal.SIGTERM, on_term)
    except ValueError:  # not the main thread (an embedding caller's): its signals are not ours to take
        return
    if signal.getsignal(signal.SIGHUP) is not signal.SIG_IGN:
        signal.signal(signal.SIGHUP, on_term)


def quiet_broken_pipe() -> None:
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
