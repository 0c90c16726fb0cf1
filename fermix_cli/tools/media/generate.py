"""generate_image (seed 000 "Media"): one configured backend, generate or edit, the result in media/.

The file is written under the media directory with a new name (never replacing one) and, when a
conversation channel is active, sent to it as an image; otherwise the path is the whole answer.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from ...core.context import ToolContext
from ...core.errors import ExitClass, ToolError
from ...core.params import Field
from ...core.registry import Example, FailureMode, Hints, Params, ToolSpec, specs

SETTING = "[fermix_core.tools.generate_image]"
INPUT_MAX = 20 * 1024 * 1024
INBOUND = re.compile(r"^inbound:(last|[1-9][0-9]{0,3})$")


class GenerateImageParams(Params):
    prompt: Annotated[
        str,
        Field(
            min_length=1,
            max_length=32_000,
            description="What to create, or for an edit, how to change the source image",
        ),
    ]
    operation: Annotated[
        Literal["generate", "edit"],
        Field(description="generate a new image (default) or edit an existing one"),
    ] = "generate"
    input_image: (
        Annotated[
            str,
            Field(
                min_length=1,
                max_length=4096,
                description=(
                    "For edit only: sandbox path to the source image, or inbound:last / inbound:N for an image "
                    "sent in this turn's chat"
                ),
            ),
        ]
        | None
    ) = None
    mask: (
        Annotated[
            str,
            Field(
                min_length=1,
                max_length=4096,
                description="Sandbox path to a PNG-alpha mask (OpenAI backend only); only its transparent regions are edited",
            ),
        ]
        | None
    ) = None
    size: (
        Annotated[
            str,
            Field(
                pattern=r"^[1-9][0-9]{1,4}x[1-9][0-9]{1,4}$|^auto$",
                description="Output size (e.g. 1024x1024); defaults to the configured size",
            ),
        ]
        | None
    ) = None
    model: (
        Annotated[str, Field(min_length=1, max_length=200, description="Model override for this call")] | None
    ) = None


def _unsupported(backend: str, what: str) -> ToolError:
    return ToolError(
        "unsupported_operation",
        f"the {backend} image backend does not support {what}.",
        {"backend": backend, "operation": what},
        exit_class=ExitClass.BAD_INPUT,
    )


def _source_image(ctx: ToolContext, ref: str, *, what: str) -> Any:
    from ...core.replyport import inbound_files
    from .imagebackends import ImageInput
    from .localimage import read_image, resolve_image_path

    match = INBOUND.match(ref)
    if match:
        images = [f for f in inbound_files(ctx) if f.kind == "image"]
        if not images:
            raise ToolError(
                "no_inbound_image",
                f"{ref}: no image was sent with this turn's message; ask for one or give a file path.",
                {"input_image": ref},
            )
        index = len(images) if match.group(1) == "last" else int(match.group(1))
        if index > len(images):
            raise ToolError(
                "no_inbound_image",
                f"{ref}: this turn brought {len(images)} image(s); use inbound:1 to inbound:{len(images)}.",
                {"input_image": ref, "count": len(images)},
            )
        path = images[index - 1].path
    else:
        path = resolve_image_path(ctx, ref, tool="generate_image")
    image = read_image(path, INPUT_MAX, setting=f"the {what} limit of 20 MiB")
    return ImageInput(image.data, image.mime, f"{what}{image.path[image.path.rfind('.') :].lower()}")


def generate_image(p: GenerateImageParams, ctx: ToolContext) -> dict[str, Any]:
    from ...core.imagefmt import MIME_TYPES, SUFFIX, sniff
    from ...core.newfile import write_new_file
    from ...core.replyport import reply_port
    from .imagebackends import CAPABILITIES, MODELS, RUNNERS, ImageRequest

    cfg = ctx.config.fermix_core.tools.generate_image
    backend = cfg.backend
    if backend is None:
        raise ToolError(
            "image_generation_not_configured",
            f"image generation is not set up: choose a backend in {SETTING} backend (openai, openai_codex, "
            "xai or google) with its key, e.g. fermix config set fermix_core.tools.generate_image.backend openai.",
            {"setting": "fermix_core.tools.generate_image.backend"},
        )
    if not p.prompt.strip():
        raise ToolError("invalid_prompt", "prompt is blank; describe the image.", {"field": "prompt"})
    model = p.model or cfg.model or MODELS[backend][0]
    if model not in MODELS[backend]:
        raise ToolError(
            "unsupported_model",
            f"{model} is not a {backend} image model fermix offers; choose one of: {', '.join(MODELS[backend])}.",
            {"backend": backend, "model": model, "models": list(MODELS[backend])},
            exit_class=ExitClass.BAD_INPUT,
        )
    if p.operation not in CAPABILITIES[backend]:
        raise _unsupported(backend, p.operation)
    if p.mask is not None and "mask" not in CAPABILITIES[backend]:
        raise _unsupported(backend, "mask")
    if p.operation == "generate" and (p.input_image is not None or p.mask is not None):
        raise ToolError(
            "invalid_input",
            "input_image and mask belong to operation edit; set operation to edit or leave them out.",
            {"operation": p.operation},
        )
    if p.operation == "edit" and p.input_image is None:
        raise ToolError("missing_input_image", "edit needs input_image: a sandbox path or inbound:last.", {})
    image = _source_image(ctx, p.input_image, what="image") if p.input_image is not None else None
    mask = _source_image(ctx, p.mask, what="mask") if p.mask is not None else None
    if mask is not None and mask.mime != "image/png":
        raise ToolError("invalid_mask", "the mask must be a PNG with an alpha channel.", {"mask": p.mask})
    request = ImageRequest(
        backend=backend,
        model=model,
        prompt=p.prompt,
        size=p.size or cfg.size,
        operation=p.operation,
        image=image,
        mask=mask,
    )
    generated = RUNNERS[backend](ctx, cfg, request)
    fmt = sniff(generated.data[:12])
    if fmt is None:
        raise ToolError(
            "provider_error",
            f"the {backend} image backend sent data that is not a PNG, JPEG, GIF or WebP image",
            {"backend": backend},
        )
    folder = ctx.paths.ensure_dir(ctx.paths.media)
    stamp = ctx.now().strftime("%Y%m%d-%H%M%S")
    path = write_new_file(folder, f"image-{stamp}{SUFFIX[fmt]}", generated.data)
    result: dict[str, Any] = {
        "path": str(path),
        "backend": backend,
        "model": model,
        "operation": p.operation,
        "format": fmt,
        "bytes": len(generated.data),
        "sent": False,
    }
    if generated.revised_prompt:
        result["revised_prompt"] = generated.revised_prompt
    port = reply_port(ctx)
    if port is not None:
        try:
            delivered = port.send_attachment(
                generated.data,
                kind="image",
                caption=None,
                filename=path.name,
                mime_type=MIME_TYPES[fmt],
                source=str(path),
            )
        except ToolError as e:  # the image exists; say it did not arrive rather than fail the call
            result["delivery_error"] = e.to_dict()
        else:
            result.update(sent=True, platform=port.platform, delivery=delivered)
    return result


def render(result: dict[str, Any]) -> str:
    where = f"sent to the {result['platform']} chat and saved" if result["sent"] else "saved"
    text = f"Image {where} at {result['path']} ({result['backend']}/{result['model']})."
    if "delivery_error" in result:
        text += f" Sending it failed: {result['delivery_error']['message']}"
    return text


TOOLS = specs(
    ToolSpec(
        name="generate_image",
        category="media",
        policy_class="external_api",
        description=(
            "Create or edit a raster image (photo, illustration, render) from a text prompt with the backend in "
            "[fermix_core.tools.generate_image] (openai, openai_codex, xai or google; no fallback between them). "
            "The file goes to the media folder (never overwriting) and, in a chat, is sent there too. Edit takes "
            "input_image as a sandbox path or inbound:last / inbound:N (images sent this turn); mask is OpenAI "
            "only. Not for diagrams, charts, code assets or live data."
        ),
        params=GenerateImageParams,
        handler=generate_image,
        render=render,
        hints=Hints(open_world=True),
        when_to_use="The owner asks for a picture, or to change a picture they sent or you made.",
        examples=(
            Example({"prompt": "a watercolour fox in the snow"}, "generate"),
            Example(
                {"prompt": "make the sky purple", "operation": "edit", "input_image": "inbound:last"},
                "edit the image just sent in chat",
            ),
        ),
        failure_modes=(
            FailureMode(
                "image_generation_not_configured", "no backend is set in [fermix_core.tools.generate_image]"
            ),
            FailureMode("image_backend_not_configured", "the backend has no API key"),
            FailureMode("codex_login_missing", "openai_codex without a ChatGPT/Codex login"),
            FailureMode(
                "codex_login_expired", "the ChatGPT/Codex login could not be renewed; codex login again"
            ),
            FailureMode("codex_not_entitled", "the ChatGPT plan does not include image generation"),
            FailureMode("unsupported_operation", "edit or mask on a backend that does not declare it"),
            FailureMode("unsupported_model", "a model outside the backend's curated list"),
            FailureMode("prompt_refused", "the backend refused the prompt (content policy)"),
            FailureMode("rate_limited", "the backend answered HTTP 429"),
            FailureMode("no_inbound_image", "inbound:last / inbound:N with no such image this turn"),
            FailureMode("image_signature_mismatch", "the source image's bytes do not match its extension"),
        ),
    ),
)
