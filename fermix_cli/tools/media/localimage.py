"""Reading one local image the way the media tools allow: sandbox first, then an open that cannot be fooled.

The path is canonicalised and judged by the sandbox; the file is then opened without following a final
symlink swapped in after the check, must be a regular file, must fit the caller's byte cap, and its
bytes must carry the signature its (case-insensitive) extension promises.
"""

from __future__ import annotations

import os
import posixpath
import stat
from collections.abc import Callable
from typing import TYPE_CHECKING

from ...core.errors import ToolError, world_error
from ...core.imagefmt import EXTENSIONS, HEADER_BYTES, MIME_TYPES, ImageFormat, extension_format, sniff
from ...core.records import Record

if TYPE_CHECKING:
    from ...core.context import ToolContext

SUPPORTED = "png, jpg, jpeg, gif, webp"


class LocalImage(Record, frozen=True):
    """An image read from disk: canonical path, format, MIME type and bytes."""

    path: str
    format: ImageFormat
    mime: str
    data: bytes


def check_extension(path: str) -> ImageFormat:
    fmt = extension_format(posixpath.basename(path))
    if fmt is None:
        raise ToolError(
            "unsupported_image_type",
            f"{path} is not a supported image file name; supported extensions: {SUPPORTED} (any case).",
            {"path": path, "supported": sorted(EXTENSIONS)},
        )
    return fmt


def read_regular_file(
    canonical: str, max_bytes: int, *, what: str, too_large: Callable[[int], ToolError]
) -> bytes:
    """The bytes of the regular file at `canonical` (already through the sandbox), at most `max_bytes`.

    Opened without following a symlink swapped in after the check; `too_large(size)` is raised for a
    file over the cap, checked before reading and again after (a file that grew meanwhile).
    """
    try:
        fd = os.open(canonical, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise ToolError("not_found", f"{canonical} does not exist.", {"path": canonical}) from None
    except OSError as e:
        raise world_error(
            "invalid_path", f"Cannot open {canonical}: {e.strerror or e}", {"path": canonical}
        ) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise world_error(
                "not_regular_file", f"{canonical} is not a regular file; {what}.", {"path": canonical}
            )
        if st.st_size > max_bytes:
            raise too_large(st.st_size)
        chunks: list[bytes] = []
        remaining = max_bytes + 1  # one byte more than allowed tells a file that grew meanwhile
        while remaining > 0:
            chunk = os.read(fd, min(remaining, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > max_bytes:
        raise too_large(len(data))
    return data


def read_image(canonical: str, max_bytes: int, *, setting: str) -> LocalImage:
    """Open, check and read the image at `canonical` (already through the sandbox)."""
    expected = check_extension(canonical)
    data = read_regular_file(
        canonical,
        max_bytes,
        what="give the path of one image file",
        too_large=lambda size: _too_large(canonical, size, max_bytes, setting),
    )
    found = sniff(data[:HEADER_BYTES])
    if found != expected:
        what = f"{found.upper()} data" if found else "no PNG, JPEG, GIF or WebP signature"
        raise ToolError(
            "image_signature_mismatch",
            f"{canonical} is named as {expected.upper()} but its bytes carry {what}. Rename the file to its real "
            "type, or give a real image.",
            {"path": canonical, "extension_format": expected, "detected_format": found},
        )
    return LocalImage(canonical, found, MIME_TYPES[found], data)


def _too_large(path: str, size: int, cap: int, setting: str) -> ToolError:
    return ToolError(
        "image_too_large",
        f"{path} is {size} bytes, over the {cap}-byte limit ({setting}). Use a smaller image or raise the limit.",
        {"path": path, "bytes": size, "max_image_bytes": cap},
    )


def resolve_image_path(ctx: ToolContext, raw: str, *, tool: str) -> str:
    """The canonical path of a caller's image path, judged by the sandbox (symlinks followed)."""
    return ctx.sandbox.read_path(ctx.sandbox.anchor(raw), tool=tool)
