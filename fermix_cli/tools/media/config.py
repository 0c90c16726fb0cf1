"""The media family's config: `[capabilities.tools.view_image]` and `[fermix_core.tools.generate_image]`."""

from __future__ import annotations

from typing import Annotated, Literal

from ...core.config import Name, Section
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


CONFIG_SECTIONS = {
    "capabilities.tools.view_image": ViewImageCapability,
}
