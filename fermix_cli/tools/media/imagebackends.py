"""generate_image's backends, each speaking its vendor's wire format as documented.

- `openai`: Images API. `POST {openai_url}/images/generations` (JSON) and `POST {openai_url}/images/edits`
  (multipart: `image`, optional `mask`, `prompt`, `model`, `size`); the answer's `data[0].b64_json`.
- `xai`: `POST {xai_url}/images/generations` and `POST {xai_url}/images/edits`, both JSON; an edit names
  its source as `image: {url: data-URL, type: "image_url"}`; `response_format: "b64_json"`.
- `google`: Gemini `POST {google_url}/models/{model}:generateContent` with `x-goog-api-key`; text and
  `inline_data` parts in, an `inlineData` image part out; a blocked prompt is `promptFeedback.blockReason`
  or a safety `finishReason`.
- `openai_codex`: in codexbackend.py, which names its sources.

Sources: OpenAI Images API reference (https://platform.openai.com/docs/api-reference/images: gpt-image
models always answer `b64_json` and take no `response_format`; edits are multipart with `image`, `mask`);
xAI (https://docs.x.ai/developers/model-capabilities/images and .../images/editing: JSON only, the OpenAI
SDK's multipart edit is not accepted; `image.url` a public URL or a base64 data URI; `response_format`
defaults to `url`); Gemini image generation (https://ai.google.dev/gemini-api/docs/image-generation:
`responseModalities`, `imageConfig.aspectRatio`, `inlineData` parts).
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ...core.errors import ToolError
from ...core.records import Record

if TYPE_CHECKING:
    from ...core.context import ToolContext
    from .config import GenerateImageConfig

# Curated model lists: the first is the default (seed 000, "Media").
MODELS: dict[str, tuple[str, ...]] = {
    "openai": ("gpt-image-2", "gpt-image-1.5"),
    "openai_codex": ("gpt-image-2",),
    "xai": ("grok-imagine-image-2.0", "grok-imagine-image-quality"),
    "google": ("gemini-3.1-flash-image", "gemini-3-pro-image", "gemini-2.5-flash-image"),
}
CAPABILITIES: dict[str, frozenset[str]] = {
    "openai": frozenset({"generate", "edit", "mask"}),
    "openai_codex": frozenset({"generate", "edit"}),
    "xai": frozenset({"generate", "edit"}),
    "google": frozenset({"generate", "edit"}),
}
KEY_ENV: dict[str, tuple[str, ...]] = {
    "openai": ("OPENAI_API_KEY",),
    "xai": ("XAI_API_KEY",),
    "google": ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
}
# Aspect ratios xAI and Gemini take instead of a pixel size.
RATIOS = ("1:1", "2:3", "3:2", "3:4", "4:3", "4:5", "5:4", "9:16", "16:9", "21:9")
REFUSAL_MARKERS = ("moderation", "content_policy", "safety", "refus", "prohibited", "blocked")
GOOGLE_REFUSED = frozenset(
    {
        "SAFETY",
        "PROHIBITED_CONTENT",
        "IMAGE_SAFETY",
        "BLOCKLIST",
        "SPII",
        "RECITATION",
        "IMAGE_PROHIBITED_CONTENT",
    }
)
CLIENT_LIMITS: dict[str, Any] = {"connect_timeout": 10.0, "max_body": 96 * 1024 * 1024}


class ImageInput(Record, frozen=True):
    data: bytes
    mime: str
    name: str


class ImageRequest(Record, frozen=True):
    backend: str
    model: str
    prompt: str
    size: str
    operation: str  # generate | edit
    image: ImageInput | None = None
    mask: ImageInput | None = None


class Generated(Record, frozen=True):
    data: bytes
    revised_prompt: str | None = None


def aspect_ratio(size: str) -> str | None:
    """`1024x1536` as `2:3` when that is one of the ratios xAI and Gemini accept; None for `auto`."""
    if size == "auto":
        return None
    w, h = (int(x) for x in size.split("x"))
    for ratio in RATIOS:
        a, b = (int(x) for x in ratio.split(":"))
        if w * b == h * a:
            return ratio
    raise ToolError(
        "unsupported_size",
        f"size {size} is no aspect ratio this backend takes; use one of {', '.join(RATIOS)} (e.g. 1024x1024).",
        {"size": size, "ratios": list(RATIOS)},
    )


def api_key(cfg: GenerateImageConfig, backend: str, env: Mapping[str, str] | None = None) -> str:
    env = os.environ if env is None else env
    configured = getattr(cfg, f"{backend}_api_key")
    if configured:
        return str(configured)
    for name in KEY_ENV[backend]:
        value = env.get(name, "").strip()
        if value:
            return value
    raise ToolError(
        "image_backend_not_configured",
        f"the {backend} image backend has no API key: set [fermix_core.tools.generate_image] {backend}_api_key "
        f"or export {KEY_ENV[backend][0]}. There is no fallback to another backend.",
        {"backend": backend},
    )


def _server_message(raw: bytes) -> tuple[str, str]:
    """(error code or type, message) from a JSON error body, as far as it has them."""
    try:
        data = json.loads(raw[:4000])
    except (ValueError, RecursionError):  # not JSON, or nested deeper than the parser follows
        return "", raw[:200].decode("utf-8", "replace").strip()
    err = data.get("error") if isinstance(data, dict) else None
    if isinstance(err, dict):
        code = str(err.get("code") or err.get("status") or err.get("type") or "")
        return code, str(err.get("message") or "")[:500]
    if isinstance(err, str):
        return "", err[:500]
    return "", ""


def http_failure(backend: str, status: int, raw: bytes, headers: Mapping[str, str]) -> ToolError:
    code, message = _server_message(raw)
    details: dict[str, Any] = {"backend": backend, "status": status}
    said = message or f"HTTP {status}"
    if status == 429:
        retry = (headers.get("retry-after") or "").strip()
        if retry.isdigit():
            details["retry_after"] = int(retry)
        return ToolError(
            "rate_limited",
            f"the {backend} image backend is rate limiting requests ({said}); try again later.",
            details,
        )
    if status in (401, 403) and not any(m in (code + said).lower() for m in REFUSAL_MARKERS):
        return ToolError(
            "auth_failed",
            f"the {backend} image backend refused the credentials (HTTP {status}: {said}); check the API key "
            "or login in [fermix_core.tools.generate_image].",
            details,
        )
    if status in (400, 403, 422) and any(m in (code + " " + said).lower() for m in REFUSAL_MARKERS):
        details["reason"] = code or said
        return ToolError(
            "prompt_refused",
            f"the {backend} image backend refused this prompt ({said}). Rephrase the request; nothing was created.",
            details,
        )
    return ToolError("provider_error", f"the {backend} image backend answered HTTP {status}: {said}", details)


def _decode(backend: str, b64: Any) -> bytes:
    if not isinstance(b64, str) or not b64:
        raise ToolError(
            "provider_error", f"the {backend} image backend answered without an image", {"backend": backend}
        )
    if b64.startswith("data:") and ";base64," in b64[:100]:  # xAI's documented examples carry a data URI
        b64 = b64.split(";base64,", 1)[1]
    try:
        return base64.b64decode(b64, validate=True)
    except ValueError:
        raise ToolError(
            "provider_error",
            f"the {backend} image backend sent image data that is not base64",
            {"backend": backend},
        ) from None


def _post(ctx: ToolContext, cfg: GenerateImageConfig, backend: str, url: str, **options: Any) -> Any:
    limits = {**CLIENT_LIMITS, "read_timeout": cfg.timeout_seconds, "total_timeout": cfg.timeout_seconds + 60}
    with ctx.http_client(**limits) as client:
        response = client.post(url, **options)
    if response.status_code >= 400:
        raise http_failure(backend, response.status_code, response.content, response.headers)
    try:
        return json.loads(response.content)
    except (ValueError, RecursionError):  # not JSON, or nested deeper than the parser follows
        raise ToolError(
            "provider_error",
            f"the {backend} image backend answered with something that is not JSON",
            {"backend": backend},
        ) from None


def _data_url(image: ImageInput) -> str:
    return f"data:{image.mime};base64,{base64.b64encode(image.data).decode('ascii')}"


def _first_dict(rows: Any) -> dict[str, Any]:
    """The first item of a JSON list when it is an object; else an empty one (a malformed answer)."""
    return rows[0] if isinstance(rows, list) and rows and isinstance(rows[0], dict) else {}


def _images_answer(backend: str, data: Any) -> Generated:
    rows = data.get("data") if isinstance(data, dict) else None
    first = _first_dict(rows)
    revised = first.get("revised_prompt")
    return Generated(_decode(backend, first.get("b64_json")), revised if isinstance(revised, str) else None)


def run_openai(ctx: ToolContext, cfg: GenerateImageConfig, req: ImageRequest) -> Generated:
    import httpx

    base = cfg.openai_url.rstrip("/")
    headers = {"authorization": f"Bearer {api_key(cfg, 'openai')}"}
    if req.operation == "generate":
        body: dict[str, Any] = {"model": req.model, "prompt": req.prompt, "n": 1, "size": req.size}
        return _images_answer(
            "openai", _post(ctx, cfg, "openai", f"{base}/images/generations", json=body, headers=headers)
        )
    assert req.image is not None
    fields = {"model": req.model, "prompt": req.prompt, "n": "1", "size": req.size}
    files = [("image", (req.image.name, req.image.data, req.image.mime))]
    if req.mask is not None:
        files.append(("mask", (req.mask.name, req.mask.data, req.mask.mime)))
    # httpx writes the multipart body; the guarded client sends it.
    built = httpx.Request("POST", "http://multipart.invalid/", data=fields, files=files)
    body_bytes = built.read()
    headers["content-type"] = built.headers["content-type"]
    data = _post(ctx, cfg, "openai", f"{base}/images/edits", content=body_bytes, headers=headers)
    return _images_answer("openai", data)


def run_xai(ctx: ToolContext, cfg: GenerateImageConfig, req: ImageRequest) -> Generated:
    base = cfg.xai_url.rstrip("/")
    headers = {"authorization": f"Bearer {api_key(cfg, 'xai')}"}
    body: dict[str, Any] = {"model": req.model, "prompt": req.prompt, "n": 1, "response_format": "b64_json"}
    ratio = aspect_ratio(req.size)
    if ratio is not None:
        body["aspect_ratio"] = ratio
    if req.operation == "edit":
        assert req.image is not None
        body["image"] = {"url": _data_url(req.image), "type": "image_url"}
        url = f"{base}/images/edits"
    else:
        url = f"{base}/images/generations"
    return _images_answer("xai", _post(ctx, cfg, "xai", url, json=body, headers=headers))


def run_google(ctx: ToolContext, cfg: GenerateImageConfig, req: ImageRequest) -> Generated:
    base = cfg.google_url.rstrip("/")
    headers = {"x-goog-api-key": api_key(cfg, "google")}
    parts: list[dict[str, Any]] = [{"text": req.prompt}]
    if req.image is not None:
        parts.append(
            {"inline_data": {"mime_type": req.image.mime, "data": base64.b64encode(req.image.data).decode()}}
        )
    generation: dict[str, Any] = {"responseModalities": ["TEXT", "IMAGE"]}
    ratio = aspect_ratio(req.size)
    if ratio is not None:
        generation["imageConfig"] = {"aspectRatio": ratio}
    body = {"contents": [{"role": "user", "parts": parts}], "generationConfig": generation}
    data = _post(ctx, cfg, "google", f"{base}/models/{req.model}:generateContent", json=body, headers=headers)
    feedback = data.get("promptFeedback") if isinstance(data, dict) else None
    if isinstance(feedback, dict) and feedback.get("blockReason"):
        raise _google_refused(str(feedback["blockReason"]))
    candidates = data.get("candidates") if isinstance(data, dict) else None
    first = _first_dict(candidates)
    # Every level of the answer is checked for its shape: a malformed body is the backend's error.
    content = first.get("content")
    answer_parts = content.get("parts") if isinstance(content, dict) else None
    texts: list[str] = []
    for part in answer_parts if isinstance(answer_parts, list) else []:
        if not isinstance(part, dict):
            continue
        inline = part.get("inlineData") or part.get("inline_data")
        if isinstance(inline, dict) and str(
            inline.get("mimeType") or inline.get("mime_type") or ""
        ).startswith("image/"):
            return Generated(_decode("google", inline.get("data")))
        if isinstance(part.get("text"), str):
            texts.append(part["text"])
    reason = str(first.get("finishReason") or "")
    if reason in GOOGLE_REFUSED:
        raise _google_refused(reason)
    said = " ".join(texts).strip()[:300]
    raise ToolError(
        "provider_error",
        "the google image backend answered without an image" + (f": {said}" if said else ""),
        {"backend": "google", "finish_reason": reason or None},
    )


def _google_refused(reason: str) -> ToolError:
    return ToolError(
        "prompt_refused",
        f"the google image backend refused this prompt ({reason}). Rephrase the request; nothing was created.",
        {"backend": "google", "reason": reason},
    )


def _run_openai_codex(ctx: ToolContext, cfg: GenerateImageConfig, req: ImageRequest) -> Generated:
    from .codexbackend import run_openai_codex

    return run_openai_codex(ctx, cfg, req)


RUNNERS = {"openai": run_openai, "xai": run_xai, "google": run_google, "openai_codex": _run_openai_codex}
