"""The media family's config: `[capabilities.tools.view_image]` and `[fermix_core.tools.generate_image]`."""

from __future__ import annotations

from typing import Annotated, Literal

from ...core.config import Endpoint, Name, Secret, Section
from ...core.params import Field

MIB = 1024 * 1024
VisionApi = Literal["responses", "messages", "chat_completions"]


class VisionModel(Section):
    """`[capabilities.tools.view_image.vision_model]`: the one model that may see view_image's bytes.

    `provider` names a `[fermix_core.providers.NAME]` block (or the built-in `openai` / `anthropic`).
    `api` is derived when left out: an Anthropic provider speaks the Messages API, OpenAI at its
    official URL the Responses API, and any other OpenAI-compatible base URL Chat Completions.
    """

    provider: Name
    model: Name
    api: VisionApi | None = None
    max_output_tokens: Annotated[int, Field(ge=1, le=100_000)] = 1024


class ViewImageCapability(Section):
    """`[capabilities.tools.view_image]`: the vision model, the absolute-path rule and the size cap."""

    vision_model: VisionModel | None = None
    absolute_paths: bool = True  # false: images outside the working directory are refused
    max_image_bytes: Annotated[int, Field(ge=1, le=20 * MIB)] = 5 * MIB


ImageBackend = Literal["openai", "openai_codex", "xai", "google"]
ImageSize = Annotated[str, Field(pattern=r"^[1-9][0-9]{1,4}x[1-9][0-9]{1,4}$|^auto$")]


class GenerateImageConfig(Section):
    """`[fermix_core.tools.generate_image]`: the one image backend (no fallback), its model, keys and URLs.

    Keys may come from the environment instead: OPENAI_API_KEY, XAI_API_KEY, GEMINI_API_KEY (or
    GOOGLE_API_KEY). `openai_codex` uses the ChatGPT/Codex login in `codex_auth_file` instead of a key.
    The `*_url` settings exist for proxies and tests.
    """

    backend: ImageBackend | None = None
    model: Name | None = None
    size: ImageSize = "1024x1024"
    openai_api_key: Secret | None = None
    xai_api_key: Secret | None = None
    google_api_key: Secret | None = None
    openai_url: Endpoint = "https://api.openai.com/v1"
    xai_url: Endpoint = "https://api.x.ai/v1"
    google_url: Endpoint = "https://generativelanguage.googleapis.com/v1beta"
    codex_url: Endpoint = "https://chatgpt.com/backend-api/codex"
    codex_auth_file: Name = "~/.codex/auth.json"  # left as is, $CODEX_HOME/auth.json when CODEX_HOME is set
    codex_refresh_url: Endpoint = "https://auth.openai.com/oauth/token"  # where the Codex login is renewed
    router_model: Name = "gpt-5.2"  # openai_codex: the GPT-5.x model that carries the image tool
    timeout_seconds: Annotated[float, Field(gt=0, le=900)] = 180.0


CONFIG_SECTIONS = {
    "capabilities.tools.view_image": ViewImageCapability,
    "fermix_core.tools.generate_image": GenerateImageConfig,
}
