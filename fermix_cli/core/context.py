"""ToolContext: who is calling, from where, with which narrowing, and lazy handles to shared state."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

from .paths import FermixPaths, resolve_paths
from .paths import os_home as _os_home
from .records import Record

if TYPE_CHECKING:
    from datetime import datetime

    from .config import Config
    from .net.httpclient import GuardedClient
    from .sandbox import Sandbox
    from .state import StateDB
    from .toolsets import Toolset

Trust = Literal["operator", "guest"]
Origin = Literal["cli", "interactive", "scheduled", "subagent", "skill", "mcp"]

POLICY_CLASSES = ("read_only", "read_write", "exec", "network", "external_api", "gui_control")

DEFAULT_SESSION = "default"


def utc_now() -> datetime:
    from datetime import UTC, datetime  # here, not at the top: most tool calls never read the clock

    return datetime.now(UTC)


def clock_from_env(env: os._Environ[str] | dict[str, str] | None = None) -> Callable[[], datetime]:
    """The wall clock, or the fixed instant in FERMIX_NOW (tests only: it freezes time for every call)."""
    raw = (os.environ if env is None else env).get("FERMIX_NOW", "").strip()
    if not raw:
        return utc_now
    from datetime import UTC, datetime

    from .errors import ToolError

    try:
        instant = datetime.fromisoformat(raw.upper().replace("Z", "+00:00"))
    except ValueError:
        instant = None
    if instant is None or instant.utcoffset() is None:
        raise ToolError("usage", f"FERMIX_NOW={raw!r} is not an ISO-8601 instant with an offset", {})
    fixed = instant.astimezone(UTC)
    return lambda: fixed


class ToolContext(Record):
    """Everything a handler may consult. Shared handles (config, sandbox, state) open on first use."""

    _fields = (
        "paths", "trust", "origin", "attended", "depth", "session_id", "cwd", "launch_cwd",
        "allowed_tools", "policy_ceiling", "job_id", "record_calls", "toolset", "toolsets", "clock",
        "os_home", "extras", "http_factory", "_config", "_sandbox", "_state",
    )  # fmt: skip
    __slots__ = _fields
    _hidden = frozenset({"toolsets", "http_factory", "_config", "_sandbox", "_state"})

    def __init__(
        self,
        paths: FermixPaths,
        trust: Trust = "operator",
        origin: Origin = "cli",
        attended: bool = True,
        depth: int = 0,
        session_id: str = DEFAULT_SESSION,
        cwd: str | None = None,
        launch_cwd: str | None = None,  # default: the process's working directory
        allowed_tools: frozenset[str] | None = None,
        policy_ceiling: frozenset[str] | None = None,
        job_id: str | None = None,
        record_calls: bool = False,
        toolset: str | None = None,
        # Where names are found (a model run's toolbox); default: the registry's toolsets for `toolset`.
        toolsets: Toolset | None = None,
        clock: Callable[[], datetime] = utc_now,
        os_home: str | None = None,  # default: the user's real home
        extras: dict[str, Any] | None = None,
        # Builds HTTP clients (default: `net.client.guarded_client`); tests wrap it, e.g. to shorten timeouts.
        http_factory: Callable[..., GuardedClient] | None = None,
        _config: Config | None = None,
        _sandbox: Sandbox | None = None,
        _state: StateDB | None = None,
    ) -> None:
        self.paths = paths
        self.trust = trust
        self.origin = origin
        self.attended = attended
        self.depth = depth
        self.session_id = session_id
        self.cwd = cwd
        self.launch_cwd: str = os.getcwd() if launch_cwd is None else launch_cwd
        self.allowed_tools = allowed_tools
        self.policy_ceiling = policy_ceiling
        self.job_id = job_id
        self.record_calls = record_calls
        self.toolset = toolset
        self.toolsets = toolsets
        self.clock = clock
        self.os_home: str = _os_home() if os_home is None else os_home
        self.extras: dict[str, Any] = {} if extras is None else extras
        self.http_factory = http_factory
        self._config = _config
        self._sandbox = _sandbox
        self._state = _state

    @classmethod
    def for_cli(
        cls,
        *,
        home: str | None = None,
        cwd: str | None = None,
        session: str | None = None,
        trust: Trust | None = None,
    ) -> ToolContext:
        """A person at the keyboard or in their own script: operator, origin cli, attended."""
        env = os.environ
        return cls(
            paths=resolve_paths(home),
            trust=trust or "operator",
            origin="cli",
            attended=True,
            session_id=session or env.get("FERMIX_SESSION", "").strip() or DEFAULT_SESSION,
            cwd=os.path.abspath(cwd) if cwd else None,
            clock=clock_from_env(env),
        )

    # ----- lazy shared handles -------------------------------------------------------------

    @property
    def config(self) -> Config:
        if self._config is None:
            from .config import load_config

            self._config = load_config(self.paths.config_file, cache_dir=self.paths.run_dir)
        return self._config

    def reload_config(self) -> None:
        """Forget the loaded config (and the sandbox built from it); the next use reads the file again."""
        self._config = None
        self._sandbox = None

    @property
    def sandbox(self) -> Sandbox:
        if self._sandbox is None:
            from .sandbox import Sandbox

            self._sandbox = Sandbox.from_config(
                self.config.sandbox,
                self.paths,
                home=self.os_home,
                launch_cwd=self.launch_cwd,
                request_cwd=self.cwd,
                trusted_local=self.trust == "operator" and self.origin in ("cli", "interactive"),
            )
        return self._sandbox

    @property
    def state(self) -> StateDB:
        if self._state is None:
            from .state import StateDB

            self.paths.ensure_dir(self.paths.data_dir)
            self._state = StateDB(self.paths.state_db)
        return self._state

    def http_client(self, **options: Any) -> GuardedClient:
        """A client that goes through the network guard, honouring `[fermix_core.net] allowed_private_hosts`.

        `options` are `guarded_client`'s limits (`max_body`, `connect_timeout`, `follow_redirects`, ...).
        """
        options.setdefault("allowed_private_hosts", tuple(self.config.fermix_core.net.allowed_private_hosts))
        if self.http_factory is not None:
            return self.http_factory(**options)
        from .net.client import guarded_client

        return guarded_client(**options)

    def now(self) -> datetime:
        return self.clock()

    def derive(self, **changes: Any) -> ToolContext:
        """A narrowed child context (subagent, skill, job). Narrowing only narrows."""
        child = self.replace(_sandbox=None, **changes)
        if "allowed_tools" in changes and self.allowed_tools is not None:
            mine = changes["allowed_tools"]
            child.allowed_tools = self.allowed_tools if mine is None else self.allowed_tools & mine
        if "policy_ceiling" in changes and self.policy_ceiling is not None:
            mine = changes["policy_ceiling"]
            child.policy_ceiling = self.policy_ceiling if mine is None else self.policy_ceiling & mine
        if self.trust == "guest":
            child.trust = "guest"
        return child

    def close(self) -> None:
        if self._state is not None:
            self._state.close()
            self._state = None
