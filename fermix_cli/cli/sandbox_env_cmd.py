"""`fermix sandbox env [allow|deny|unset|set|get]`: which variables shell and git commands receive.

Everything here edits `[sandbox.env]` in config.toml (comments and layout kept, the whole file
validated before it is written) or reads it; `get` resolves a name as a command would receive it.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

import typer

from ..core.config import SandboxEnv
from ..core.errors import ExitClass, ToolError
from ..core.grants import update_config
from .common import context, emit_json, emit_result, handles_errors

env_app = typer.Typer(
    help=(
        "The environment shell and git commands receive: PATH, HOME, USER, LANG, SHELL, TMPDIR, LC_* and "
        "the names [sandbox.env] allows (deny wins). With no subcommand, list them."
    ),
    invoke_without_command=True,
)

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
NAME_MAX = 256
MASK = "***"
NameArg = Annotated[str, typer.Argument(metavar="NAME", help="The variable's name, e.g. GH_TOKEN.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="JSON output.")]


def _check_name(name: str) -> str:
    if len(name) > NAME_MAX or not _NAME.fullmatch(name):
        raise ToolError(
            "invalid_env_name",
            f"{name!r} is not an environment variable name: letters, digits and _, not starting with a "
            f"digit, at most {NAME_MAX} characters",
            {"name": name},
        )
    return name


def _owner_at_the_keyboard(what: str) -> Any:
    """The CLI context, refused when a guest, or a command fermix itself started, asks to `what`."""
    from ..core.spawned import spawned_by_fermix

    if spawned_by_fermix():
        raise ToolError(
            "not_attended",
            f"fermix sandbox env refuses to {what} from a process fermix started (a tool's shell or git "
            "command); the owner runs it from their own terminal",
            {},
        )
    ctx = context()
    if ctx.trust != "operator":
        ctx.close()
        raise ToolError("policy_denied", f"Only the owner may {what}.", {"trust": ctx.trust})
    return ctx


def _without(table: Any, key: str, name: str) -> bool:
    """Drop `name` from the list `table[key]`; True if it was there."""
    values = list(table.get(key, []))
    if name not in values:
        return False
    table[key] = [v for v in values if v != name]
    return True


def _change(what: str, edit: Any, *, create: bool = True) -> list[str]:
    """Apply `edit([sandbox.env] table) -> changes` to config.toml under its lock; the changes made.

    With `create` false a missing table (or file) is left missing: there is nothing to take away.
    """
    ctx = _owner_at_the_keyboard(what)
    changes: list[str] = []

    def apply(doc: Any) -> Any:
        if create:
            table = doc.setdefault("sandbox", {}).setdefault("env", {})
        else:
            table = doc.get("sandbox", {}).get("env")
        if table is not None:
            changes.extend(edit(table))
        return doc

    try:
        if create or ctx.paths.config_file.exists():
            update_config(ctx.paths, apply)
    finally:
        ctx.close()
    return changes


def _describe(name: str, cfg: SandboxEnv) -> dict[str, Any]:
    spec = cfg.vars.get(name)
    out: dict[str, Any] = {"name": name, "status": "denied" if name in cfg.deny else "allowed"}
    if spec is None or spec.source == "env":
        out["source"] = "env"
        if spec is not None and spec.name is not None:
            out["alias"] = spec.name
    else:
        out.update(source="command", command=spec.command, args=list(spec.args), timeout_ms=spec.timeout_ms)
    return out


def _source_text(item: dict[str, Any]) -> str:
    if item["source"] == "command":
        return f"helper: {' '.join([item['command'], *item['args']])}"
    if "alias" in item:
        return f"fermix's {item['alias']}"
    return "fermix's environment"


@env_app.callback()
@handles_errors
def env_list(ctx: typer.Context, as_json: JsonOpt = False) -> None:
    """List the names commands receive beyond the base set, and the denied ones (values never shown)."""
    if ctx.invoked_subcommand is not None:
        return
    from ..core.shell.childenv import BASE_NAMES

    tool_ctx = context()
    try:
        cfg = tool_ctx.config.sandbox.env
    finally:
        tool_ctx.close()
    names = [n for n in dict.fromkeys([*cfg.allow, *cfg.vars]) if n not in cfg.deny]
    items = [_describe(n, cfg) for n in [*names, *cfg.deny]]
    data = {"mode": cfg.mode, "base": [*BASE_NAMES, "LC_*"], "names": items}
    if as_json:
        emit_json(data)
        return
    if cfg.mode == "all":
        head = "env mode all: commands receive fermix's whole environment except the denied names"
    else:
        head = f"env mode list: commands receive {', '.join(data['base'])} and the allowed names"
    lines = [head]
    for item in items:
        what = "denied" if item["status"] == "denied" else f"allowed ({_source_text(item)})"
        lines.append(f"  {item['name']:<24} {what}")
    if not items:
        lines.append("  (no names allowed or denied; allow one with: fermix sandbox env allow NAME)")
    typer.echo("\n".join(lines))


def _done(message: str, name: str, changes: list[str], as_json: bool) -> None:
    emit_result({"name": name, "changed": changes, "message": message}, as_json)


@env_app.command("allow")
@handles_errors
def env_allow(name: NameArg, as_json: JsonOpt = False) -> None:
    """Pass NAME from fermix's environment to commands (and take it off the deny list)."""
    _check_name(name)

    def edit(table: Any) -> list[str]:
        changes = ["deny"] if _without(table, "deny", name) else []
        allow = list(table.get("allow", []))
        if name not in allow:
            table["allow"] = [*allow, name]
            changes.append("allow")
        return changes

    changes = _change("allow a name", edit)
    undenied = " (no longer denied)" if "deny" in changes else ""
    message = f"allowed: {name}{undenied}" if changes else f"{name} is already allowed; nothing changed"
    _done(message, name, changes, as_json)


@env_app.command("deny")
@handles_errors
def env_deny(name: NameArg, as_json: JsonOpt = False) -> None:
    """Never pass NAME to commands, whatever else allows it (a helper source for it is kept, unused)."""
    _check_name(name)

    def edit(table: Any) -> list[str]:
        changes = ["allow"] if _without(table, "allow", name) else []
        deny = list(table.get("deny", []))
        if name not in deny:
            table["deny"] = [*deny, name]
            changes.append("deny")
        return changes

    changes = _change("deny a name", edit)
    _done(
        f"denied: {name}" if changes else f"{name} is already denied; nothing changed", name, changes, as_json
    )


@env_app.command("unset")
@handles_errors
def env_unset(name: NameArg, as_json: JsonOpt = False) -> None:
    """Forget NAME: off the allow and deny lists, its source removed (base names stay passed)."""
    _check_name(name)

    def edit(table: Any) -> list[str]:
        changes = [key for key in ("allow", "deny") if _without(table, key, name)]
        sources = table.get("vars")
        if sources is not None and name in sources:
            del sources[name]
            changes.append("vars")
        return changes

    changes = _change("unset a name", edit, create=False)
    message = f"unset: {name}" if changes else f"{name} was not configured in [sandbox.env]; nothing changed"
    _done(message, name, changes, as_json)


@env_app.command("set")
@handles_errors
def env_set(
    name: NameArg,
    helper: Annotated[
        list[str],
        typer.Argument(
            metavar="HELPER",
            help="The program (after --, then its arguments) that prints the value on one line.",
        ),
    ],
    timeout_ms: Annotated[
        int, typer.Option("--timeout-ms", min=1, max=5000, help="The helper's time limit (default 3000).")
    ] = 3000,
    as_json: JsonOpt = False,
) -> None:
    """Pass NAME to commands with the value a helper prints (run per command; e.g. -- pass show gh)."""
    _check_name(name)
    command, *args = helper
    source: dict[str, Any] = {"source": "command", "command": command, "args": args}
    if timeout_ms != 3000:
        source["timeout_ms"] = timeout_ms

    def edit(table: Any) -> list[str]:
        changes = ["deny"] if _without(table, "deny", name) else []
        table.setdefault("vars", {})[name] = source
        return [*changes, "vars"]

    changes = _change("set a helper", edit)
    undenied = " (no longer denied)" if "deny" in changes else ""
    _done(f"set: {name} from helper {' '.join(helper)}{undenied}", name, changes, as_json)


@env_app.command("get")
@handles_errors
def env_get(
    name: NameArg,
    unsafe_print: Annotated[
        bool, typer.Option("--unsafe-print", help="Print the value itself instead of ***.")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Resolve NAME as a command would receive it (running its helper); the value is shown as ***."""
    from ..core.shell.childenv import BASE_NAMES, build_child_env

    _check_name(name)
    ctx = _owner_at_the_keyboard("print a value") if unsafe_print else context()
    try:
        cfg = ctx.config.sandbox.env
        workdir = ctx.sandbox.default_working_dir()
    finally:
        ctx.close()
    if name in cfg.deny:
        raise ToolError(
            "env_denied",
            f"{name} is denied in [sandbox.env]: commands never receive it. Allow it with: "
            f"fermix sandbox env allow {name}",
            {"name": name},
            exit_class=ExitClass.TOOL_FAILED,
        )
    child = build_child_env(cfg, helper_cwd=workdir, only=name)
    missing = {m.name: m.reason for m in child.missing}
    if name in missing:
        raise ToolError(
            "missing_env",
            f"{name} is allowed but cannot be resolved now ({missing[name]}); commands run without it",
            {"name": name, "reason": missing[name]},
            exit_class=ExitClass.TOOL_FAILED,
        )
    if name not in child.env and (cfg.mode == "all" or name in BASE_NAMES or name.startswith("LC_")):
        raise ToolError(
            "missing_env",
            f"{name} is not set in fermix's environment; commands run without it",
            {"name": name, "reason": "not set in fermix's environment"},
            exit_class=ExitClass.TOOL_FAILED,
        )
    if name not in child.env:
        raise ToolError(
            "env_not_allowed",
            f"commands do not receive {name}: it is not in [sandbox.env]. Allow it with: "
            f"fermix sandbox env allow {name}",
            {"name": name},
            exit_class=ExitClass.TOOL_FAILED,
        )
    value = child.env[name]
    shown = value if unsafe_print else MASK
    if as_json:
        emit_json({"name": name, "value": shown, "masked": not unsafe_print})
        return
    typer.echo(f"{name}={shown}")


def register(parent: typer.Typer) -> None:
    """Join `env` to the `fermix sandbox` group."""
    parent.add_typer(env_app, name="env")
