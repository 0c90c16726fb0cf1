"""The path half of the sandbox: modes, roots, protected and blocked paths, and every path decision.

This is an in-process policy gate, not an OS jail. Tools never judge paths themselves: they ask
`Sandbox.read_path`, `write_path`, `working_dir` or `filter_paths`.
"""

from __future__ import annotations

import contextlib
import os
import posixpath
import re
from typing import TYPE_CHECKING, Literal

from .errors import ToolError
from .hardlinks import linked_file_id, protected_link_ids
from .pathcanon import canonicalize, canonicalize_many, is_inside
from .paths import FermixPaths, make_private_dirs
from .records import Record, field

if TYPE_CHECKING:
    from .config import SandboxConfig

Mode = Literal["strict", "standard", "open"]

OS_PROTECTED = (
    "/etc", "/usr", "/bin", "/sbin", "/System", "/Library",
    "/boot", "/dev", "/proc", "/sys", "/lib", "/lib64", "/var/lib", "/private/etc", "/private/var/db",
    # crontab spools (Linux, macOS): a line there runs on schedule
    "/var/spool/cron", "/var/at", "/private/var/at",
)  # fmt: skip

HOME_PROTECTED = (
    ".ssh", ".aws", ".gnupg", ".docker", ".kube", ".codex", ".anthropic", ".config/fermix",
    ".claude.json", ".claude/.credentials.json", ".claude/.claude.json",
    ".gitconfig", ".config/git", ".git-credentials",
    ".netrc", ".config/gh", ".npmrc", ".pypirc", ".pgpass",
    ".config/gcloud", ".azure",
    ".password-store", ".local/share/keyrings",
    ".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile", ".zshrc", ".zshenv",
    ".zprofile", ".zlogin", ".config/fish", ".inputrc", ".ssh/rc",
    # Code that runs the next time you log in, a session or a shell starts (Linux, macOS), beyond
    # the reference's list: autostart entries, user services, session and shell start-up files.
    ".config/autostart", ".config/systemd", ".local/share/systemd", ".config/environment.d",
    ".config/upstart", ".config/plasma-workspace", ".kde/Autostart", ".kde4/Autostart",
    ".config/lxsession", ".config/openbox/autostart", ".pam_environment",
    ".xprofile", ".xinitrc", ".xsession", ".xsessionrc", ".xserverrc", ".Xclients",
    "Library/LaunchAgents", "Library/LaunchDaemons", "Library/StartupItems",
    "Library/Application Support/com.apple.backgroundtaskmanagementagent",
    "Library/Preferences/com.apple.loginitems.plist", ".MacOSX",
    ".bash_aliases", ".zlogout", ".kshrc", ".mkshrc", ".cshrc", ".tcshrc", ".login", ".logout",
    ".config/nushell", ".xonshrc", ".config/xonsh", ".oh-my-zsh", ".config/direnv", ".direnvrc",
    # Tool start-up files that run code, and tool credentials.
    ".vimrc", ".config/nvim", ".emacs", ".emacs.d", ".config/emacs", ".gdbinit", ".config/gdb",
    ".lldbinit", ".ipython/profile_default/startup", ".tmux.conf", ".config/tmux", ".screenrc",
    ".cargo/config", ".cargo/credentials", ".m2/settings.xml", ".gradle/init.d",
    ".gradle/gradle.properties", ".config/pip", ".pip", ".yarnrc", ".curlrc", ".wgetrc",
    "Library/Keychains",
)  # fmt: skip

FERMIX_HOME_PROTECTED = (
    "config.toml", "auth.json", "chatgpt_host.json", "secrets", "secret_key_base", "setup-token",
    "setup-launch-token.json", "acp_identities", "mobile", "plugins/run", "browser/profiles",
    "bootstrap", "memory.db", "state.db", "grants", "logs", "traces", "daemon.sock", "run",
)  # fmt: skip

# Never grantable even though they are not on the protected list themselves.
UNSAFE_EXTRA = ("/proc", "/sys", "/dev")
# Where a protected entry may end inside a longer path: `~/.ssh/…`, `.env.local`, `state.db-wal`.
_ENTRY_END = re.compile(r"[/.\-]")


RootSource = Literal["mode", "cwd", "granted"]


class Root(Record, frozen=True):
    path: str
    source: RootSource


class Decision(Record):
    allowed: bool
    code: str | None = None
    path: str = ""


class Sandbox(Record):
    """Effective sandbox for one call: built from config, the fermix paths and the request."""

    mode: Mode
    paths: FermixPaths
    home: str
    launch_cwd: str
    request_cwd: str | None = None
    trusted_local: bool = True
    allowed_roots: tuple[str, ...] = ()
    blocked_roots_raw: tuple[str, ...] = ()
    refused_grants: tuple[str, ...] = ()
    _roots: list[Root] | None = field(default=None, repr=False)
    _blocked: list[str] | None = field(default=None, repr=False)
    _protected: list[str] | None = field(default=None, repr=False)
    _protected_low: tuple[str, ...] | None = field(default=None, repr=False)
    _protected_set: frozenset[str] | None = field(default=None, repr=False)
    _link_ids: frozenset[tuple[int, int]] | None = field(default=None, repr=False)
    _link_ids_known: bool = field(default=False, repr=False)

    @classmethod
    def from_config(
        cls,
        cfg: SandboxConfig,
        paths: FermixPaths,
        *,
        home: str,
        launch_cwd: str,
        request_cwd: str | None = None,
        trusted_local: bool = True,
    ) -> Sandbox:
        return cls(
            mode=cfg.mode,
            paths=paths,
            home=home,
            launch_cwd=launch_cwd,
            request_cwd=request_cwd,
            trusted_local=trusted_local,
            allowed_roots=tuple(cfg.allowed_roots),
            blocked_roots_raw=tuple(cfg.blocked_roots),
        )

    def sibling(self, *, request_cwd: str | None, trusted_local: bool) -> Sandbox:
        """The sandbox of a context that differs from this one's only in its request cwd or trust
        (a delegated run's): the protected paths, blocked roots and protected link ids computed so far
        are shared as they are, the roots are its own. The lists are computed here if they were not
        yet, so this sandbox keeps them for its next sibling."""
        self.protected, self.blocked_roots  # noqa: B018
        return self.replace(
            request_cwd=request_cwd, trusted_local=trusted_local, refused_grants=(), _roots=None
        )

    # ----- the lists -------------------------------------------------------------------------

    def _expand(self, raw: str) -> str:
        if raw == "~" or raw.startswith("~/"):
            raw = self.home + raw[1:]
        return raw

    @property
    def protected(self) -> list[str]:
        """Protected entries, literal and canonical (on macOS /etc is really /private/etc)."""
        if self._protected is None:
            entries: list[str] = list(OS_PROTECTED)
            entries += [posixpath.join(self.home, p) for p in HOME_PROTECTED]
            for base in {str(self.paths.data_dir), str(self.paths.config_dir)}:
                entries += [posixpath.join(base, p) for p in FERMIX_HOME_PROTECTED]
            if self.paths.config_dir != self.paths.data_dir:
                entries.append(str(self.paths.config_dir))
            entries.append(str(self.paths.log_dir))
            absolute = [e if e.startswith("/") else os.path.abspath(e) for e in entries]
            forms: dict[str, None] = {}  # each entry's literal and canonical forms, once each, in order
            for literal, canonical in zip(entries, canonicalize_many(absolute), strict=True):
                forms.setdefault(literal)
                if canonical:
                    forms.setdefault(canonical)
            self._protected = list(forms)
        return self._protected

    @property
    def protected_lower(self) -> tuple[str, ...]:
        """The protected entries lower-cased (the test is case-insensitive), computed once."""
        if self._protected_low is None:
            self._protected_low = tuple(e.lower() for e in self.protected)
        return self._protected_low

    @property
    def blocked_roots(self) -> list[str]:
        if self._blocked is None:
            self._blocked = [
                c for c in (_safe_canon(self._abs(self._expand(r))) for r in self.blocked_roots_raw) if c
            ]
        return self._blocked

    def _abs(self, p: str) -> str:
        return p if p.startswith("/") else posixpath.join(self.launch_cwd, p)

    @property
    def roots(self) -> list[Root]:
        """Mode roots, then request roots (standard only), then grants; minus blocked; de-duplicated."""
        if self._roots is None:
            cands: list[Root] = []
            if self.mode == "open":
                cands.append(Root(self.home, "mode"))
            else:
                cands.append(Root(str(self.paths.workspace), "mode"))
                if self.mode == "standard":
                    cands.append(Root(str(self.paths.skills), "mode"))
                    cwds = [self.launch_cwd]
                    if self.request_cwd and self.trusted_local:
                        cwds.append(self.request_cwd)
                    for c in cwds:
                        cc = _safe_canon(c)
                        if cc and cc != self.home and is_inside(cc, self.home):
                            cands.append(Root(cc, "cwd"))
            refused: list[str] = []
            for raw in self.allowed_roots:
                try:
                    granted, why = self.grant_refusal(self._abs(self._expand(raw)))
                except ToolError:
                    granted, why = raw, "cannot be resolved"
                if why is None:
                    cands.append(Root(granted, "granted"))
                else:
                    refused.append(raw)
            self.refused_grants = tuple(refused)
            out: list[Root] = []
            for r in cands:
                canon = _safe_canon(r.path)
                if not canon or any(is_inside(canon, b) for b in self.blocked_roots):
                    continue
                if all(o.path != canon for o in out):
                    out.append(Root(canon, r.source))
            self._roots = out
        return self._roots

    # ----- decisions -------------------------------------------------------------------------

    def is_protected(self, canonical: str) -> bool:
        """Whether the path is a protected entry or lies under one: the entry followed by `/`, `.` or
        `-` (`~/.ssh/id_rsa`, `.env.local`, `state.db-wal`), compared case-insensitively.

        Looks up each such prefix of the path in a set, so the cost follows the path's length, not
        the number of entries (some 140): every search result and file call passes through here."""
        low = canonical.lower()
        entries = self._protected_set
        if entries is None:
            entries = self._protected_set = frozenset(self.protected_lower)
        if low in entries:
            return True
        return any(low[: m.start()] in entries for m in _ENTRY_END.finditer(low))

    def decide(self, canonical: str) -> Decision:
        """First match wins: protected, blocked, inside a root, otherwise outside."""
        if self.is_protected(canonical):
            return Decision(False, "protected_path", canonical)
        if self.blocked_root_of(canonical) is not None:
            return Decision(False, "blocked_root", canonical)
        if any(is_inside(canonical, r.path) for r in self.roots):
            if self.is_link_to_protected(canonical):
                return Decision(False, "protected_path", canonical)
            return Decision(True, None, canonical)
        return Decision(False, "outside_root", canonical)

    def _protected_ids(self) -> frozenset[tuple[int, int]] | None:
        if not self._link_ids_known:
            owned = (self.home, str(self.paths.data_dir), str(self.paths.config_dir), str(self.paths.log_dir))
            entries = [e for e in self.protected if any(is_inside(e, base) for base in owned)]
            self._link_ids = protected_link_ids(entries)
            self._link_ids_known = True
        return self._link_ids

    def may_have_protected_links(self) -> bool:
        """False when no protected file has a second link, so no path needs `is_link_to_protected`.

        Lets a search skip one lstat per result; answers from the same walk `is_link_to_protected` uses.
        """
        ids = self._protected_ids()
        return ids is None or bool(ids)

    def is_link_to_protected(self, canonical: str) -> bool:
        """True for a hard link to a protected file under the home or fermix's dirs.

        Only regular files with more than one link are looked at; when the protected trees are too
        large to walk, every such file is refused (fail closed). OS directories are not walked:
        their files belong to root, and the kernel's protected_hardlinks stops a user linking them.
        """
        file_id = linked_file_id(canonical)
        if file_id is None:
            return False
        ids = self._protected_ids()
        return ids is None or file_id in ids

    def default_working_dir(self) -> str:
        """The launch cwd if allowed, else the workspace (created on demand), else the first root."""
        lc = _safe_canon(self.launch_cwd)
        if lc and self.decide(lc).allowed:
            return lc
        ws = str(self.paths.workspace)
        if self.mode != "open" or is_inside(ws, self.home):
            with contextlib.suppress(OSError):
                make_private_dirs(ws)
            canon = _safe_canon(ws)
            if canon and os.path.isdir(canon) and self.decide(canon).allowed:
                return canon
        return self.roots[0].path if self.roots else ws

    def turn_cwd(self) -> str:
        """The directory relative paths are taken from: the caller's directory (the request cwd, else the
        launch cwd) when it is allowed.

        A caller's directory that is not allowed is refused rather than swapped for another: a relative
        path typed in `/srv/project` must name a file there or nothing. Only an incidental directory (the
        filesystem root, the home itself or one of its ancestors: where cron, services and login shells
        start) falls back to the default working dir, as the reference's resolution order says.
        """
        caller = self.request_cwd or self.launch_cwd
        rc = _safe_canon(caller)
        if rc and self.decide(rc).allowed:
            return rc
        home = _safe_canon(self.home) or self.home
        if rc is None or is_inside(home, rc):
            return self.default_working_dir()
        raise self.cwd_denial(rc)

    def cwd_denial(self, cwd: str) -> ToolError:
        """The refusal for a relative path (or a default directory) asked from a directory outside the roots."""
        ws = str(self.paths.workspace)
        why = self.decide(cwd).code or "outside_root"
        return ToolError(
            "outside_root",
            f"The current directory {cwd} is outside the sandbox roots ({why}), so fermix will not resolve "
            "relative paths or run commands from it, and never silently uses another directory instead. "
            f"Use an absolute path inside a root, pass --cwd with a directory inside a root (the workspace is "
            f"{ws}), or allow this directory: fermix grant path {cwd} (a model can call "
            "request_directory_access). Run: fermix sandbox explain",
            {"cwd": cwd, "reason": why, "roots": [r.path for r in self.roots]},
        )

    def anchor(self, raw: object, *, reject_dotdot: bool = False) -> str:
        """Check the raw value, expand `~`, and make it absolute (not yet canonical)."""
        if not isinstance(raw, str) or not raw.strip():
            raise ToolError("invalid_path", "Path must be a non-empty string", {})
        if "\x00" in raw:
            raise ToolError("invalid_path", "Path contains null bytes", {})
        if len(raw) > 4096:
            raise ToolError("invalid_path", "Path is longer than 4096 characters", {})
        if len(raw) >= 2 and raw[1] == ":" and raw[0].isalpha():
            raise ToolError("invalid_path", f"Windows drive paths are not supported: {raw}", {"path": raw})
        if reject_dotdot and ".." in raw.split("/"):
            raise ToolError("invalid_path", "Path traversal is not allowed", {"path": raw})
        p = self._expand(raw)
        if not p.startswith("/"):
            p = posixpath.join(self.turn_cwd(), p)
        return posixpath.normpath(p) if not _has_dotdot(p) else p

    def resolve(self, raw: object, *, tool: str, write: bool = False, reject_dotdot: bool = False) -> str:
        """The canonical path for `raw`, or a ToolError saying why it is refused and how to recover."""
        canonical = canonicalize(self.anchor(raw, reject_dotdot=reject_dotdot))
        decision = self.decide(canonical)
        if not decision.allowed:
            raise self.denial(decision, tool=tool, write=write)
        if write and any(part.lower() == ".git" for part in canonical.split("/")):
            raise self.denial(
                Decision(False, "protected_path", canonical), tool=tool, write=write, git_dir=True
            )
        return canonical

    def read_path(self, raw: object, *, tool: str, reject_dotdot: bool = False) -> str:
        return self.resolve(raw, tool=tool, write=False, reject_dotdot=reject_dotdot)

    def write_path(self, raw: object, *, tool: str, reject_dotdot: bool = False) -> str:
        return self.resolve(raw, tool=tool, write=True, reject_dotdot=reject_dotdot)

    def working_dir(self, raw: object | None, *, tool: str) -> str:
        """A working directory for shell or git: allowed, and an existing directory."""
        path = self.turn_cwd() if raw is None else self.read_path(raw, tool=tool)
        if not os.path.isdir(path):
            raise ToolError(
                "missing_working_dir",
                f"Working directory does not exist or is not a directory: {path}",
                {"path": path},
            )
        return path

    def allows(self, canonical: str) -> bool:
        return self.decide(canonical).allowed

    def needs_checks_below(self, allowed_dir: str) -> bool:
        """False when nothing below an allowed directory can be denied, so a walk may skip checks.

        Below an allowed directory D, only a protected entry or blocked root that lies strictly
        inside D can deny a path (a shorter entry would already have denied D itself).
        """
        return self.denied_inside(allowed_dir) is not None

    def denied_inside(self, directory: str) -> Decision | None:
        """The first protected entry, else blocked root, that lies strictly inside the canonical
        `directory`, as the decision a path there gets (whether or not it exists yet); None if none."""
        prefix = directory.lower().rstrip("/") + "/"
        for entry, low in zip(self.protected, self.protected_lower, strict=True):
            if low.startswith(prefix):
                return Decision(False, "protected_path", entry)
        for root in self.blocked_roots:
            if root.lower().startswith(prefix):
                return Decision(False, "blocked_root", root)
        return None

    def denial(self, d: Decision, *, tool: str, write: bool, git_dir: bool = False) -> ToolError:
        p = d.path
        from .traces import record_sandbox_denial

        record_sandbox_denial(self.paths, tool=tool, code=d.code or "", path=p)
        if git_dir:
            msg = (
                f"Path is inside a .git directory, which file-writing tools never touch: {p}. "
                "Use the git tools instead."
            )
        elif d.code == "protected_path":
            msg = f"Path is protected by the sandbox: {p}. Run: fermix sandbox explain"
        elif d.code == "blocked_root":
            msg = f"Path is under a blocked root: {p}. Run: fermix sandbox explain"
        else:
            target = posixpath.dirname(p) if write else (p if os.path.isdir(p) else posixpath.dirname(p))
            lead = (
                f"Sandbox denied {tool} outside roots: {p}."
                if write
                else f"Path is outside the sandbox roots: {p}."
            )
            _, why = self.grant_refusal(target, blocked=False)
            if why is None:
                msg = (
                    f"{lead} To allow this directory, run: fermix grant path {target}, "
                    "or call the request_directory_access tool"
                )
            else:  # a grant would be refused: do not suggest one
                msg = (
                    f"{lead} {target} can never be granted ({why}); grant a directory inside it "
                    "(fermix grant path DIR) or work inside the roots. Run: fermix sandbox explain"
                )
        return ToolError(d.code or "outside_root", msg, {"path": p})

    # ----- grants ----------------------------------------------------------------------------

    def blocked_root_of(self, canonical: str) -> str | None:
        """The blocked root `canonical` lies in (or is), or None."""
        return next((b for b in self.blocked_roots if is_inside(canonical, b)), None)

    def grant_refusal(self, raw: str, *, blocked: bool = True) -> tuple[str, str | None]:
        """(canonical path, reason it cannot be granted or None).

        A path inside a blocked root is refused too (blocked roots beat grants, so such a grant would
        change nothing); with `blocked=False` the caller checks that itself, to say so with its own code.
        """
        canonical = canonicalize(self.anchor(raw))
        homes = [_safe_canon(str(h)) or str(h) for h in self.paths.homes()]
        home = _safe_canon(self.home) or self.home
        if canonical == "/":
            return canonical, "the filesystem root"
        if canonical == home:
            return canonical, "the home directory itself"
        if canonical in homes:
            return canonical, "the fermix home"
        for h in [home, *homes]:
            if is_inside(h, canonical):
                return canonical, f"an ancestor of {h}"
        if any(is_inside(canonical, u) for u in UNSAFE_EXTRA) or self.is_protected(canonical):
            return canonical, "a protected path"
        root = self.blocked_root_of(canonical) if blocked else None
        if root is not None:
            return canonical, f"inside the blocked root {root}"
        return canonical, None


def _has_dotdot(p: str) -> bool:
    return ".." in p.split("/")


def _safe_canon(p: str) -> str | None:
    try:
        return canonicalize(p if p.startswith("/") else os.path.abspath(p))
    except (ToolError, ValueError):
        return None
