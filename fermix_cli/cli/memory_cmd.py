"""`fermix memory list|search|forget|restore`: the owner's view of what fermix remembers."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from ..core.errors import ToolError
from ..memory import store as mem
from .common import context, edit_in_editor, emit_json, emit_result, handles_errors, invoke_tool

app = typer.Typer(
    help="What fermix remembers: list, search, forget (archive) and restore memories.", no_args_is_help=True
)

ScopeOpt = Annotated[
    str,
    typer.Option(
        "--scope",
        help="current (long-term memory and this session's notes), owner (every session) or all (jobs too).",
    ),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="JSON output.")]
LIST_LIMIT_MAX = 100_000  # a listing that large is a dump; `--json` and jq suit it better


def _scope(value: str) -> str:
    if value not in mem.SCOPE_REQUESTS:
        raise typer.BadParameter(f"must be one of {', '.join(mem.SCOPE_REQUESTS)}", param_hint="--scope")
    return value


def _line(m: dict[str, Any]) -> str:
    value = m["value"].replace("\n", "\\n")
    line = f"{m['id']:>6}  {mem.scope_label(m):<24} {m['category'] or 'note':<10}  {m['key']}: {value}"
    if m["archived_at"]:
        line += f"  [archived {m['archived_at']}{': ' + m['archive_reason'] if m['archive_reason'] else ''}]"
    return line


@app.command("list")
@handles_errors
def list_cmd(
    scope: ScopeOpt = "all",
    category: Annotated[
        str | None, typer.Option("--category", help="Only this category (or `note` for conversation notes).")
    ] = None,
    archived: Annotated[bool, typer.Option("--archived", help="List forgotten (archived) memories.")] = False,
    limit: Annotated[
        int, typer.Option("--limit", min=1, max=LIST_LIMIT_MAX, help="Show at most this many.")
    ] = 50,
    as_json: JsonOpt = False,
) -> None:
    """List memories, oldest first; the footer says when more exist than are shown."""
    if category is not None and category not in (*mem.CATEGORIES, "note"):
        raise typer.BadParameter(
            f"must be one of {', '.join((*mem.CATEGORIES, 'note'))}", param_hint="--category"
        )
    ctx = context()
    try:
        view = mem.search_view(mem.Caller.of(ctx), _scope(scope))
        rows, total = mem.listing(ctx.state.conn, view, limit=limit, archived=archived, category=category)
    finally:
        ctx.close()
    items = [mem.as_dict(r) for r in rows]
    if as_json:
        emit_json({"scope_applied": view.name, "memories": items, "total": total, "more": total > len(items)})
        return
    what = ("archived " if archived else "") + ("memory" if total == 1 else "memories")
    if not items:
        typer.echo(f"No {'archived ' if archived else ''}memories in scope {view.name}.")
        return
    typer.echo("\n".join(_line(m) for m in items))
    if total > len(items):
        typer.echo(f"Showing {len(items)} of {total} {what}; raise --limit to see more.")
    else:
        typer.echo(f"{total} {what} in scope {view.name}.")


@app.command("search")
@handles_errors
def search_cmd(
    query: Annotated[list[str], typer.Argument(help="Words to search for (all of them first, then any).")],
    scope: ScopeOpt = "all",
    limit: Annotated[int, typer.Option("--limit", min=1, max=1000, help="Show at most this many.")] = 10,
    as_json: JsonOpt = False,
) -> None:
    """Full-text search of active memories, best match (BM25) first."""
    text = " ".join(query)
    ctx = context()
    try:
        view = mem.search_view(mem.Caller.of(ctx), _scope(scope))
        found = mem.search(ctx.state.conn, view, text, limit)
    finally:
        ctx.close()
    if as_json:
        emit_json(
            {
                "search": text,
                "scope_applied": view.name,
                "hits": found.hits,
                "more": found.more,
                "match": found.match,
            }
        )
        return
    if not found.hits:
        typer.echo(f"No lexical matches found for: {text}")
        return
    typer.echo("\n".join(_line(h) for h in found.hits))
    if found.match == "any_term":
        typer.echo("No memory holds every word; these hold some of them.")
    if found.more:
        typer.echo(f"More than {limit} memories match; raise --limit or refine the search.")


@app.command("forget")
@handles_errors
def forget_cmd(
    memory_id: Annotated[str, typer.Argument(metavar="ID", help="The memory's id.")],
    reason: Annotated[str | None, typer.Option("--reason", help="Why (kept with the archived row).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Archive a memory: it is no longer recalled, but kept; `fermix memory restore ID` undoes it."""
    args = {"id": mem.parse_id(memory_id), "reason": reason}  # invalid_id in the CLI's words, exit 2
    emit_result(invoke_tool("memory_forget", args), as_json)


@app.command("restore")
@handles_errors
def restore_cmd(
    memory_id: Annotated[str, typer.Argument(metavar="ID", help="The archived memory's id.")],
    as_json: JsonOpt = False,
) -> None:
    """Bring a forgotten memory back."""
    parsed = mem.parse_id(memory_id)  # invalid_id (exit 2) before anything reaches SQLite
    ctx = context()
    try:
        if ctx.trust != "operator":
            raise ToolError(
                "policy_denied", "Restoring a memory is for the owner only.", {"trust": ctx.trust}
            )
        with ctx.state.write() as db:
            row, changed = mem.restore(db, parsed, mem.Caller.of(ctx), mem.timestamp(ctx.now()))
        m = mem.as_dict(row)
    finally:
        ctx.close()
    message = (
        f"Restored memory id={parsed} ({m['category'] or 'note'} {m['key']})."
        if changed
        else f"Memory id={parsed} is not archived; nothing changed."
    )
    emit_result({"action": "restored" if changed else "unchanged", "memory": m, "message": message}, as_json)


def _owner_context() -> Any:
    ctx = context()
    if ctx.trust != "operator":
        ctx.close()
        raise ToolError("policy_denied", "The memory review and the profiles are for the owner only.", {})
    return ctx


@app.command("review")
@handles_errors
def review_cmd(
    now: Annotated[
        bool, typer.Option("--now", help="Accepted for compatibility; a review always runs now.")
    ] = False,
    provider: Annotated[str | None, typer.Option("--provider", help="Provider for the review turn.")] = None,
    model: Annotated[str | None, typer.Option("--model", "-m", help="Model for the review turn.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Consolidate the facts stored since the last review into the user and work profiles, now.

    `fermix jobs run` does this on its own once `[fermix_core.memory_review] interval_hours` have passed
    and new facts exist. Only the owner's facts are read: never a guest's notes or a job's memory.
    """
    from ..jobs.memoryreview import run_review

    ctx = _owner_context()
    try:
        out = run_review(ctx, provider=provider, model=model)
    finally:
        ctx.close()
    messages = {
        "ok": f"Reviewed {out.get('facts')} facts; profiles updated.",
        "nothing_new": "No new facts since the last review; the profiles are unchanged.",
        "busy": "Another memory review is running.",
        "failed": f"The review failed: {(out.get('error') or {}).get('message', '')} (nothing changed).",
    }
    emit_result({**out, "message": messages[out["status"]]}, as_json)
    if out["status"] == "failed":
        raise typer.Exit(1)


profile_app = typer.Typer(help="The user and work profiles the memory review writes.", no_args_is_help=True)
app.add_typer(profile_app, name="profile")
KindArg = Annotated[str, typer.Argument(help="user or work (default: both, for show).")]


@profile_app.command("show")
@handles_errors
def profile_show(
    kind: Annotated[str | None, typer.Argument(help="user or work (default: both).")] = None,
    history: Annotated[bool, typer.Option("--history", help="Every stored version, newest first.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Show the profiles (and with --history, their earlier versions)."""
    from ..memory import profiles

    kinds = profiles.KINDS if kind is None else (profiles.check_kind(kind),)
    ctx = _owner_context()
    try:
        found = profiles.current(ctx.state.conn)
        out: dict[str, Any] = {k: found.get(k) for k in kinds}
        if history:
            out["history"] = {k: profiles.history(ctx.state.conn, k) for k in kinds}
    finally:
        ctx.close()
    if as_json:
        emit_json(out)
        return
    for k in kinds:
        p = out[k]
        head = f"{profiles.TITLES[k]} ({k}" + (
            f", revision {p['revision']}, {p['updated_at']})" if p else ", empty)"
        )
        typer.echo(head)
        typer.echo((p["content"] if p else "") + "\n")
        for h in out.get("history", {}).get(k, []):
            typer.echo(f"  revision {h['revision']} ({h['source']}, {h['created_at']})")


@profile_app.command("edit")
@handles_errors
def profile_edit(
    kind: KindArg,
    text: Annotated[
        str | None, typer.Option("--text", help="The new profile (default: open $EDITOR).")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Replace a profile by hand (the old version stays in its history)."""
    from ..memory import profiles
    from ..memory.store import timestamp

    profiles.check_kind(kind)
    if text is not None and not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:  # bytes that are not UTF-8 in the argument (surrogate escapes)
            raise ToolError(
                "invalid_input",
                "the profile text is not valid UTF-8; pass UTF-8 text (nothing was changed)",
                {"profile": kind},
            ) from None
    ctx = _owner_context()
    try:
        if text is None:
            old = profiles.current(ctx.state.conn).get(kind, {}).get("content", "")
            text = edit_in_editor(old)
            if text is None:
                emit_result(
                    {"action": "unchanged", "profile": kind, "message": f"The {kind} profile is unchanged."},
                    as_json,
                )
                return
        with ctx.state.write() as db:
            before = profiles.current(db).get(kind)
            revision = profiles.write(db, kind, text.strip(), "edit", timestamp(ctx.now()))
    finally:
        ctx.close()
    # profiles.write stores nothing when the trimmed text is the current content.
    changed = before is None or before["revision"] != revision
    emit_result(
        {
            "action": "edited" if changed else "unchanged",
            "profile": kind,
            "revision": revision,
            "message": f"Saved {kind} profile, revision {revision}."
            if changed
            else f"The {kind} profile is unchanged (revision {revision}); nothing was saved.",
        },
        as_json,
    )


@profile_app.command("reset")
@handles_errors
def profile_reset(
    kind: Annotated[str | None, typer.Argument(help="user or work (default: both).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Empty a profile (or both); the old versions stay in the history."""
    from ..memory import profiles
    from ..memory.store import timestamp

    kinds = profiles.KINDS if kind is None else (profiles.check_kind(kind),)
    ctx = _owner_context()
    try:
        with ctx.state.write() as db:
            for k in kinds:
                if k in profiles.current(db):
                    profiles.write(db, k, "", "reset", timestamp(ctx.now()))
    finally:
        ctx.close()
    emit_result(
        {"action": "reset", "profiles": list(kinds), "message": f"Reset: {', '.join(kinds)}."}, as_json
    )
