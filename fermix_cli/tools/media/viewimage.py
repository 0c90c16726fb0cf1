"""view_image (seed 002): one local image and a prompt, sent only to the configured vision model.

Checks, in order, before any byte leaves: an absolute path; a vision model configured in
`[capabilities.tools.view_image.vision_model]` (never the active chat model); the sandbox and the
`absolute_paths` rule; a regular file within `max_image_bytes` whose signature matches its extension.
"""

from __future__ import annotations

from typing import Annotated, Any

from ...core.context import ToolContext
from ...core.errors import ExitClass, ToolError
from ...core.params import Field
from ...core.pathcanon import is_inside
from ...core.registry import Example, FailureMode, Hints, Params, ToolSpec, specs

MAX_PROMPT = 16_384
MAX_ANSWER_BYTES = 65_536
SETTING = "capabilities.tools.view_image"


class ViewImageParams(Params):
    path: Annotated[
        str,
        Field(
            min_length=1,
            max_length=4096,
            description="Absolute path of one local image (PNG, JPEG, GIF or WebP)",
        ),
    ]
    prompt: Annotated[
        str,
        Field(
            min_length=1,
            max_length=MAX_PROMPT,
            description="What to inspect: name the exact visual details you need",
        ),
    ]


def cap_utf8(text: str, limit: int) -> tuple[str, bool]:
    """`text` cut to at most `limit` UTF-8 bytes on a character boundary, and whether it was cut."""
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= limit:
        return text, False
    return data[:limit].decode("utf-8", "ignore"), True


def view_image(p: ViewImageParams, ctx: ToolContext) -> dict[str, Any]:
    from .localimage import read_image, resolve_image_path
    from .vision import ask_vision_model, resolve_target

    if not p.path.startswith("/"):
        raise ToolError(
            "path_not_absolute",
            f"view_image needs an absolute path; {p.path!r} is relative. Pass the full path (starting with /).",
            {"path": p.path},
            exit_class=ExitClass.BAD_INPUT,
        )
    if not p.prompt.strip():
        raise ToolError(
            "invalid_prompt", "prompt is blank; say what to look for in the image.", {"field": "prompt"}
        )
    section = ctx.config.capabilities.tools.view_image
    if section.vision_model is None:
        raise ToolError(
            "no_vision_model",
            "view_image has no vision model configured, and it never sends images to the chat model. Set "
            f"[{SETTING}.vision_model] provider and model (for example: fermix config set "
            f"{SETTING}.vision_model.provider openai).",
            {"setting": f"{SETTING}.vision_model"},
        )
    canonical = resolve_image_path(ctx, p.path, tool="view_image")
    cwd = ctx.sandbox.turn_cwd()
    if not section.absolute_paths and not is_inside(canonical, cwd):
        raise ToolError(
            "absolute_path_denied",
            f"{canonical} is outside the working directory {cwd}, and {SETTING}.absolute_paths is false. "
            "Use an image inside the working directory.",
            {"path": canonical, "cwd": cwd},
        )
    image = read_image(canonical, section.max_image_bytes, setting=f"{SETTING}.max_image_bytes")
    target = resolve_target(ctx, section.vision_model)
    answer = ask_vision_model(ctx, target, image.data, image.mime, p.prompt)
    text, truncated = cap_utf8(answer, MAX_ANSWER_BYTES)
    return {
        "path": canonical,
        "format": image.format,
        "bytes": len(image.data),
        "provider": target.provider,
        "model": target.model,
        "api": target.api,
        "text": text,
        "truncated": truncated,
    }


def render(result: dict[str, Any]) -> str:
    text: str = result["text"]
    return text + ("\n[answer truncated at 64 KiB]" if result["truncated"] else "")


TOOLS = specs(
    ToolSpec(
        name="view_image",
        category="coding",
        policy_class="read_only",
        owner_only=True,  # it reads the owner's files (reference: guests never see the owner-data reads)
        toolsets=frozenset({"coding"}),
        description=(
            "Inspect one local image through the configured vision model "
            "([capabilities.tools.view_image.vision_model]: an OpenAI Responses, Anthropic Messages or "
            "OpenAI-compatible provider). Needs an absolute `path` (png, jpg, jpeg, gif or webp whose bytes "
            "match the extension, at most max_image_bytes, 5 MiB by default) and a `prompt` naming the details "
            "to look at; answers with the model's text (at most 64 KiB). Never falls back to the chat model."
        ),
        params=ViewImageParams,
        handler=view_image,
        render=render,
        hints=Hints(read_only=True, open_world=True),
        when_to_use="Look at a screenshot, photo or diagram on disk when the answer depends on what it shows.",
        examples=(
            Example(
                {
                    "path": "/home/me/project/screenshot.png",
                    "prompt": "What error text is shown in the dialog?",
                },
                "read text off a screenshot",
            ),
        ),
        failure_modes=(
            FailureMode("no_vision_model", "no [capabilities.tools.view_image.vision_model] is configured"),
            FailureMode("path_not_absolute", "the path is relative"),
            FailureMode("unsupported_image_type", "the extension is not png, jpg, jpeg, gif or webp"),
            FailureMode("image_signature_mismatch", "the bytes are not the format the extension names"),
            FailureMode("image_too_large", "the file is over max_image_bytes"),
            FailureMode("not_found", "no file at that path"),
            FailureMode("absolute_path_denied", "outside the working directory with absolute_paths = false"),
            FailureMode("outside_root", "the image is outside the sandbox roots"),
            FailureMode("rate_limited", "the vision model's provider answered HTTP 429"),
        ),
    ),
)
