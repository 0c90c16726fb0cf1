"""`fermix browser start|stop|status|open URL|snapshot|shot`: the browser tool for a person at a terminal.

Each command is one call of the `browser` tool (same registry, guard and run files), printed for
reading; `--json` prints the tool's result object instead.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from .common import emit_json, handles_errors, invoke_tool

app = typer.Typer(help="A managed Chromium that stays up between commands.", no_args_is_help=True)

JsonOpt = Annotated[bool, typer.Option("--json", help="JSON output (the tool's result).")]
ProfileOpt = Annotated[str | None, typer.Option("--profile", help="Browser profile (default: configured).")]


def _call(args: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = invoke_tool("browser", args)
    return result


@app.command("start")
@handles_errors
def start_cmd(
    headed: Annotated[bool, typer.Option("--headed", help="Show the browser window.")] = False,
    profile: ProfileOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Launch the profile's browser (or report the one already running)."""
    result = _call({"action": "start", "profile": profile, "headless": False if headed else None})
    if as_json:
        emit_json(result)
        return
    verb = "Started" if result["started"] else "Already running:"
    typer.echo(f"{verb} profile {result['profile']}, pid {result['pid']}, {result['endpoint']}")


@app.command("stop")
@handles_errors
def stop_cmd(profile: ProfileOpt = None, as_json: JsonOpt = False) -> None:
    """Close the profile's browser."""
    result = _call({"action": "stop", "profile": profile})
    if as_json:
        emit_json(result)
    else:
        typer.echo(f"Stopped profile {result['profile']}." if result["stopped"] else "Not running.")


@app.command("status")
@handles_errors
def status_cmd(profile: ProfileOpt = None, as_json: JsonOpt = False) -> None:
    """Whether the profile's browser runs, and its endpoint, tabs and idle time."""
    result = _call({"action": "status", "profile": profile})
    if as_json:
        emit_json(result)
    elif not result["running"]:
        typer.echo(
            f"Profile {result['profile']}: not running"
            + (f" ({result['recovery']})" if result.get("lost") else "")
        )
    else:
        typer.echo(
            f"Profile {result['profile']}: running, pid {result['pid']}, {result['tabs']} tab(s) of "
            f"{result['max_tabs']}, idle {result['idle_seconds']:.0f} s, {result['endpoint']}"
        )


@app.command("open")
@handles_errors
def open_cmd(
    url: Annotated[str, typer.Argument(help="http(s) URL to open in a new tab.")],
    profile: ProfileOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Open URL in a new tab (starting the browser if needed)."""
    result = _call({"action": "open", "url": url, "profile": profile})
    if as_json:
        emit_json(result)
    else:
        typer.echo(f"{result['url']} — {result['title']} ({result['ready_state']}), tab {result['tab']}")


@app.command("snapshot")
@handles_errors
def snapshot_cmd(
    interactive: Annotated[
        bool, typer.Option("--interactive", "-i", help="Only interactive elements.")
    ] = False,
    compact: Annotated[bool, typer.Option("--compact", "-c", help="Drop unnamed containers.")] = False,
    urls: Annotated[bool, typer.Option("--urls", help="Show link URLs.")] = False,
    profile: ProfileOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """The active tab's accessibility tree, with refs for `fermix tool browser`."""
    result = _call(
        {
            "action": "snapshot",
            "interactive": interactive or None,
            "compact": compact or None,
            "include_urls": urls or None,
            "profile": profile,
        }
    )
    if as_json:
        emit_json(result)
    else:
        typer.echo(f"{result['url']} — {result['title']} ({result['ready_state']})")
        typer.echo(result["snapshot"])


@app.command("shot")
@handles_errors
def shot_cmd(
    full_page: Annotated[bool, typer.Option("--full-page", help="Capture the whole page.")] = False,
    jpeg: Annotated[bool, typer.Option("--jpeg", help="JPEG instead of PNG.")] = False,
    profile: ProfileOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Screenshot the active tab into the media directory; prints the file's path."""
    result = _call(
        {
            "action": "screenshot",
            "full_page": full_page or None,
            "format": "jpeg" if jpeg else None,
            "profile": profile,
        }
    )
    if as_json:
        emit_json(result)
    else:
        typer.echo(result["path"])
