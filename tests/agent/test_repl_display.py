"""What `fermix agent` draws stays bounded however large a tool's arguments, result or the reply are:
a preview with a note on where the whole is kept, and a live view that re-renders only a reply's tail."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest

from fermix_cli.agent.messages import ToolCall
from fermix_cli.agent.transcripts import ToolOutcome
from fermix_cli.cli import render
from tests.conftest import Env

MB = 1_000_000


def observer(terminal: bool = True) -> tuple[render.RichObserver, io.StringIO]:
    from rich.console import Console

    out = io.StringIO()
    console = Console(file=out, width=100, force_terminal=terminal, color_system=None, highlight=False)
    return render.RichObserver(console, session=lambda: "s_abc"), out


@pytest.mark.parametrize("ok", [True, False])
def test_a_1mb_tool_result_is_shown_as_a_bounded_preview(ok: bool) -> None:
    watcher, out = observer()
    result = "\n".join(f"row {i} " + "x" * 40 for i in range(MB // 48))
    call = ToolCall("file_read", "{}", "w1")
    watcher.tool_end(ToolOutcome(call, "file_read", ok, result, None if ok else "exit_nonzero"))
    shown = out.getvalue()
    assert len(shown.splitlines()) <= render.RESULT_LINES + 4 and len(shown) < 5_000
    assert "row 0 " in shown and f"row {MB // 48 - 1} " not in shown
    assert "more characters; `fermix logs --json --session s_abc` shows the whole result" in shown


def test_1mb_of_arguments_are_shown_as_a_bounded_preview() -> None:
    watcher, out = observer()
    watcher.tool_start(ToolCall("file_write", "", "w1"), "file_write", {"path": "a", "content": "y\n" * MB})
    shown = out.getvalue()
    assert len(shown.splitlines()) <= render.ARGS_LINES + 4 and len(shown) < 10_000
    assert '"path": "a"' in shown and "shows the whole arguments" in shown


def test_a_streamed_reply_is_rendered_live_by_its_tail_and_shown_whole_at_the_end(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each live render parses at most LIVE_TAIL characters (not the whole reply on every delta, which
    grows with the square of its length); the reply is shown whole once it ends."""
    import rich.markdown

    parsed: list[int] = []
    real = rich.markdown.Markdown

    def counting(markup: str, *args: Any, **kw: Any) -> Any:
        parsed.append(len(markup))
        return real(markup, *args, **kw)

    monkeypatch.setattr(rich.markdown, "Markdown", counting)
    watcher, out = observer()
    lines = [f"line {i} of the answer\n" for i in range(2_000)]  # 46 kB in 2000 deltas
    watcher.model_start(1)
    for line in lines:
        watcher.text(line)
    watcher.pause()
    *live, final = parsed
    assert all(n <= render.LIVE_TAIL for n in live) and final == len("".join(lines))
    assert "line 0 of the answer" in out.getvalue() and "line 1999 of the answer" in out.getvalue()


def test_the_repl_shows_a_large_result_bounded_and_says_where_it_is_kept(world: Env) -> None:
    (world.project / "big.txt").write_text("\n".join(f"line {i} " + "abcdefghij" * 9 for i in range(10_000)))
    script = world.root / "script.json"
    script.write_text(
        json.dumps(
            [{"tool_calls": [{"name": "file_read", "arguments": {"path": "big.txt"}}]}, {"text": "Read it."}]
        )
    )
    r = world.run("agent", "--provider", "mock", "-m", str(script), input="read big.txt\n")
    assert r.code == 0, r.stderr
    session = world.run("logs", "--json").json()[0]["session_id"]
    [call] = world.run("logs", "--json", "--session", session).json()[0]["tool_calls"]
    assert len(call["output"]) > 90_000  # the whole result is kept ...
    assert len(r.stdout) < 8_000 and len(r.stdout.splitlines()) < 60  # ... and a preview is shown
    flat = " ".join(" ".join(line.strip("│ ") for line in r.stdout.splitlines()).split())  # panel unwrapped
    assert f"`fermix logs --json --session {session}` shows the whole result" in flat
    assert "Read it." in r.stdout
