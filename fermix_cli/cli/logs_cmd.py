"""`fermix logs`: read the transcripts of `fermix ask` and `fermix agent` back, or search them."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from ..core.jsonin import json_text
from .common import context, emit_json, handles_errors

OUTPUT_PREVIEW = 300


def _preview(text: str, limit: int = OUTPUT_PREVIEW) -> str:
    text = text.rstrip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _indent(text: str, prefix: str = "  ") -> str:
    return "\n".join(prefix + line for line in text.splitlines()) or prefix


def format_run(run: dict[str, Any], messages: list[dict[str, Any]]) -> str:
    """A run as readable text: header, prompt, tool calls with results, answers."""
    usage = run["usage"]
    head = (
        f"# {run['started_at']}  session {run['session_id']}  run {run['run_id']}\n"
        f"  {run['provider']}/{run['model']}  status {run['status']}  {run['iterations']} model call(s)  "
        f"{usage['input_tokens']} in / {usage['output_tokens']} out"
    )
    lines = [head]
    for m in messages:
        if m["role"] == "user":
            lines.append("\n> " + m["content"].replace("\n", "\n> "))
        elif m["role"] == "assistant":
            if m["content"].strip():
                lines.append("\n" + m["content"].rstrip())
            for call in json.loads(m["tool_calls_json"] or "[]"):
                lines.append(f"\n· {call['name']} {call['arguments'] or '{}'}")
        else:
            mark = "✗ " + (m["error_code"] or "error") if m["is_error"] else "✓"
            lines.append(f"  {mark} {m['tool_name']}\n" + _indent(_preview(m["content"]), "    "))
    for call in run["tool_calls"]:
        if "status" not in call:
            continue  # answered: shown with its turn above
        # A call whose end was never stored: the process died while it ran (or it runs right now).
        args = json_text(call["arguments"])
        lines.append(f"\n· {call['name']} {args}  (started {call['started_at']})")
        if call["ok"] is None:
            lines.append(f"  … {call['name']} running")
        else:
            lines.append(
                f"  ✗ {call['error_code']} {call['name']}\n" + _indent(_preview(call["output"]), "    ")
            )
    if run.get("error"):
        lines.append(f"\n! {run['error']['code']}: {run['error']['message']}")
    for hit in run.get("matches", []):
        lines.append(f"  match ({hit['role']}): {hit['snippet']}")
    return "\n".join(lines) + "\n"


def format_call(call: dict[str, Any]) -> str:
    """One recorded tool call as a line: when, where from, what, how it ended."""
    status = call["status"] if call["status"] != "error" else f"error {call['error_code']}"
    took = f" {call['duration_ms']:.0f} ms" if call["duration_ms"] is not None else ""
    args = _preview(json_text(call["arguments"]), 120).replace("\n", " ")
    return (
        f"{call['started_at']}  {call['session_id']}  {call['origin']}  {call['tool']} {args}  {status}{took}"
    )


def session_tree(rows: list[dict[str, Any]]) -> list[str]:
    """Sessions as lines, each delegated run (skill, subagent worker) indented under its caller's session."""
    listed = {r["session_id"] for r in rows}
    children: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        if r.get("parent_id") in listed:
            children.setdefault(r["parent_id"], []).append(r)
    out: list[str] = []

    def emit(r: dict[str, Any], depth: int) -> None:
        label = f"[{r['label']}]  " if r.get("label") else ""
        pad = "  " * depth + ("└ " if depth else "")
        out.append(f"{pad}{r['session_id']}  {r['updated_at']}  {r['runs']} run(s)  {label}{r['title']}")
        for child in children.get(r["session_id"], []):
            emit(child, depth + 1)

    for r in rows:
        if r.get("parent_id") not in listed:
            emit(r, 0)
    return out


@handles_errors
def logs(
    query: Annotated[
        str | None, typer.Option("-q", "--query", help="Full-text search of the messages.")
    ] = None,
    session: Annotated[str | None, typer.Option("--session", help="Only this session.")] = None,
    count: Annotated[
        int, typer.Option("-n", "--count", min=1, help="How many runs, sessions or calls (newest).")
    ] = 10,
    sessions: Annotated[bool, typer.Option("--sessions", help="List sessions instead of runs.")] = False,
    calls: Annotated[
        bool,
        typer.Option(
            "--calls",
            help="List recorded tool calls instead of runs (model runs, MCP calls), with calls a killed "
            "fermix left unfinished shown interrupted.",
        ),
    ] = False,
    as_json: Annotated[
        bool,
        typer.Option(
            "--json", help="JSON: runs as `fermix ask --json` prints them (or the sessions, or the calls)."
        ),
    ] = False,
) -> None:
    """Show recent runs of `fermix ask` / `fermix agent` (oldest first), one session's, or those matching -q.

    --sessions lists sessions instead, --calls the recorded tool calls (also MCP calls) and how each ended.
    """
    from ..agent.transcripts import Transcript

    if calls and (sessions or query is not None):
        from ..core.errors import ToolError

        raise ToolError(
            "usage", "--calls lists tool calls; it takes --session and -n, not --sessions or -q", {}
        )
    ctx = context()
    try:
        transcript = Transcript(ctx.state, ctx.clock)
        transcript.close_orphaned_runs()  # a run whose process died shows as interrupted, not running
        if calls:
            from ..core.callstarts import recent_calls

            found = recent_calls(ctx.state, session_id=session, limit=count)
            if as_json:
                emit_json(found)
            elif not found:
                typer.echo("no recorded tool calls" if session is None else "no matching calls", err=True)
            else:
                typer.echo("\n".join(format_call(c) for c in found))
            return
        if sessions:
            rows = transcript.sessions(count)
            if as_json:
                emit_json(rows)
            else:
                typer.echo("\n".join(session_tree(rows)))
            return
        runs = transcript.runs(session_id=session, query=query, limit=count)
        if as_json:
            emit_json(runs)
            return
        if not runs:
            typer.echo("no matching runs" if query or session else "no runs yet", err=True)
            return
        typer.echo("\n".join(format_run(r, transcript.messages(r["run_id"])) for r in runs), nl=False)
    finally:
        ctx.close()
