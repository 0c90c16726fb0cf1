"""send_attachment and react (seed 000 "Channel"): answering through the active channel's reply port.

Both are offered only where a port is active (`replyport.REPLY_PORT`); react only where the channel
has reactions, with its `emoji` narrowed to the channel's own set in the schema the model sees. In a
model loop each step may make one of these calls; another in the same step is refused before it
reaches the channel (`replyport.claim_channel_step`).
"""

from __future__ import annotations

import posixpath
import re
from typing import Annotated, Any, Literal

from ...core.context import ToolContext
from ...core.errors import ExitClass, ToolError
from ...core.params import Field
from ...core.registry import Example, FailureMode, Hints, Params, ToolSpec, specs
from ...core.replyport import (
    ENDS_TURN,
    claim_channel_step,
    refuse_sends,
    reply_port,
    require_port,
    supports_reactions,
)

ATTACHMENT_MAX = 50 * 1024 * 1024  # the smallest upload limit of the chat channels (Telegram's)
CAPTION_MAX = 1024
URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*://|data:)")
MIME = re.compile(r"^[a-z0-9][a-z0-9!#$&^_.+-]{0,126}/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}$")


class SendAttachmentParams(Params):
    path: Annotated[str, Field(min_length=1, max_length=4096, description="Local file path to send")]
    kind: Annotated[
        Literal["image", "document", "audio", "video", "voice"],
        Field(description="How the channel shows it: image, document, audio, video or voice"),
    ] = "document"
    caption: Annotated[str, Field(max_length=CAPTION_MAX, description="Optional caption")] | None = None
    filename: (
        Annotated[
            str,
            Field(min_length=1, max_length=255, description="Override the filename shown to the recipient"),
        ]
        | None
    ) = None
    mime_type: (
        Annotated[str, Field(min_length=3, max_length=255, description="Override the detected MIME type")]
        | None
    ) = None


def _looks_like_url(raw: str) -> bool:
    return bool(URL.match(raw)) and not raw.startswith("/")


def _read_attachment(ctx: ToolContext, raw: str) -> tuple[str, bytes]:
    from .localimage import read_regular_file

    canonical = ctx.sandbox.read_path(ctx.sandbox.anchor(raw), tool="send_attachment")
    data = read_regular_file(
        canonical, ATTACHMENT_MAX, what="send one file", too_large=lambda size: _too_large(canonical, size)
    )
    return canonical, data


def _too_large(path: str, size: int) -> ToolError:
    return ToolError(
        "attachment_too_large",
        f"{path} is {size} bytes; attachments are limited to 50 MiB. Send a smaller file or a link.",
        {"path": path, "bytes": size, "max_bytes": ATTACHMENT_MAX},
    )


def send_attachment(p: SendAttachmentParams, ctx: ToolContext) -> dict[str, Any]:
    import mimetypes

    from ...core.imagefmt import MIME_TYPES, sniff

    if _looks_like_url(p.path):
        raise ToolError(
            "url_refused",
            "send_attachment sends local files only; put the link in your text reply instead.",
            {"path": p.path},
            exit_class=ExitClass.BAD_INPUT,
        )
    if p.filename is not None and ("/" in p.filename or "\x00" in p.filename or p.filename in (".", "..")):
        raise ToolError(
            "invalid_filename", "filename is a plain file name, without '/'.", {"filename": p.filename}
        )
    if p.mime_type is not None and not MIME.match(p.mime_type.lower()):
        raise ToolError(
            "invalid_mime_type",
            f"{p.mime_type!r} is not a MIME type such as image/png.",
            {"mime_type": p.mime_type},
        )
    port = require_port(ctx, "send_attachment")
    canonical, data = _read_attachment(ctx, p.path)
    filename = p.filename or posixpath.basename(canonical)
    detected = sniff(data[:12])
    if p.kind == "image" and detected is None:
        raise ToolError(
            "not_an_image",
            f'{canonical} is not a PNG, JPEG, GIF or WebP image; send it with kind "document".',
            {"path": canonical},
        )
    mime = (p.mime_type or "").lower() or (
        MIME_TYPES[detected] if detected else mimetypes.guess_type(filename)[0] or "application/octet-stream"
    )
    claim_channel_step(ctx, "send_attachment")
    delivered = port.send_attachment(
        data, kind=p.kind, caption=p.caption, filename=filename, mime_type=mime, source=canonical
    )
    return {
        "sent": True,
        "platform": port.platform,
        "path": canonical,
        "filename": filename,
        "kind": p.kind,
        "mime_type": mime,
        "bytes": len(data),
        **delivered,
    }


class ReactParams(Params):
    emoji: Annotated[
        str,
        Field(
            min_length=1, max_length=16, description="A single emoji to react with, chosen to fit the message"
        ),
    ]


def react(p: ReactParams, ctx: ToolContext) -> dict[str, Any]:
    port = require_port(ctx, "react")
    allowed = port.reactions
    if not allowed:
        raise ToolError(
            "reactions_unsupported",
            f"the {port.platform} channel has no message reactions; reply with a short text instead.",
            {"platform": port.platform},
        )
    if p.emoji not in allowed:
        raise ToolError(
            "emoji_not_allowed",
            f"{p.emoji!r} is not a reaction {port.platform} accepts; choose one of: {' '.join(sorted(allowed))}",
            {"emoji": p.emoji, "allowed": sorted(allowed)},
            exit_class=ExitClass.BAD_INPUT,
        )
    claim_channel_step(ctx, "react")
    delivered = port.react(p.emoji)
    ctx.extras[ENDS_TURN] = True
    return {"reacted": p.emoji, "platform": port.platform, **delivered}


def _narrow_emoji(ctx: ToolContext, schema: dict[str, Any]) -> dict[str, Any]:
    port = reply_port(ctx)
    if port is not None and port.reactions:
        schema["properties"]["emoji"]["enum"] = sorted(port.reactions)
    return schema


def _has_port(ctx: ToolContext) -> bool:
    return reply_port(ctx) is not None


TOOLS = specs(
    ToolSpec(
        name="send_attachment",
        category="channel",
        policy_class="read_only",
        owner_only=True,  # it reads the owner's files (reference: guests never see the owner-data reads)
        description=(
            "Send a local file through the active channel: a photo or document in Telegram, a copy in the "
            "outbox (with its path printed) in the terminal, and in a scheduled job that delivers to a chat "
            "or channel, to the job's delivery target (at most 16 per run). URL paths are refused; send "
            "links as text. One channel call (this or react) per step."
        ),
        params=SendAttachmentParams,
        handler=send_attachment,
        available=_has_port,
        # A job that delivers nowhere (local, none) does not offer it, and says why when it is called.
        gate=refuse_sends,
        gate_first=True,
        hints=Hints(open_world=True),
        when_to_use="The owner asked for a file you have on disk (a report, an image you made).",
        examples=(Example({"path": "report.pdf", "caption": "This week's report"}, "send a document"),),
        failure_modes=(
            FailureMode(
                "no_active_channel", "no conversation channel is active (a subagent, a plain tool call)"
            ),
            FailureMode(
                "no_delivery_channel", "a scheduled job whose delivery is local or none sends no files"
            ),
            FailureMode("attachments_unsupported", "the job's delivery target carries text only (a webhook)"),
            FailureMode("attachment_limit", "a scheduled run already made its 16 sends"),
            FailureMode("url_refused", "the path is a URL"),
            FailureMode("not_found", "no file at that path"),
            FailureMode("attachment_too_large", "the file is over 50 MiB"),
            FailureMode("not_an_image", "kind image for a file that is not PNG, JPEG, GIF or WebP"),
            FailureMode("outside_root", "the file is outside the sandbox roots"),
            FailureMode("delivery_failed", "the channel could not deliver it"),
            FailureMode("channel_call_limit", "this model step already made its one channel call"),
        ),
    ),
    ToolSpec(
        name="react",
        category="channel",
        policy_class="read_only",
        description=(
            "React to the person's current message with one fitting emoji instead of a text reply, for pure "
            "acknowledgements (ok, thanks). A reaction with no text ends your turn. One channel call (this "
            "or send_attachment) per step."
        ),
        params=ReactParams,
        handler=react,
        available=supports_reactions,
        live_schema=_narrow_emoji,
        hints=Hints(open_world=True),
        when_to_use="The message needs only an acknowledgement, and the channel shows reactions.",
        examples=(Example({"emoji": "👍"}, "acknowledge"),),
        failure_modes=(
            FailureMode("no_active_channel", "no conversation channel is active"),
            FailureMode("reactions_unsupported", "the channel has no reactions"),
            FailureMode("emoji_not_allowed", "the emoji is not in the channel's allowed set"),
            FailureMode("channel_call_limit", "this model step already made its one channel call"),
        ),
    ),
)
