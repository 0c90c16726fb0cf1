"""Raster image formats by their bytes: PNG, JPEG, GIF and WebP, and the file names that go with them."""

from __future__ import annotations

from typing import Literal

ImageFormat = Literal["png", "jpeg", "gif", "webp"]

MIME_TYPES: dict[ImageFormat, str] = {
    "png": "image/png",
    "jpeg": "image/jpeg",
    "gif": "image/gif",
    "webp": "image/webp",
}
# Lower-cased file extensions (without the dot) and the format each one promises.
EXTENSIONS: dict[str, ImageFormat] = {
    "png": "png",
    "jpg": "jpeg",
    "jpeg": "jpeg",
    "gif": "gif",
    "webp": "webp",
}
SUFFIX: dict[ImageFormat, str] = {"png": ".png", "jpeg": ".jpg", "gif": ".gif", "webp": ".webp"}
# Enough leading bytes to tell the four formats apart.
HEADER_BYTES = 12


def sniff(head: bytes) -> ImageFormat | None:
    """The format the first bytes of a file announce, or None when they are none of the four."""
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "png"
    if head.startswith(b"\xff\xd8\xff"):
        return "jpeg"
    if head.startswith((b"GIF87a", b"GIF89a")):
        return "gif"
    if len(head) >= 12 and head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "webp"
    return None


def extension_format(name: str) -> ImageFormat | None:
    """The format a file name's extension promises (case-insensitive), or None for any other name."""
    dot = name.rfind(".")
    if dot <= 0 or "/" in name[dot:]:
        return None
    return EXTENSIONS.get(name[dot + 1 :].lower())


def load_base64(path: str, max_bytes: int) -> tuple[str, str] | str:
    """(MIME type, base64 data) of the image file at `path`, or why it cannot be sent as one.

    For images that travel inline (to a model, to an MCP client): at most `max_bytes`, one of the four
    formats by its bytes, whatever its name says.
    """
    import base64

    try:
        with open(path, "rb") as f:
            raw = f.read(max_bytes + 1)
    except OSError as e:
        return f"unreadable ({e.strerror or e})"
    if len(raw) > max_bytes:
        return "too large to send"
    fmt = sniff(raw[:HEADER_BYTES])
    if fmt is None:
        return "not a PNG, JPEG, GIF or WebP image"
    return MIME_TYPES[fmt], base64.b64encode(raw).decode("ascii")
