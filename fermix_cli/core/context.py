"""ToolContext: who is calling, from where, with which narrowing, and lazy handles to shared state."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

from .paths import FermixPaths, resolve_paths
from .paths import os_home as _os_home
from .records import Record, field

if TYPE_CHECKING:
    from datetime import datetime

    from .cancel import CancelToken
    from .config import Config
    from .homecheck import HomeIdentity
    from .net.httpclient import GuardedClient
    from .sandbox import Sandbox
    from .state import StateDB
    from .toolsets import Toolset

Trust = Literal["operator", "guest"]
Origin = Literal["cli", "interactive", "scheduled", "subagent", "skill", "mcp"]

POLICY_CLASSES = ("read_only", "read_write", "exec", "network", "external_api", "gui_control")

DEFAULT_SESSION = "default"
MAX_SESSION_ID = 256


def checked_session_id(value: str, source: str) -> str:
    """`value` as a session id, or a usage error naming `source` (the option or variable it came from).

    A session id is stored, logged and shown: printable UTF-8 text, at most MAX_SESSION_ID characters.
    """
    from .errors import ToolError

    if len(value) > MAX_SESSION_ID:
        why = f"is {len(value)} characters long"
    elif any("\ud800" <= c <= "\udfff" for c in value):  # undecodable bytes, as Python keeps them
        why = "is not valid UTF-8"
    elif any(c < " " or "\x7f" <= c < "\xa0" for c in value):
        why = "contains a control character"
    else:
        return value
    raise ToolError(
        "usage",
        f"{source} {why}; a session id is up to {MAX_SESSION_ID} characters of printable UTF-8 text",
        {"option": source},
    )


def checked_cwd(cwd: str, source: str = "--cwd") -> str:
    """`cwd` made absolute, or `missing_working_dir` when it is not an existing directory."""
    from .errors import ToolError

    path = os.path.abspath(cwd)
    if not os.path.isdir(path):
        raise ToolError(
            "missing_working_dir",
            f"{source} {path} does not exist or is not a directory; pass an existing directory",
            {"path": path, "option": source},
        )
    return path


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
        fixed = instant.astimezone(UTC) if instant.utcoffset() is not None else None
    except (ValueError, OverflowError):
        fixed = None
    if fixed is None:
        raise ToolError("usage", f"FERMIX_NOW={raw!r} is not an ISO-8601 instant with an offset", {})
    return lambda: fixed


class ToolContext(Record):
    """Everything a handler may consult. Shared handles (config, sandbox, state) open on first use."""

    paths: FermixPaths
    trust: Trust = "operator"
    origin: Origin = "cli"
    attended: bool = True
    depth: int = 0
    session_id: str = DEFAULT_SESSION
    cwd: str | None = None
    launch_cwd: str = field(default_factory=os.getcwd)  # default: the process's working directory
    allowed_tools: frozenset[str] | None = None
    policy_ceiling: frozenset[str] | None = None
    job_id: str | None = None
    record_calls: bool = False
    toolset: str | None = None
    # Where names are found (a model run's toolbox); default: the registry's toolsets for `toolset`.
    toolsets: Toolset | None = field(default=None, repr=False)
    clock: Callable[[], datetime] = utc_now
    os_home: str = field(default_factory=_os_home)  # default: the user's real home
    extras: dict[str, Any] = field(default_factory=dict)
    # Builds HTTP clients (default: `net.client.guarded_client`); tests wrap it, e.g. to shorten timeouts.
    http_factory: Callable[..., GuardedClient] | None = field(default=None, repr=False)
    # Set by a caller that gives up on the call (an MCP client's cancel); long-running work watches it.
    cancel: CancelToken | None = field(default=None, repr=False)
    _config: Config | None = field(default=None, repr=False)
    # config.toml's identity when `_config` was read (see `config_identity`); None: never read here.
    _config_seen: tuple[int, ...] | None = field(default=None, repr=False)
    _sandbox: Sandbox | None = field(default=None, repr=False)
    _state: StateDB | None = field(default=None, repr=False)
    # `_state` is another context's connection (inherited by `derive`, or lent to it): `close` leaves it.
    _state_lent: bool = field(default=False, repr=False)
    _home: HomeIdentity | None = field(default=None, repr=False)

    @classmethod
    def for_cli(
        cls,
        *,
        home: str | None = None,
        cwd: str | None = None,
        session: str | None = None,
        trust: Trust | None = None,
    ) -> ToolContext:
        """A person at the keyboard or in their own script: operator, origin cli, attended.

        A home that is not a directory, a --cwd that is not one, or a malformed session id is refused
        here, before any tool runs.
        """
        env = os.environ
        paths = resolve_paths(home)
        paths.check_homes()
        if session:
            session_id = checked_session_id(session, "--session")
        else:
            from_env = env.get("FERMIX_SESSION", "").strip()
            session_id = checked_session_id(from_env, "FERMIX_SESSION") if from_env else DEFAULT_SESSION
        return cls(
            paths=paths,
            trust=trust or "operator",
            origin="cli",
            attended=True,
            session_id=session_id,
            cwd=checked_cwd(cwd) if cwd else None,
            clock=clock_from_env(env),
        )

    # ----- lazy shared handles -------------------------------------------------------------

    @property
    def config(self) -> Config:
        if self._config is None:
            from .config import load_config

            seen = self.config_identity()  # before reading: a change made meanwhile is seen next time
            self._config = load_config(self.paths.config_file, cache_dir=self.paths.run_dir)
            self._config_seen = seen
        return self._config

    def config_identity(self) -> tuple[int, ...]:
        """config.toml as a stat sees it (device, inode, size, mtime): a change gives another value.

        Every writer replaces the file (a new inode), an editor at least changes its mtime or size.
        """
        try:
            st = os.stat(self.paths.config_file)
        except FileNotFoundError:
            return (0,)
        except OSError as e:  # unreadable: a value of its own, so a later recovery counts as a change
            return (-1, e.errno or 0)
        return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)

    def reload_config(self) -> None:
        """Forget the loaded config (and the sandbox built from it); the next use reads the file again."""
        self._config = None
        self._sandbox = None

    def refresh_config(self) -> None:
        """Before a tool call of a long-lived context (an agent session, a chat server, `--jsonl`): read
        config.toml again, and so rebuild the sandbox, when the file changed since this context read it.

        One stat when nothing changed; nothing at all in a context that has not read the config yet (a
        one-shot call). A config that has become invalid raises `invalid_config` here and on every later
        call until it is fixed: the sandbox of the old file is never kept (fail closed).
        """
        if self._config_seen is None:
            return
        if self._config is not None and self.config_identity() == self._config_seen:
            return
        self.reload_config()
        self.config  # noqa: B018 - read now: an invalid file fails this call, not a later one

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
                trusted_local=self._trusted_local(),
            )
        return self._sandbox

    def spawned_cli_call(self) -> bool:
        """A CLI call made by a process fermix started (a tool's shell, a coding run, a job's command):
        not the owner at the keyboard, so what needs an attended owner treats it as unattended."""
        if self.origin != "cli":
            return False
        from .spawned import spawned_by_fermix  # walks /proc: only for a CLI call that asks

        return spawned_by_fermix()

    def _trusted_local(self) -> bool:
        return self.trust == "operator" and self.origin in ("cli", "interactive")

    def _sandbox_inputs(self) -> tuple[Any, ...]:
        """Everything `sandbox` is built from (the config by identity): equal inputs, an equal sandbox."""
        return (id(self._config), self.paths, self.os_home, self.launch_cwd, self.cwd, self._trusted_local())

    @property
    def state(self) -> StateDB:
        if self._state is None:
            from .state import StateDB

            self.paths.ensure_dir(self.paths.data_dir)
            self._state, self._state_lent = StateDB(self.paths.state_db), False
        return self._state

    def http_client(self, **options: Any) -> GuardedClient:
        """A client that goes through the network guard, honouring `[fermix_core.net] allowed_private_hosts`.

        `options` are `guarded_client`'s limits (`max_body`, `connect_timeout`, `follow_redirects`, ...).
        """
        options.setdefault("allowed_private_hosts", tuple(self.config.fermix_core.net.allowed_private_hosts))
        if self.http_factory is not None:
            return self.http_factory(**options)
        from .net.guarded import guarded_client

        return guarded_client(**options)

    def now(self) -> datetime:
        return self.clock()

    def derive(
        self,
        *,
        share_sandbox: bool = False,
        state: StateDB | None = None,
        own_state: bool = False,
        **changes: Any,
    ) -> ToolContext:
        """A narrowed child context (subagent, skill, job). Narrowing only narrows.

        The child builds its own sandbox on first use. With `share_sandbox` it reuses this context's
        instead, where one is built and the child's would be built from the same inputs (a run's context
        for the turn that just built one): the sandbox is then as fresh as this context's.

        The state connection: by default the child uses this context's (if it has one open); `state`
        lends it another (one its lender takes back); `own_state` makes it open its own on first use.
        Only a connection the child opened itself is closed by its `close`.
        """
        child = self.replace(_sandbox=None, _home=None, **changes)  # the pinned home stays the parent's
        if own_state:
            child._state, child._state_lent = None, False
        elif state is not None:
            child._state, child._state_lent = state, True
        else:
            child._state_lent = child._state is not None
        if "allowed_tools" in changes and self.allowed_tools is not None:
            mine = changes["allowed_tools"]
            child.allowed_tools = self.allowed_tools if mine is None else self.allowed_tools & mine
        if "policy_ceiling" in changes and self.policy_ceiling is not None:
            mine = changes["policy_ceiling"]
            child.policy_ceiling = self.policy_ceiling if mine is None else self.policy_ceiling & mine
        if self.trust == "guest":
            child.trust = "guest"
        if (
            share_sandbox
            and self._sandbox is not None
            and child._config is self._config
            and child._sandbox_inputs() == self._sandbox_inputs()
        ):
            child._sandbox = self._sandbox
        return child

    def pin_home(self) -> None:
        """Remember the home as it is now, for `verify_home` (a call about to run)."""
        from .homecheck import HomeIdentity

        if self._home is not None:
            self._home.release()
        self._home = HomeIdentity.capture(self.paths.data_dir)

    def verify_home(self) -> None:
        """Raise `home_vanished` if the home pinned (or the state.db opened) is gone or replaced."""
        if self._home is not None:
            self._home.check()
        if self._state is not None:
            self._state.check_home()

    def close(self) -> None:
        if self._home is not None:
            self._home.release()
            self._home = None
        if self._state is not None:
            if not self._state_lent:
                self._state.close()
            self._state, self._state_lent = None, False
