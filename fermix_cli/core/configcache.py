"""Validated config values cached between calls, so a per-call CLI skips pydantic on the hot path.

Defining and building the pydantic models of every config section costs tens of milliseconds, which
`fermix tool NAME` would pay on every call. A full validation stores its values here, keyed by the
SHA-256 of config.toml's exact bytes and a fingerprint of the code that defines and checks the schema;
any change to either is a miss, and a miss validates in full (failing closed as always). A hit returns
a read-only `ConfigView` of the same values without importing the models at all. The cache file lives
in fermix's protected run directory, is written atomically and is mode 0600.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from .. import __version__
from .paths import make_private_dirs

try:  # hashlib's own SHA-256: importing hashlib loads OpenSSL first, some 2 ms of every tool call
    from _sha256 import sha256  # Python 3.11 (3.12 renamed it)
except ImportError:  # pragma: no cover - another Python
    from hashlib import sha256

if TYPE_CHECKING:
    from pydantic import BaseModel

    from .config import Config

CACHE_NAME = "config-validated.json"
SECTION = "__section__"
_FINGERPRINT: list[str] = []


class ConfigView:
    """A validated config section: attribute access like the pydantic model it was dumped from."""

    __slots__ = ("_values",)

    def __init__(self, values: dict[str, Any]) -> None:
        object.__setattr__(self, "_values", values)

    def __getattr__(self, name: str) -> Any:
        try:
            return self._values[name]
        except KeyError:
            raise AttributeError(name) from None

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("config values are read-only")

    def __iter__(self) -> Iterator[tuple[str, Any]]:
        return iter(self._values.items())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ConfigView) and self.model_dump() == other.model_dump()

    def __repr__(self) -> str:
        return f"ConfigView({self.model_dump()!r})"

    def model_dump(self, mode: str = "python") -> dict[str, Any]:
        return {k: _plain(v) for k, v in self._values.items()}


def _plain(value: Any) -> Any:
    if isinstance(value, ConfigView):
        return value.model_dump()
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def encode(value: Any) -> Any:
    """A JSON tree of validated values in which each model is marked as a section."""
    from pydantic import BaseModel

    if isinstance(value, BaseModel):
        return {SECTION: {name: encode(getattr(value, name)) for name in type(value).model_fields}}
    if isinstance(value, dict):
        return {k: encode(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [encode(v) for v in value]
    return value


def decode(tree: Any) -> Any:
    if isinstance(tree, dict):
        if set(tree) == {SECTION}:
            return ConfigView({k: decode(v) for k, v in tree[SECTION].items()})
        return {k: decode(v) for k, v in tree.items()}
    if isinstance(tree, list):
        return [decode(v) for v in tree]
    return tree


def _fingerprint() -> str:
    """The schema's identity: fermix's version and the source of the modules that define and check it."""
    if not _FINGERPRINT:
        h = sha256(__version__.encode())
        here = Path(__file__).parent
        for name in ("config.py", "configcache.py", "netguard.py", "iptable.py"):
            try:
                h.update((here / name).read_bytes())
            except OSError:
                h.update(name.encode())
        _FINGERPRINT.append(h.hexdigest())
    return _FINGERPRINT[0]


def _read(cache_dir: Path, key: str) -> Any:
    try:
        with open(cache_dir / CACHE_NAME, encoding="utf-8") as f:
            entry = json.load(f)
    except (OSError, ValueError):
        return None
    if not isinstance(entry, dict) or entry.get("key") != key:
        return None
    return entry.get("tree")


def _write(cache_dir: Path, key: str, tree: Any) -> None:
    """Best effort: a cache that cannot be written only costs the next call a full validation."""
    try:
        make_private_dirs(cache_dir)
        tmp = cache_dir / f".{CACHE_NAME}.{os.getpid()}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump({"key": key, "tree": tree}, f, separators=(",", ":"))
        os.replace(tmp, cache_dir / CACHE_NAME)
    except OSError:
        pass


def load_config_cached(path: Path, cache_dir: Path) -> Config:
    """The validated config of `path`, from the cache when this exact file was validated before."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raw = b""
    except OSError:
        raw = None  # unreadable: the full load reports it
    key = f"{_fingerprint()}:{sha256(raw).hexdigest()}" if raw is not None else ""
    tree = _read(cache_dir, key) if key else None
    if isinstance(tree, dict) and SECTION in tree:
        return cast("Config", decode(tree))
    from .config import load_config

    config = load_config(path)
    if key:
        _write(cache_dir, key, encode(cast("BaseModel", config)))
    return config
