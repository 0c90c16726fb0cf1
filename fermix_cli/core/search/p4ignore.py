"""Perforce ignore settings for workspace walks: which rule files apply and which names to exclude.

Each setting is looked up in order: the nearest `P4CONFIG` file (searched from the walk root
upwards), then the `P4ENVIRO` file, then the process environment. The Windows registry is the
last source in Perforce itself; fermix does not read it, and macOS `p4 set` preferences are not read
either (expose them through one of the three sources above). Every read is bounded.
"""

from __future__ import annotations

import os
import posixpath
import sys
from collections.abc import Mapping

from ..records import Record

DEFAULT_IGNORE_FILES = (".p4ignore", "p4ignore.txt")
MAX_SETTINGS_BYTES = 64 * 1024
MAX_RULE_BYTES = 1024 * 1024
MAX_IGNORE_FILES = 16
MAX_CONFIG_LEVELS = 64


class P4Rules(Record, frozen=True):
    """What a walk needs to know about Perforce."""

    ignore_names: tuple[str, ...] = DEFAULT_IGNORE_FILES  # looked up in every directory walked
    global_files: tuple[str, ...] = ()  # absolute rule files, applied from the walk root
    excluded_names: frozenset[str] = frozenset({".p4root"})
    source: str = "default"  # where P4IGNORE came from: p4config, p4enviro, environment or default


def read_bounded(path: str, limit: int) -> str | None:
    """The first `limit` bytes of a regular file as text, or None when it cannot be read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        import stat

        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return os.read(fd, limit).decode("utf-8", "replace")
    except OSError:
        return None
    finally:
        os.close(fd)


def parse_settings(text: str) -> dict[str, str]:
    """`NAME=value` lines of a P4CONFIG or P4ENVIRO file; comments and blank values are dropped."""
    out: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        name, value = line.split("=", 1)
        if value.strip():
            out[name.strip()] = value.strip()
    return out


def _default_enviro(home: str, platform: str) -> str | None:
    # Only non-macOS POSIX systems have a default P4ENVIRO; Windows and macOS need it set explicitly.
    if platform.startswith(("win", "darwin", "cygwin")):
        return None
    return posixpath.join(home, ".p4enviro")


def _find_config(start: str, name: str) -> str | None:
    d = start
    for _ in range(MAX_CONFIG_LEVELS):
        candidate = posixpath.join(d, name)
        if os.path.isfile(candidate):
            return candidate
        parent = posixpath.dirname(d)
        if parent == d:
            return None
        d = parent
    return None


def resolve_p4(
    start: str,
    *,
    env: Mapping[str, str] | None = None,
    home: str | None = None,
    platform: str | None = None,
) -> P4Rules:
    """The Perforce rules for a walk rooted at the absolute directory `start`."""
    env = os.environ if env is None else env
    home = home if home is not None else os.path.expanduser("~")
    platform = platform or sys.platform
    enviro_path = env.get("P4ENVIRO") or _default_enviro(home, platform)
    enviro: dict[str, str] = {}
    if enviro_path:
        text = read_bounded(enviro_path, MAX_SETTINGS_BYTES)
        enviro = parse_settings(text) if text else {}
    config_name = (enviro.get("P4CONFIG") or env.get("P4CONFIG") or "").strip()
    if "/" in config_name:
        config_name = posixpath.basename(config_name)
    config: dict[str, str] = {}
    if config_name:
        found = _find_config(start, config_name)
        text = read_bounded(found, MAX_SETTINGS_BYTES) if found else None
        config = parse_settings(text) if text else {}
    value, source = None, "default"
    for where, settings in (("p4config", config), ("p4enviro", enviro), ("environment", env)):
        if settings.get("P4IGNORE", "").strip():
            value, source = settings["P4IGNORE"], where
            break
    excluded = {".p4root"}
    if config_name:
        excluded |= {".p4config", config_name}
    if value is None:
        return P4Rules(excluded_names=frozenset(excluded))
    names: list[str] = []
    globals_: list[str] = []
    for item in (part.strip() for part in value.split(";")):
        if not item or len(names) + len(globals_) >= MAX_IGNORE_FILES:
            continue
        if item.startswith("~/"):
            item = posixpath.join(home, item[2:])
        if item.startswith("/"):
            globals_.append(item)
        elif "/" in item:
            globals_.append(posixpath.normpath(posixpath.join(start, item)))
        else:
            names.append(item)
    return P4Rules(tuple(names), tuple(globals_), frozenset(excluded), source)


def translate_rules(text: str) -> list[str]:
    """Perforce ignore lines as gitignore lines: `...` (any depth) becomes `**`."""
    return [line.replace("...", "**") for line in text.splitlines()]
