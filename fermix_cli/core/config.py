"""config.toml: read with tomllib, validated by fermix's `Params` (like tool input), written with tomli-w.

An invalid file never runs with defaults: loading fails closed with an error naming the key.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any, Literal, Self

from .errors import ToolError
from .params import AfterValidator, Field, Params, ValidationError, model_validator

Name = Annotated[str, Field(min_length=1, max_length=4096)]


def _allowed_host(entry: str) -> str:
    from .net.guard import normalise_allowed_host

    normalise_allowed_host(entry)  # ValueError names what is wrong with the entry
    return entry


def _endpoint(url: str) -> str:
    from .net.guard import check_url

    try:
        check_url(url)
    except ToolError as exc:
        raise ValueError(f"not a usable http(s) URL: {exc.message}") from None
    return url


AllowedHost = Annotated[str, Field(min_length=1, max_length=300), AfterValidator(_allowed_host)]
Endpoint = Annotated[str, Field(min_length=1, max_length=2048), AfterValidator(_endpoint)]
Secret = Annotated[str, Field(min_length=1, max_length=4096)]


class Section(Params):
    """A strictly checked config section: unknown keys and wrong types are errors."""


# An environment variable name as POSIX shells accept it.
EnvName = Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$", max_length=256)]


class EnvVarSource(Section):
    """Where an allowed variable's value comes from: the daemon env (maybe under another name) or a helper."""

    source: Literal["env", "command"] = "env"
    name: EnvName | None = None  # source "env": read this name instead (an alias)
    command: Name | None = None  # source "command": the helper program; it prints the value on one line
    args: list[Annotated[str, Field(max_length=4096)]] = []
    timeout_ms: Annotated[int, Field(ge=1, le=5_000)] = 3000

    @model_validator(mode="after")
    def _source_fields(self) -> Self:
        if self.source == "command" and self.command is None:
            raise ValueError('source = "command" needs command = "PROGRAM"')
        if self.source == "env" and (self.command is not None or self.args):
            raise ValueError('command and args belong to source = "command"')
        if self.source == "command" and self.name is not None:
            raise ValueError('name belongs to source = "env"')
        return self


class SandboxEnv(Section):
    """`[sandbox.env]`: which variables reach shell and git children beyond the fixed base set.

    `allow` names (and every name with a `vars` entry) are passed; `deny` always wins. With
    `mode = "all"` the child inherits the whole environment minus `deny`.
    """

    mode: Literal["list", "all"] = "list"
    allow: list[EnvName] = []
    deny: list[EnvName] = []
    vars: dict[EnvName, EnvVarSource] = {}


class SandboxConfig(Section):
    mode: Literal["strict", "standard", "open"] = "standard"
    allowed_roots: list[Name] = []
    blocked_roots: list[Name] = []
    env: SandboxEnv = Field(default_factory=SandboxEnv)


class NetConfig(Section):
    # Exact host names or IP literals the network guard lets through although they are not global.
    allowed_private_hosts: list[AllowedHost] = []


class WebSearchConfig(Section):
    """`[fermix_core.tools.web_search]`: the web_search backend, its keys, and the endpoints (for tests/proxies).

    `backend` is kept as written; an unknown name runs DuckDuckGo with a warning (tools/web/backends.py).
    Keys may instead come from environment variables (BRAVE_API_KEY, EXA_API_KEY, ...); the config wins.
    """

    backend: Annotated[str, Field(min_length=1, max_length=64)] = "duckduckgo"
    brave_api_key: Secret | None = None
    exa_api_key: Secret | None = None
    firecrawl_api_key: Secret | None = None
    parallel_api_key: Secret | None = None
    perplexity_api_key: Secret | None = None
    tavily_api_key: Secret | None = None
    duckduckgo_url: Endpoint = "https://html.duckduckgo.com/html/"
    brave_url: Endpoint = "https://api.search.brave.com/res/v1/web/search"
    brave_place_url: Endpoint = "https://api.search.brave.com/res/v1/local/place_search"
    exa_url: Endpoint = "https://api.exa.ai/search"
    firecrawl_url: Endpoint = "https://api.firecrawl.dev/v1/search"
    parallel_url: Endpoint = "https://api.parallel.ai/v1/search"
    perplexity_url: Endpoint = "https://api.perplexity.ai/search"
    tavily_url: Endpoint = "https://api.tavily.com/search"


class WebConfig(Section):
    """`[fermix_core.tools.web]`: the coding `web` tool. Its Exa key is environment-only (EXA_API_KEY)."""

    exa_url: Endpoint = "https://api.exa.ai/search"


class ToolSearchConfig(Section):
    """`[fermix_core.tools.tool_search]`: deferral of plugin and MCP tool schemas (core/deferral.py)."""

    enabled: bool = True


class GitToolConfig(Section):
    """`[fermix_core.tools.git]`: what the hardened git tools may use besides the repository."""

    allow_hooks: bool = False  # hooks run code; off unless the owner turns them on
    credential_helpers: list[Annotated[str, Field(min_length=1, max_length=256)]] = []
    user_name: Name | None = None
    user_email: Name | None = None


class ToolsConfig(Section):
    web_search: WebSearchConfig = Field(default_factory=WebSearchConfig)
    web: WebConfig = Field(default_factory=WebConfig)
    tool_search: ToolSearchConfig = Field(default_factory=ToolSearchConfig)
    git: GitToolConfig = Field(default_factory=GitToolConfig)


PROVIDER_TYPES = ("openai", "anthropic", "mock", "echo")
ProviderType = Literal["openai", "anthropic", "mock", "echo"]
ReasoningEffort = Literal["none", "low", "medium", "high", "xhigh", "max"]


class ProviderConfig(Section):
    """One `[fermix_core.providers.NAME]` block. NAME is the type unless `type` says otherwise."""

    type: ProviderType | None = None
    base_url: Endpoint | None = None
    default_model: Name | None = None
    api_key: Secret | None = None
    api_key_env: Name | None = None
    headers: dict[str, str] = {}
    max_tokens: Annotated[int, Field(ge=1, le=1_000_000)] | None = None
    max_retries: Annotated[int, Field(ge=0, le=10)] = 3
    read_timeout: Annotated[float, Field(gt=0, le=3600)] = 120.0
    script: Name | None = None


class AgentConfig(Section):
    """`[fermix_core.agent]`: the main agent's defaults (the model loop behind ask and agent)."""

    provider: Name | None = None
    model: Name | None = None
    system_prompt: Annotated[str, Field(max_length=100_000)] | None = None
    toolset: Literal["fermix", "coding"] = "fermix"
    max_iterations: Annotated[int, Field(ge=1, le=10_000)] = 25
    max_iterations_scheduled: Annotated[int, Field(ge=1, le=10_000)] = 100
    repeat_limit: Annotated[int, Field(ge=2, le=100)] = 3


class RoutingConfig(Section):
    """`[fermix_core.routing]`: which model delegated sub-agents, cron runs and meetings use."""

    subagent_provider: Name | None = None
    subagent_model: Name | None = None
    subagent_reasoning_effort: ReasoningEffort | None = None
    cron_provider: Name | None = None
    cron_model: Name | None = None
    cron_reasoning_effort: ReasoningEffort | None = None
    meeting_provider: Name | None = None
    meeting_model: Name | None = None
    meeting_reasoning_effort: ReasoningEffort | None = None


class JobsConfig(Section):
    """`[fermix_core.jobs]`: the scheduled-jobs runtime (`fermix jobs run`) and job defaults."""

    # A recurring run found more than this late is recorded as skipped and its schedule advances.
    run_freshness_window_seconds: Annotated[int, Field(ge=60, le=7 * 86400)] = 3600
    # Scheduled runs in flight at once, across every `fermix jobs run` process; manual runs are not counted.
    max_concurrent_runs: Annotated[int, Field(ge=1, le=64)] = 4
    default_timeout_seconds: Annotated[int, Field(ge=1, le=86400)] = 1800
    default_inactivity_timeout_seconds: Annotated[int, Field(ge=1, le=86400)] = 600
    # Used when schedule_job names neither a mode nor a target; checked at creation, never ignored.
    default_delivery_mode: Literal["none", "origin", "channel", "local"] | None = None
    default_delivery_target: dict[Name, Name] | None = None
    # Run history kept per job; older rows (and their output.md) are deleted after each run.
    max_runs_per_job: Annotated[int, Field(ge=1, le=100_000)] = 200
    # A model run that fails on the provider (network, rate limit, provider error) before any tool ran
    # is tried again this many times, after retry_backoff_seconds, then four times that, ...
    transient_retries: Annotated[int, Field(ge=0, le=5)] = 2
    retry_backoff_seconds: Annotated[int, Field(ge=1, le=600)] = 10


class FermixCoreConfig(Section):
    net: NetConfig = Field(default_factory=NetConfig)
    tools: ToolsConfig = Field(default_factory=ToolsConfig)
    providers: dict[Name, ProviderConfig] = {}
    agent: AgentConfig = Field(default_factory=AgentConfig)
    routing: RoutingConfig = Field(default_factory=RoutingConfig)
    jobs: JobsConfig = Field(default_factory=JobsConfig)


class PathToolCapability(Section):
    """`[capabilities.tools.NAME]` of a tool that takes caller paths."""

    absolute_paths: bool = True  # false: absolute paths outside the working directory are refused


class HashEditCapability(PathToolCapability):
    repairs: bool = True  # the automatic SWAP/INS.POST repairs of hashline.md §4.4


class BashCapability(Section):
    """`[capabilities.tools.bash]` of the coding toolset's bash tool."""

    shell_expansion: bool = True  # false: `$ ~ ` { }` are refused before anything runs


class ToolCapabilities(Section):
    read: PathToolCapability = Field(default_factory=PathToolCapability)
    write: PathToolCapability = Field(default_factory=PathToolCapability)
    hash_edit: HashEditCapability = Field(default_factory=HashEditCapability)
    bash: BashCapability = Field(default_factory=BashCapability)
    grep: PathToolCapability = Field(default_factory=PathToolCapability)
    find: PathToolCapability = Field(default_factory=PathToolCapability)
    list_files: PathToolCapability = Field(default_factory=PathToolCapability)
    ast_grep: PathToolCapability = Field(default_factory=PathToolCapability)


class CapabilitiesConfig(Section):
    tools: ToolCapabilities = Field(default_factory=ToolCapabilities)


McpServerName = Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9_-]{0,31}$")]


class McpServerConfig(Section):
    """One `[mcp.servers.NAME]` block: a stdio command (with args and env) or a URL, never both."""

    command: Name | None = None
    args: list[str] = []
    env: dict[EnvName, str] = {}
    env_passthrough: list[EnvName] = []
    cwd: Name | None = None
    url: Annotated[str, Field(pattern=r"^https?://", max_length=4096)] | None = None
    transport: Literal["streamable_http", "sse"] = "streamable_http"
    headers: dict[str, str] = {}
    enabled: bool = True
    tools: list[Name] | None = None
    policy_class: Literal["read_only", "read_write", "exec", "network", "external_api", "gui_control"] = (
        "external_api"
    )
    startup_timeout_ms: Annotated[int, Field(ge=100, le=600_000)] = 20_000
    call_timeout_ms: Annotated[int, Field(ge=100, le=3_600_000)] = 120_000

    @model_validator(mode="after")
    def _one_endpoint(self) -> Self:
        if (self.command is None) == (self.url is None):
            raise ValueError("set exactly one of command (a stdio server) or url (an HTTP server)")
        if self.url is None and (self.headers or self.transport != "streamable_http"):
            raise ValueError("headers and transport apply only to a url server")
        if self.command is None and (self.args or self.env or self.env_passthrough or self.cwd):
            raise ValueError("args, env, env_passthrough and cwd apply only to a command server")
        return self


class McpConfig(Section):
    servers: dict[McpServerName, McpServerConfig] = {}


class Config(Section):
    sandbox: SandboxConfig = Field(default_factory=SandboxConfig)
    fermix_core: FermixCoreConfig = Field(default_factory=FermixCoreConfig)
    capabilities: CapabilitiesConfig = Field(default_factory=CapabilitiesConfig)
    mcp: McpConfig = Field(default_factory=McpConfig)


def _dotted(loc: tuple[Any, ...]) -> str:
    return ".".join(str(p) for p in loc)


def _config_error(e: ValidationError, source: str, prefix: tuple[str, ...] = ()) -> ToolError:
    errs = e.errors(include_input=False)
    first = errs[0]
    key = _dotted((*prefix, *first["loc"])) or "(top level)"
    return ToolError(
        "invalid_config",
        f"{source}: {key}: {first['msg']}. Fix or remove this key; fermix refuses to run on a config it cannot read.",
        {"key": key, "errors": [{"key": _dotted((*prefix, *x["loc"])), "message": x["msg"]} for x in errs]},
    )


def validate_config(data: dict[str, Any], source: str = "config.toml") -> Config:
    """Validate parsed TOML; the error names the first offending key."""
    try:
        config = Config.model_validate(data)
    except ValidationError as e:
        raise _config_error(e, source) from None
    for name, block in config.fermix_core.providers.items():
        if block.type is None and name not in PROVIDER_TYPES:
            key = f"fermix_core.providers.{name}.type"
            raise ToolError(
                "invalid_config",
                f"{source}: {key}: missing; a provider named {name!r} must say its type "
                f"({', '.join(PROVIDER_TYPES)}). Fix or remove this block.",
                {"key": key, "errors": [{"key": key, "message": "missing"}]},
            )
    return config


def read_raw(path: Path) -> dict[str, Any]:
    """The parsed TOML document, or {} when the file does not exist."""
    import tomllib

    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except FileNotFoundError:
        return {}
    except tomllib.TOMLDecodeError as e:
        raise ToolError(
            "invalid_config",
            f"{path}: not valid TOML ({e}). Fix the file; fermix refuses to run on a config it cannot read.",
            {"path": str(path)},
        ) from None
    except OSError as e:
        raise ToolError(
            "invalid_config", f"{path}: cannot read ({e.strerror})", {"path": str(path)}
        ) from None


def load_config(path: Path) -> Config:
    """Read and validate config.toml."""
    return validate_config(read_raw(path), str(path))


def load_section(path: Path, keys: tuple[str, ...]) -> Any:
    """One section of config.toml (`("fermix_core", "jobs")`), validated as strictly as in the whole file.

    For a caller that must go on while another section is invalid (a jobs tick records that error on
    the runs it starts). A section that is not a table is reported by the full check.
    """
    import typing

    data = read_raw(path)
    cls: Any = Config
    node: Any = data
    for key in keys:
        cls = typing.get_type_hints(cls)[key]
        node = node.get(key, {}) if isinstance(node, dict) else None
    if not isinstance(node, dict):
        return _section(validate_config(data, str(path)), keys)  # let the full check name the problem
    try:
        return cls.model_validate(node)
    except ValidationError as e:
        raise _config_error(e, str(path), keys) from None


def _section(config: Any, keys: tuple[str, ...]) -> Any:
    for key in keys:
        config = getattr(config, key)
    return config


def write_raw(path: Path, data: dict[str, Any]) -> None:
    """Validate, then replace the file atomically (mode 0600, directory 0700)."""
    import tomli_w

    validate_config(data, str(path))
    from .paths import make_private_dirs

    make_private_dirs(path.parent)
    text = tomli_w.dumps(data)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def get_key(data: dict[str, Any], key: str) -> Any:
    """Look up a dotted key in the effective config (file values over defaults)."""
    node: Any = data
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            raise ToolError("invalid_key", f"no config key {key!r}", {"key": key})
        node = node[part]
    return node


def set_key(data: dict[str, Any], key: str, value: Any) -> dict[str, Any]:
    """A copy of the raw document with a dotted key set (intermediate tables created)."""
    import copy

    parts = key.split(".")
    if not all(parts):
        raise ToolError("invalid_key", f"malformed config key {key!r}", {"key": key})
    out = copy.deepcopy(data)
    node = out
    for part in parts[:-1]:
        child = node.setdefault(part, {})
        if not isinstance(child, dict):
            raise ToolError("invalid_key", f"{part!r} in {key!r} is a value, not a table", {"key": key})
        node = child
    node[parts[-1]] = value
    return out


def unset_key(data: dict[str, Any], key: str) -> dict[str, Any]:
    """A copy of the raw document with a dotted key removed."""
    import copy

    out = copy.deepcopy(data)
    node: Any = out
    parts = key.split(".")
    for part in parts[:-1]:
        node = node.get(part) if isinstance(node, dict) else None
    if not isinstance(node, dict) or parts[-1] not in node:
        raise ToolError("invalid_key", f"{key!r} is not set in config.toml", {"key": key})
    del node[parts[-1]]
    return out


def parse_cli_value(text: str) -> Any:
    """A value typed on the command line: a TOML literal when it parses as one, else the string."""
    import tomllib

    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text
