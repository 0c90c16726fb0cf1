"""Rich rendering of a run for `fermix agent`: a spinner while the model works, live markdown while it
streams, and a panel per tool call. Rendering only; the loop knows nothing about it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console
    from rich.live import Live

    from ..agent.messages import ModelResponse, ToolCall
    from ..agent.transcripts import ToolOutcome

RESULT_PREVIEW = 1200

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


def _args_text(arguments: Any) -> str:
    if isinstance(arguments, str):
        from ..agent.messages import valid_unicode

        return valid_unicode(arguments)
    from ..core.jsonin import json_text

    return json_text(arguments, indent=2)


class RichObserver:
    """A LoopObserver drawing on a rich Console."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self._live: Live | None = None
        self._text: list[str] = []

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
        from rich.markdown import Markdown

        self._text.append(delta)
        if self._live is not None:
            self._live.transient = False
            self._live.update(Markdown("".join(self._text)))

    def model_end(self, response: ModelResponse) -> None:
        self.pause()

    def pause(self) -> None:
        """Stop the live display (before a prompt, a tool panel, or the end of a turn)."""
        if self._live is not None:
            shown = not self._live.transient
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
        body = Syntax(_args_text(arguments), "json", word_wrap=True, background_color="default")
        title = Text(visible(name), style="bold cyan")  # the model's spelling: never markup
        self.console.print(Panel(body, title=title, title_align="left", border_style="cyan"))

    def tool_end(self, outcome: ToolOutcome) -> None:
        from rich.panel import Panel
        from rich.text import Text

        text = (
            outcome.output if len(outcome.output) <= RESULT_PREVIEW else outcome.output[:RESULT_PREVIEW] + "…"
        )
        if outcome.ok:
            title = Text(f"✓ {visible(outcome.name)}", style="green")
            style = "green"
        else:
            title = Text(f"✗ {visible(outcome.name)} ({visible(str(outcome.error_code))})", style="red")
            style = "red"
        self.console.print(Panel(Text(text), title=title, title_align="left", border_style=style))
