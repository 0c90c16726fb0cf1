"""The channels' config: `[fermix_core.channels.telegram]`, `[fermix_core.channels.webhooks.NAME]`,
`[fermix_core.channels.apprise.NAME]`.

Webhook and Apprise endpoints are named blocks, and a delivery target names the block
(`{"platform": "webhook", "recipient": "NAME"}`), never a URL: the URLs often carry a secret (a Slack
incoming-webhook URL is one), and a job a model wrote can reach only the endpoints the owner set up.
"""

from __future__ import annotations

from typing import Annotated, Literal, Self

from ..core.config import Endpoint, EnvName, Secret, Section
from ..core.params import Field, model_validator

ChannelName = Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")]
HeaderName = Annotated[str, Field(pattern=r"^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$")]
HeaderValue = Annotated[str, Field(pattern=r"^[\x20-\x7e\t]{0,4096}$")]  # visible ASCII: no line breaks
TELEGRAM_API = "https://api.telegram.org"


class TelegramConfig(Section):
    """`[fermix_core.channels.telegram]`: the Bot API token, the owner, and the API base (for tests)."""

    bot_token: Secret | None = None
    bot_token_env: EnvName | None = None  # read the token from this environment variable instead
    # The owner's Telegram user id; in a private chat with the bot it is also the chat id. Setting it
    # makes the owner's chat the derived default delivery target.
    owner_user_id: Annotated[int, Field(ge=1)] | None = None
    # Users `fermix serve telegram` also answers, in their private chats, as guests: read-only tools that
    # are not owner-only, each in a session of its own. Everyone else is refused.
    guest_user_ids: list[Annotated[int, Field(ge=1)]] = []
    # Group and supergroup chats (negative ids) where `fermix serve telegram` answers messages that address
    # the bot (@mention, a reply to it, /command@bot), everyone in them as a guest, the owner included.
    guest_chat_ids: list[Annotated[int, Field(le=-1)]] = []
    api_base: Endpoint = TELEGRAM_API
    timeout_seconds: Annotated[float, Field(gt=0, le=300)] = 30.0

    @model_validator(mode="after")
    def _one_token_source(self) -> Self:
        if self.bot_token is not None and self.bot_token_env is not None:
            raise ValueError("set bot_token or bot_token_env, not both")
        return self


class WebhookConfig(Section):
    """One `[fermix_core.channels.webhooks.NAME]` block: where to POST and in which body format.

    `json`: `{"text": ..., "title": ..., and what the delivery is about}`; `slack`: a Slack incoming
    webhook's `{"text": ...}`; `ntfy`: the text as a plain body to an ntfy topic URL, the title in a header.
    """

    url: Endpoint | None = None
    url_env: EnvName | None = None  # read the URL from this environment variable instead
    format: Literal["json", "slack", "ntfy"] = "json"
    headers: dict[HeaderName, HeaderValue] = {}
    timeout_seconds: Annotated[float, Field(gt=0, le=300)] = 30.0

    @model_validator(mode="after")
    def _one_url_source(self) -> Self:
        if (self.url is None) == (self.url_env is None):
            raise ValueError("set exactly one of url or url_env")
        return self


class AppriseConfig(Section):
    """One `[fermix_core.channels.apprise.NAME]` block: an Apprise URL (needs `pip install 'fermix[apprise]'`)."""

    url: Secret | None = None
    url_env: EnvName | None = None

    @model_validator(mode="after")
    def _one_url_source(self) -> Self:
        if (self.url is None) == (self.url_env is None):
            raise ValueError("set exactly one of url or url_env")
        return self


CONFIG_SECTIONS = {
    "fermix_core.channels.telegram": TelegramConfig,
    "fermix_core.channels.webhooks": dict[ChannelName, WebhookConfig],
    "fermix_core.channels.apprise": dict[ChannelName, AppriseConfig],
}
