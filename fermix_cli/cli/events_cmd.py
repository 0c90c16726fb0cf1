"""`fermix events list|add|rm|snooze`: the owner's dates and reminders, through the same tools a model uses."""

from __future__ import annotations

import re
from typing import Annotated, Any

import typer

from .common import emit_json, emit_result, handles_errors, invoke_tool

app = typer.Typer(
    help="Personal dates and their reminders: list, add, rm (cancel) and snooze. `fermix jobs run` delivers them.",
    no_args_is_help=True,
)
JsonOpt = Annotated[bool, typer.Option("--json", help="JSON output (the tool's result).")]
_SPAN = re.compile(r"^(\d+)\s*(m|min|minutes?|h|hours?|d|days?|w|weeks?)$")


def _line(e: dict[str, Any]) -> list[str]:
    when = e["when"]
    at = f" {when['time'][:5]}" if when.get("time") else ""
    yearly = "  (yearly)" if e["recurrence"] == "yearly" else ""
    day = e.get("occurrence_in_window", e["next_occurrence"])
    lines = [f"{e['event_id']}  {day}{at:<6}  {e['kind']:<17} {e['title']}{yearly}  [{e['status']}]"]
    for r in e.get("reminders", []):
        if r["status"] == "failed":
            lines.append(
                f"    FAILED {r['reminder_id']} {r['rule_id']} at {r['local_time']}: "
                f"{r.get('last_error_code', '')} {r.get('last_error', '')}".rstrip()
            )
        elif r["status"] in ("pending", "delivering"):
            lines.append(f"    {r['status']:<10} {r['reminder_id']} {r['rule_id']} at {r['local_time']}")
    return lines


@app.command("list")
@handles_errors
def list_cmd(
    text: Annotated[str | None, typer.Option("--text", help="Match title and description.")] = None,
    kind: Annotated[
        str | None, typer.Option("--kind", help="Only this kind (birthday, appointment, ...).")
    ] = None,
    status: Annotated[
        str | None, typer.Option("--status", help="active (default), completed, cancelled or any.")
    ] = None,
    from_: Annotated[
        str | None, typer.Option("--from", help="Earliest date, YYYY-MM-DD (default today).")
    ] = None,
    to: Annotated[str | None, typer.Option("--to", help="Latest date, YYYY-MM-DD.")] = None,
    limit: Annotated[
        int | None, typer.Option("--limit", min=1, max=100, help="Rows per page (default 25).")
    ] = None,
    cursor: Annotated[
        str | None, typer.Option("--cursor", help="The next page, from a previous listing.")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Upcoming dates from today (or a window), with planned and failed reminders."""
    result = invoke_tool(
        "event_list",
        {
            "text": text,
            "kind": kind,
            "status": status,
            "from": from_,
            "to": to,
            "limit": limit,
            "cursor": cursor,
        },
    )
    if as_json:
        emit_json(result)
        return
    if not result["events"]:
        typer.echo("no events")
    for event in result["events"]:
        for line in _line(event):
            typer.echo(line)
    if result.get("next_cursor"):
        import shlex

        given = (("--text", text), ("--kind", kind), ("--status", status), ("--from", from_), ("--to", to),
                 ("--limit", limit))  # fmt: skip
        same = "".join(f" {flag} {shlex.quote(str(value))}" for flag, value in given if value is not None)
        typer.echo(f"more: fermix events list{same} --cursor {result['next_cursor']}")


def _when(
    on: str | None, at: str | None, yearly: str | None, in_: str | None, utc_offset: str | None
) -> dict[str, Any]:
    given = [x for x in (on, yearly, in_) if x]
    if len(given) != 1:
        raise typer.BadParameter("give exactly one of --on DATE, --yearly MM-DD or --in '2 days'")
    time = f"{at}:00" if at and len(at) == 5 else at
    if yearly:
        month, _, day = yearly.partition("-")
        if not (month.isdigit() and day.isdigit()):
            raise typer.BadParameter("--yearly takes MM-DD, e.g. 09-14", param_hint="--yearly")
        return {"type": "annual", "month": int(month), "day": int(day)}
    if in_:
        m = re.match(r"^(\d+)\s*(d|days?|w|weeks?)$", in_.strip())
        if not m:
            raise typer.BadParameter("--in takes '3 days' or '2 weeks'", param_hint="--in")
        form: dict[str, Any] = {
            "type": "relative",
            "amount": int(m[1]),
            "unit": "weeks" if m[2][0] == "w" else "days",
        }
        if not time:
            return form
        return {**form, "time": time, **({"utc_offset": utc_offset} if utc_offset else {})}
    if time:
        return {
            "type": "datetime",
            "date": on,
            "time": time,
            **({"utc_offset": utc_offset} if utc_offset else {}),
        }
    return {"type": "date", "date": on}


def _rule(text: str) -> dict[str, Any]:
    """`at`, `60m`, `2h`, `7d` or `7d@08:30` as a reminder rule."""
    text = text.strip()
    if text == "at":
        return {"type": "at_time"}
    days, _, at = text.partition("@")
    m = _SPAN.match(days)
    if not m:
        raise typer.BadParameter(f"{text!r}: use at, 60m, 2h, 7d or 7d@08:30", param_hint="--remind")
    amount, unit = int(m[1]), m[2][0]
    if unit == "d" or unit == "w":
        rule: dict[str, Any] = {"type": "days_before", "days": amount * (7 if unit == "w" else 1)}
        return {**rule, "at": f"{at}:00" if len(at) == 5 else at} if at else rule
    return {"type": "duration_before", "minutes": amount * (60 if unit == "h" else 1)}


@app.command("add")
@handles_errors
def add_cmd(
    title: Annotated[str, typer.Argument(help='What the date is, e.g. "Sarah\'s birthday".')],
    kind: Annotated[
        str,
        typer.Option(
            "--kind",
            help="birthday, anniversary, appointment, deadline, event, follow_up or explicit_reminder.",
        ),
    ] = "event",
    on: Annotated[str | None, typer.Option("--on", help="The date, YYYY-MM-DD.")] = None,
    at: Annotated[str | None, typer.Option("--at", help="Time of day, HH:MM (with --on or --in).")] = None,
    yearly: Annotated[str | None, typer.Option("--yearly", help="A yearly date, MM-DD.")] = None,
    in_: Annotated[
        str | None, typer.Option("--in", help="Relative: '3 days' or '2 weeks' from today.")
    ] = None,
    tz: Annotated[
        str | None,
        typer.Option(
            "--tz", help="IANA zone (default: the timezone of fermix_core.personalization in config.toml)."
        ),
    ] = None,
    utc_offset: Annotated[
        str | None, typer.Option("--utc-offset", help="Pick one of a repeated hour's offsets, e.g. -05:00.")
    ] = None,
    leap_day_policy: Annotated[
        str | None, typer.Option("--leap-day-policy", help="feb_28 or mar_1, for a yearly 29 February.")
    ] = None,
    remind: Annotated[
        list[str] | None,
        typer.Option(
            "--remind", help="A reminder rule replacing the defaults: at, 60m, 2h, 7d, 7d@08:30 (repeatable)."
        ),
    ] = None,
    no_reminders: Annotated[
        bool, typer.Option("--no-reminders", help="Store the date without reminders.")
    ] = False,
    followup: Annotated[
        bool, typer.Option("--followup", help="Offer a follow-up check-in after each reminder.")
    ] = False,
    description: Annotated[str | None, typer.Option("--description", help="Extra detail.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Store a date: `fermix events add Dentist --kind appointment --on 2027-03-14 --at 09:00`."""
    args = {
        "title": title,
        "kind": kind,
        "when": _when(on, at, yearly, in_, utc_offset),
        "timezone": tz,
        "leap_day_policy": leap_day_policy,
        "description": description,
        "reminders": [_rule(r) for r in remind] if remind else None,
        "no_reminders": True if no_reminders else None,
        "followup": True if followup else None,
    }
    emit_result(invoke_tool("event_store", args), as_json)


@app.command("rm")
@handles_errors
def rm_cmd(
    event_id: Annotated[
        str | None, typer.Argument(help="The event id; omit for the date of the latest reminder.")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Cancel a date and its unsent reminders (delivered history is kept)."""
    emit_result(invoke_tool("event_remove", {"event_id": event_id}), as_json)


@app.command("snooze")
@handles_errors
def snooze_cmd(
    reminder_id: Annotated[
        str | None, typer.Argument(help="The reminder id; omit for the latest reminder.")
    ] = None,
    for_: Annotated[str | None, typer.Option("--for", help="How long: 30m, 2h or 1d.")] = None,
    until: Annotated[str | None, typer.Option("--until", help="A local time: 'YYYY-MM-DD HH:MM'.")] = None,
    utc_offset: Annotated[
        str | None,
        typer.Option(
            "--utc-offset", help="With --until: pick one of a repeated hour's offsets, e.g. +01:00."
        ),
    ] = None,
    confirm_past_boundary: Annotated[
        bool, typer.Option("--confirm-past-boundary", help="Allow a time at or after the event.")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Defer one reminder (at most 90 days)."""
    if (for_ is None) == (until is None):
        raise typer.BadParameter("give exactly one of --for or --until")
    if utc_offset and not until:
        raise typer.BadParameter("--utc-offset goes with --until", param_hint="--utc-offset")
    if for_:
        m = _SPAN.match(for_.strip())
        if not m or m[2][0] == "w":
            raise typer.BadParameter("use 30m, 2h or 1d", param_hint="--for")
        unit = {"m": "minutes", "h": "hours", "d": "days"}[m[2][0]]
        snooze: dict[str, Any] = {"type": "duration", "amount": int(m[1]), "unit": unit}
    else:
        day, _, clock = (until or "").partition(" ")
        snooze = {"type": "datetime", "date": day, "time": f"{clock}:00" if len(clock) == 5 else clock}
        if utc_offset:
            snooze["utc_offset"] = utc_offset
    args = {
        "reminder_id": reminder_id,
        "snooze": snooze,
        "confirm_past_boundary": True if confirm_past_boundary else None,
    }
    emit_result(invoke_tool("reminder_snooze", args), as_json)
