"""Where fermix keeps its files: one FERMIX_HOME, or the platform's user directories."""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from pathlib import Path
from typing import cast

from .errors import ToolError
from .records import Record

APP_NAME = "fermix"


class _Inside:
    """A path inside one of FermixPaths' directories, read like an attribute (`paths.state_db`)."""

    def __init__(self, directory: str, name: str) -> None:
        self.directory = directory
        self.name = name

    def __get__(self, paths: object, owner: type | None = None) -> Path:
        return cast("Path", getattr(paths, self.directory)) / self.name


class FermixPaths(Record, frozen=True):
    """The directories fermix uses. With FERMIX_HOME set, all three are that one directory."""

    config_dir: Path
    data_dir: Path
    log_dir: Path
    explicit_home: bool

    # Files and folders inside the three directories (class attributes, not fields).
    config_file = _Inside("config_dir", "config.toml")
    state_db = _Inside("data_dir", "state.db")
    workspace = _Inside("data_dir", "workspace")
    skills = _Inside("data_dir", "skills")
    media = _Inside("data_dir", "media")
    traces = _Inside("data_dir", "traces")
    run_dir = _Inside("data_dir", "run")
    log_file = _Inside("log_dir", "fermix.log")

    def homes(self) -> tuple[Path, ...]:
        """Every directory that is "the fermix home" for grant and protection rules."""
        seen: list[Path] = []
        for d in (self.data_dir, self.config_dir, self.log_dir):
            if d not in seen:
                seen.append(d)
        return tuple(seen)

    def check_homes(self) -> None:
        """Raise `home_not_directory` when a fermix home (or a directory above it) is a file."""
        for home in self.homes():
            blocker = not_a_directory(home)
            if blocker is not None:
                raise home_error(home, blocker, explicit=self.explicit_home)

    def ensure_dir(self, path: Path) -> Path:
        """Create a fermix directory (and its parents inside the home) with mode 0700."""
        try:
            return make_private_dirs(path)
        except NotADirectoryError:
            self.check_homes()  # the home itself is a file: say so
            raise


def make_private_dirs(path: Path | str) -> Path:
    """`mkdir -p` where every directory it creates gets mode 0700 (the XDG rule), not just the last.

    `Path.mkdir(parents=True)` and `os.makedirs` give the parents default modes, which would leave a
    fresh FERMIX_HOME readable by others.
    """
    target = Path(path)
    missing: list[Path] = []
    node = target
    while not node.exists() and node != node.parent:
        missing.append(node)
        node = node.parent
    for d in reversed(missing):
        with contextlib.suppress(FileExistsError):
            d.mkdir(mode=0o700)
    if not target.is_dir():
        raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(target))
    return target


def not_a_directory(path: Path) -> Path | None:
    """The deepest existing path at or above `path` when it is not a directory (what stops `path` from
    being one), else None (`path` is a directory, or can be created as one)."""
    node = path
    while True:
        try:
            st = os.stat(node)
        except (FileNotFoundError, NotADirectoryError):
            if node == node.parent:
                return None
            node = node.parent
            continue
        except OSError:
            return None  # unreadable: the call that needs it says so
        return None if stat.S_ISDIR(st.st_mode) else node


def home_error(home: Path, blocker: Path, *, explicit: bool) -> ToolError:
    """The `home_not_directory` ToolError (exit 1) for a home that `blocker`, a file, keeps from being one."""
    where = f"{blocker}" if blocker == home else f"{home} ({blocker} is not a directory)"
    fix = (
        "set FERMIX_HOME (or --home) to a directory"
        if explicit
        else f"move {blocker} aside, or set FERMIX_HOME to a directory"
    )
    return ToolError(
        "home_not_directory",
        f"fermix home is not a directory: {where}; {fix}",
        {"home": str(home), "path": str(blocker)},
    )


def resolve_paths(
    home: str | None = None, env: os._Environ[str] | dict[str, str] | None = None
) -> FermixPaths:
    """The paths for `--home DIR`, else FERMIX_HOME, else platformdirs (a blank value means unset)."""
    env = os.environ if env is None else env
    chosen = home if home else env.get("FERMIX_HOME", "").strip()
    if chosen:
        root = Path(os.path.abspath(os.path.expanduser(chosen)))
        return FermixPaths(config_dir=root, data_dir=root, log_dir=root / "logs", explicit_home=True)
    import platformdirs

    return FermixPaths(
        config_dir=Path(platformdirs.user_config_dir(APP_NAME, appauthor=False)),
        data_dir=Path(platformdirs.user_data_dir(APP_NAME, appauthor=False)),
        log_dir=Path(platformdirs.user_log_dir(APP_NAME, appauthor=False)),
        explicit_home=False,
    )


def os_home() -> str:
    """The real OS home of the current user (what `~` means to the sandbox)."""
    return os.path.expanduser("~")
