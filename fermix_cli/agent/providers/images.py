"""Images that tool results carry (screenshots), as providers put them on the wire.

Only the newest MAX_INLINE images of a request travel as image data; older ones, images a model cannot
take (`vision = false`), and files that are gone or too large become one text line naming the file, so
the model still knows where the picture is.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...core.imagefmt import load_base64
from ...core.records import Record

if TYPE_CHECKING:
    from ..messages import Message
    from . import ProviderChoice

MAX_INLINE = 3
MAX_IMAGE_BYTES = 5 * 1024 * 1024  # Anthropic's per-image limit; OpenAI's is larger


class InlineImage(Record, frozen=True):
    path: str
    media_type: str
    data: str  # base64

    @property
    def data_url(self) -> str:
        return f"data:{self.media_type};base64,{self.data}"


def takes_images(choice: ProviderChoice) -> bool:
    """The `vision` flag, else: Anthropic and OpenAI's own API yes, other OpenAI-compatible servers no."""
    if choice.settings.vision is not None:
        return choice.settings.vision
    return choice.kind == "anthropic" or (choice.kind == "openai" and choice.is_official)


def load(path: str) -> InlineImage | str:
    """The image ready to send, or why it cannot be sent."""
    loaded = load_base64(path, MAX_IMAGE_BYTES)
    if isinstance(loaded, str):
        return loaded
    return InlineImage(path, *loaded)


def inline_set(messages: list[Message], vision: bool) -> set[tuple[int, int]]:
    """(message index, image index) of the images that travel as data: the newest MAX_INLINE."""
    if not vision:
        return set()
    found = [(i, j) for i, m in enumerate(messages) for j in range(len(m.images))]
    return set(found[-MAX_INLINE:])


def fallback_line(path: str, why: str) -> str:
    return f"[image file: {path} — {why}]"


def split_images(
    messages: list[Message], index: int, inline: set[tuple[int, int]], vision: bool
) -> tuple[list[InlineImage], list[str]]:
    """The images of message `index` to send, and text lines for the others."""
    sent: list[InlineImage] = []
    lines: list[str] = []
    for j, path in enumerate(messages[index].images):
        if (index, j) not in inline:
            why = "not sent: this model takes no images" if not vision else "an older image, not sent again"
            lines.append(fallback_line(path, why))
            continue
        loaded = load(path)
        if isinstance(loaded, str):
            lines.append(fallback_line(path, f"not sent: {loaded}"))
        else:
            sent.append(loaded)
    return sent, lines
