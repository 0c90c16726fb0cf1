"""Rich rendering of a run for `fermix agent`: a spinner while the model works, live markdown while it
streams, and a panel per tool call. Rendering only; the loop knows nothing about it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable

    from rich.console import Console
    from rich.live import Live

    from ..agent.messages import ModelResponse, ToolCall
    from ..agent.transcripts import ToolOutcome

# What a panel shows of a tool call's arguments or result: a result can be megabytes (a fan-out's, a
# file read), and the terminal gets a preview; `fermix logs --json` has it whole.
RESULT_PREVIEW = 1200  # characters of a result
RESULT_LINES = 24  # lines of a result
ARGS_PREVIEW = 4000  # characters of the arguments (syntax-highlighted)
ARGS_LINES = 60
# While a reply streams, the live view re-renders only its tail, at most LIVE_FPS times a second:
# parsing the whole reply as markdown on every delta grows with the square of its length.
LIVE_TAIL = 4000
LIVE_FPS = 12
MARKDOWN_MAX = 50_000  # a longer reply is shown as plain text (markdown's parser is slow on it)

# Shown for a character that would move, hide or redraw text on a terminal.
_SHOWN = {"\n": "␤", "\r": "␍", "\t": "␉"}


def visible(text: str) -> str:
    """`text` with every character a terminal would act on or hide shown instead: a newline as ␤, a
    control, format (bidi override) or unusual space character as `\\xNN`/`\\uNNNN`. What the owner is
    asked to approve reads exactly as it is, on one line: a model-written reason cannot draw lines."""
    if text.isprintable():
        return text
    out = []
    for c in text:
        if c.isprintable():  # everything but the control, format, separator and unassigned characters
            out.append(c)
        elif c in _SHOWN:
            out.append(_SHOWN[c])
        else:
            code = ord(c)
            out.append(
                f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"
            )
    return "".join(out)


def preview(text: str, chars: int, lines: int) -> tuple[str, int]:
    """`text` cut to at most `chars` characters and `lines` lines, and how many characters were left out."""
    cut = text[:chars]
    end = -1
    for _ in range(lines):
        end = cut.find("\n", end + 1)
        if end < 0:
            break
    if end >= 0:
        cut = cut[:end]
    return cut, len(text) - len(cut)


def _markdown_tail(text: str) -> str:
    """The last LIVE_TAIL characters of a streaming reply, from a line start when one is near."""
    if len(text) <= LIVE_TAIL:
        return text
    tail = text[-LIVE_TAIL:]
    start = tail.find("\n")
    return tail[start + 1 :] if 0 <= start < LIVE_TAIL // 2 else tail


def _args_text(arguments: Any) -> str:
    if isinstance(arguments, str):
        from ..agent.messages import valid_unicode

        return valid_unicode(arguments)
    from ..core.jsonin import json_text

    return json_text(arguments, indent=2)


class RichObserver:
    """A LoopObserver drawing on a rich Console."""

    def __init__(self, console: Console, session: Callable[[], str] | None = None) -> None:
        self.console = console
        self.session = session  # the session shown, for the note on where a whole result is kept
        self._live: Live | None = None
        self._text: list[str] = []
        self._drawn = 0.0  # when the live view last took the text

    # the model's turn

    def model_start(self, iteration: int) -> None:
        from rich.live import Live
        from rich.spinner import Spinner

        self._text = []
        self._live = Live(
            Spinner("dots", text="thinking…", style="dim"),
            console=self.console,
            refresh_per_second=12,
            transient=True,
        )
        self._live.start()

    def text(self, delta: str) -> None:
        import time

        from rich.markdown import Markdown

        self._text.append(delta)
        if self._live is None:
            return
        self._live.transient = False
        now = time.monotonic()
        if now - self._drawn < 1 / LIVE_FPS:
            return  # the next delta (or the end of the reply) draws it
        self._drawn = now
        self._live.update(Markdown(_markdown_tail("".join(self._text))))

    def _reply(self) -> Any:
        """The whole reply as it stays on screen: markdown, or plain text when it is very long."""
        from rich.markdown import Markdown
        from rich.text import Text

        text = "".join(self._text)
        return Markdown(text) if len(text) <= MARKDOWN_MAX else Text(text)

    def model_end(self, response: ModelResponse) -> None:
        self.pause()

    def pause(self) -> None:
        """Stop the live display (before a prompt, a tool panel, or the end of a turn)."""
        if self._live is not None:
            shown = not self._live.transient
            if shown:
                self._live.update(self._reply())  # the whole reply, drawn once as the live view ends
            self._live.stop()
            self._live = None
            if shown and not self.console.is_terminal:
                self.console.line()  # off a terminal, Live leaves the last line open

    # tools

    def tool_start(self, call: ToolCall, name: str, arguments: Any) -> None:
        from rich.panel import Panel
        from rich.syntax import Syntax
        from rich.text import Text

        self.pause()
        shown, left = preview(_args_text(arguments), ARGS_PREVIEW, ARGS_LINES)
        body: Any = Syntax(shown, "json", word_wrap=True, background_color="default")
        if left:
            from rich.console import Group

            body = Group(body, Text(self._more(left, "arguments"), style="dim"))
        title = Text(visible(name), style="bold cyan")  # the model's spelling: never markup
        self.console.print(Panel(body, title=title, title_align="left", border_style="cyan"))

    def _more(self, left: int, what: str) -> str:
        session = self.session() if self.session is not None else None
        where = f"fermix logs --json --session {session}" if session else "fermix logs --json"
        return f"… {left} more characters; `{where}` shows the whole {what}"

    def tool_end(self, outcome: ToolOutcome) -> None:
        from rich.panel import Panel
        from rich.text import Text

        text, left = preview(outcome.output, RESULT_PREVIEW, RESULT_LINES)
        body = Text(text)  # plain text: a result is never markup, never highlighted
        if left:
            body.append("\n" + self._more(left, "result"), style="dim")
        if outcome.ok:
            title = Text(f"✓ {visible(outcome.name)}", style="green")
            style = "green"
        else:
            title = Text(f"✗ {visible(outcome.name)} ({visible(str(outcome.error_code))})", style="red")
            style = "red"
        self.console.print(Panel(body, title=title, title_align="left", border_style=style))
