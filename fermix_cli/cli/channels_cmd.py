"""`fermix channels ...`: see which delivery channels are set up, and send a test message through one."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Annotated, Any

import typer

from ..core.errors import ExitClass, ToolError
from .common import context, emit_json, handles_errors

app = typer.Typer(
    help="Delivery channels (inbox, telegram, webhook, desktop, apprise): list them, send a test message.",
    no_args_is_help=True,
)

JsonOpt = Annotated[bool, typer.Option("--json", help="JSON output.")]


def _status(config: Any) -> list[dict[str, Any]]:
    """Each channel and whether config.toml sets it up (named channels: their names)."""
    from ..channels import PLATFORMS
    from ..channels.desktop import unavailable_reason

    channels = config.fermix_core.channels
    telegram = channels.telegram
    rows: list[dict[str, Any]] = []
    for platform in PLATFORMS:
        row: dict[str, Any] = {"platform": platform}
        if platform == "inbox":
            row["ready"] = True
        elif platform == "telegram":
            row["ready"] = telegram.bot_token is not None or telegram.bot_token_env is not None
            row["owner_user_id"] = telegram.owner_user_id
        elif platform == "webhook":
            row["names"] = sorted(channels.webhooks)
            row["ready"] = bool(channels.webhooks)
        elif platform == "apprise":
            row["names"] = sorted(channels.apprise)
            row["ready"] = bool(channels.apprise)
        else:
            reason = unavailable_reason(os.environ)
            row["ready"] = reason is None
            if reason:
                row["note"] = reason
        rows.append(row)
    return rows


@app.command("list")
@handles_errors
def list_cmd(as_json: JsonOpt = False) -> None:
    """Which channels are set up, and the owner's default delivery target."""
    from ..channels.targets import resolve_default_target

    config = context().config
    rows = _status(config)
    try:
        default: dict[str, Any] = resolve_default_target(config).as_dict()
    except ToolError as e:
        default = {"error": e.to_dict()}
    if as_json:
        emit_json({"channels": rows, "default_target": default})
        return
    for row in rows:
        extra = ""
        if row.get("names"):
            extra = "  " + ", ".join(row["names"])
        elif row.get("owner_user_id"):
            extra = f"  owner {row['owner_user_id']}"
        typer.echo(f"{row['platform']:<9} {'ready' if row['ready'] else 'not set up'}{extra}")
    if "error" in default:
        typer.echo(f"default target: none ({default['error']['code']})")
    else:
        typer.echo(f"default target: {json.dumps(default['target'])} ({default['source']})")


@app.command("send")
@handles_errors
def send_cmd(
    target: Annotated[
        str,
        typer.Argument(help='A delivery target as JSON, e.g. \'{"platform":"inbox","recipient":"owner"}\'.'),
    ],
    text: Annotated[
        str, typer.Argument(help="The message (with --file: its caption).")
    ] = "fermix test message",
    file: Annotated[Path | None, typer.Option("--file", help="Send this file instead of text.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Send one message (or a file) to a target now, to check that a channel works. Nothing is retried."""
    from ..channels import ChannelError, channel_for
    from ..channels.targets import ADDRESS_KEYS, THREAD_KEYS, check_target

    try:
        raw = json.loads(target)
    except ValueError:
        raise typer.BadParameter("not valid JSON", param_hint="TARGET") from None
    if not isinstance(raw, dict):
        raise typer.BadParameter("must be a JSON object", param_hint="TARGET")
    ctx = context()
    clean = check_target(raw, source="target", config=ctx.config)
    channel = channel_for(clean["platform"], ctx.paths, ctx.config)
    assert channel is not None  # check_target refused every platform without one
    address = str(next(clean[k] for k in ADDRESS_KEYS if k in clean))
    meta = {k: clean[k] for k in THREAD_KEYS if k in clean}
    try:
        if file is not None:
            sent = channel.send_file(address, file, text, meta)
        else:
            sent = channel.send_text(address, text, meta)
    except ChannelError as e:
        details: dict[str, Any] = {"platform": clean["platform"], "permanent": e.permanent}
        if e.retry_after is not None:
            details["retry_after"] = e.retry_after
        raise ToolError(e.code, str(e), details, exit_class=ExitClass.TOOL_FAILED) from None
    if as_json:
        emit_json({"sent": sent.as_dict()})
    else:
        typer.echo(f"sent to {sent.platform} {sent.address}")
