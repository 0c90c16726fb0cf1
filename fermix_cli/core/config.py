"""config.toml: read with tomllib, validated by fermix's `Params` (like tool input), written with tomli-w.

Each family declares its own sections where it lives, as `CONFIG_SECTIONS` (a dotted table name ->
its `Params` class, or a `dict[Name, Section]` for named blocks); the kernel declares `[sandbox]`,
`[fermix_core.net]` and `[fermix_core.tools.tool_search]` here. `root_class()` composes the root
model from the catalog, kernel first, so a new family edits no file in `core/`. Validation is as
strict as ever: an unknown key anywhere is an error, and an invalid file never runs with defaults,
failing closed with an error naming the key.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any, Literal, Self, cast

from .catalog import Catalog, default_catalog

try:  # hashlib's own SHA-256: importing hashlib loads OpenSSL first, some 2 ms of every tool call
    from _sha256 import sha256  # Python 3.11 (3.12 renamed it)
except ImportError:  # pragma: no cover - another Python
    from hashlib import sha256
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


def _sandbox_root(entry: str) -> str:
    if entry.startswith("/") or entry == "~" or entry.startswith("~/"):
        return entry
    # Relative to what? The directory fermix happens to start in (a cron job's, a service's): one entry
    # would name a different directory on every launch, so it is refused, never guessed.
    raise ValueError(
        f"{entry!r} is a relative path, which would name a different directory depending on where fermix "
        "starts; write an absolute path (/...) or one under your home (~/...)"
    )


SandboxRoot = Annotated[str, Field(min_length=1, max_length=4096), AfterValidator(_sandbox_root)]
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
    # Absolute or `~/...` only. A relative blocked root is refused too (the whole config, so fermix does
    # not run): which directory it blocks cannot be known, and guessing one could leave the right one open.
    allowed_roots: list[SandboxRoot] = []
    blocked_roots: list[SandboxRoot] = []
    env: SandboxEnv = Field(default_factory=SandboxEnv)


class NetConfig(Section):
    # Exact host names or IP literals the network guard lets through although they are not global.
    allowed_private_hosts: list[AllowedHost] = []


class ToolSearchConfig(Section):
    """`[fermix_core.tools.tool_search]`: deferral of plugin and MCP tool schemas (core/deferral.py)."""

    enabled: bool = True


CONFIG_SECTIONS: dict[str, Any] = {
    "sandbox": SandboxConfig,
    "fermix_core.net": NetConfig,
    "fermix_core.tools.tool_search": ToolSearchConfig,
}


class Config(Section):
    """The root of config.toml; its tables come from the catalog (`root_class`), so read it as Any."""


class _LazySection:
    """A family's section that the file does not name: its module is imported when the section is read."""

    lazy_default = True  # Params builds it on first read, like a nested model's default

    def __init__(self, module: str, dotted: str) -> None:
        self.module = module
        self.dotted = dotted

    def __call__(self) -> Any:
        import importlib

        section = importlib.import_module(self.module).CONFIG_SECTIONS[self.dotted]
        return section() if isinstance(section, type) else {}  # a Section, or named blocks (a dict)


def _table_class(path: tuple[str, ...], children: dict[str, Any]) -> type[Section]:
    """A Section for the table at `path` whose fields are `children` (name -> class, dict type or table)."""
    annotations: dict[str, Any] = {}
    namespace: dict[str, Any] = {"__annotations__": annotations, "__module__": __name__}
    for name, child in children.items():
        if isinstance(child, dict):
            child = _table_class((*path, name), child)
        if isinstance(child, _LazySection):  # absent from the file, so nothing to validate
            annotations[name] = Any
            namespace[name] = Field(default_factory=child)
            continue
        annotations[name] = child
        namespace[name] = Field(default_factory=child) if isinstance(child, type) else {}  # or a dict
    if not path:
        return type("Config", (Config,), namespace)
    title = "".join(part.title().replace("_", "") for part in path)
    return type(f"{title}Config", (Section,), namespace)


_ROOTS: dict[tuple[tuple[str, ...], tuple[str, ...]], type[Config]] = {}


def _names(data: dict[str, Any], dotted: str) -> bool:
    """Whether the document has the table `dotted` (or anything at that key)."""
    node: Any = data
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
    return True


def root_class(catalog: Catalog | None = None, data: dict[str, Any] | None = None) -> type[Config]:
    """The root model of config.toml: the kernel's sections, then each family's in catalog order.

    With `data`, a family whose tables the document does not name is not imported: its sections are
    built from their defaults when first read. The tables themselves all exist either way, so an
    unknown key is refused as before.
    """
    if catalog is None:
        catalog = default_catalog()
    modules = tuple(m for m in catalog.config_modules if m != __name__)
    needed = tuple(
        m
        for m in modules
        if data is None
        or m not in catalog.config_tables
        or any(_names(data, t) for t in catalog.config_tables[m])
    )
    root = _ROOTS.get((modules, needed))
    if root is None:
        real = dict(catalog.declared("CONFIG_SECTIONS", needed))
        declared = [(__name__, CONFIG_SECTIONS)]
        for m in modules:  # catalog order either way, so the tables keep their places
            lazy = {dotted: _LazySection(m, dotted) for dotted in catalog.config_tables.get(m, ())}
            declared.append((m, real.get(m, lazy)))
        tree: dict[str, Any] = {}
        owner: dict[str, str] = {}
        for module, sections in declared:
            for dotted, section in sections.items():
                *parents, leaf = dotted.split(".")
                node = tree
                for i, part in enumerate(parents):
                    node = node.setdefault(part, {})
                    if not isinstance(node, dict):
                        raise TypeError(f"{module}: [{dotted}] is inside [{'.'.join(parents[: i + 1])}]")
                if leaf in node:
                    raise TypeError(
                        f"[{dotted}] is declared by {owner.get(dotted, 'another module')} and {module}"
                    )
                node[leaf] = section
                owner[dotted] = module
        root = _ROOTS[(modules, needed)] = cast("type[Config]", _table_class((), tree))
    return root


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


def validate_config(data: dict[str, Any], source: str = "config.toml", catalog: Catalog | None = None) -> Any:
    """Validate parsed TOML against the composed root; the error names the first offending key."""
    try:
        if not data:  # no file, or an empty one: every section from its defaults, built when first read
            return root_class(catalog, data)()
        return root_class(catalog, data).model_validate(data)
    except ValidationError as e:
        raise _config_error(e, source) from None
    except RecursionError:
        raise ToolError(
            "invalid_config", f"{source}: nested too deeply to check; fermix refuses to run on it.", {}
        ) from None
    except ToolError as e:  # a section's own check, naming its key
        if e.code != "invalid_config":
            raise
        raise ToolError(e.code, f"{source}: {e.message}", e.details) from None


MAX_CONFIG_BYTES = 4 * 1024 * 1024


def _read_config_bytes(path: Path) -> bytes | None:
    """config.toml's bytes, None when it does not exist; a FIFO or device is refused, never waited on."""
    import stat

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as e:
        raise ToolError(
            "invalid_config", f"{path}: cannot read ({e.strerror})", {"path": str(path)}
        ) from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ToolError(
                "invalid_config", f"{path}: not a regular file; config.toml must be one.", {"path": str(path)}
            )
        with os.fdopen(os.dup(fd), "rb") as f:
            data = f.read(MAX_CONFIG_BYTES + 1)
    except OSError as e:
        raise ToolError(
            "invalid_config", f"{path}: cannot read ({e.strerror})", {"path": str(path)}
        ) from None
    finally:
        os.close(fd)
    if len(data) > MAX_CONFIG_BYTES:
        raise ToolError(
            "invalid_config",
            f"{path}: larger than {MAX_CONFIG_BYTES} bytes; not a config file.",
            {"path": str(path)},
        )
    return data


def read_raw(path: Path, cache_dir: Path | None = None) -> dict[str, Any]:
    """The parsed TOML document, or {} when the file does not exist.

    With `cache_dir`, the parsed document is kept there as JSON keyed by the SHA-256 of the file's exact
    bytes: importing tomllib compiles its regular expressions, some 8 ms that every tool call would pay
    to read a file that rarely changes. Only parsing is cached; the document is validated on every load.
    """
    data = _read_config_bytes(path)
    if data is None:
        return {}
    if not data.strip():
        return {}
    key = sha256(data).hexdigest()
    if cache_dir is not None:
        cached = _parsed_cached(cache_dir, key)
        if cached is not None:
            return cached
    doc = _parse_toml(path, data)
    if cache_dir is not None and _json_exact(doc):
        _store_parsed(cache_dir, key, doc)
    return doc


def _parse_toml(path: Path, data: bytes) -> dict[str, Any]:
    import tomllib

    try:
        return tomllib.loads(data.decode("utf-8"))
    except RecursionError:
        raise ToolError(
            "invalid_config",
            f"{path}: nested too deeply to read. Fix the file; fermix refuses to run on a config it cannot read.",
            {"path": str(path)},
        ) from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise ToolError(
            "invalid_config",
            f"{path}: not valid TOML ({e}). Fix the file; fermix refuses to run on a config it cannot read.",
            {"path": str(path)},
        ) from None


PARSED_CACHE = "config-parsed.json"


def _parsed_cached(cache_dir: Path, key: str) -> dict[str, Any] | None:
    import json

    try:
        with open(cache_dir / PARSED_CACHE, encoding="utf-8") as f:
            entry = json.load(f)
    except (OSError, ValueError, RecursionError):
        return None
    if isinstance(entry, dict) and entry.get("sha256") == key and isinstance(entry.get("document"), dict):
        return cast("dict[str, Any]", entry["document"])
    return None


def _json_exact(node: Any) -> bool:
    """True when JSON gives `node` back unchanged (TOML dates and times do not survive it)."""
    if isinstance(node, dict):
        return all(_json_exact(v) for v in node.values())
    if isinstance(node, list):
        return all(_json_exact(v) for v in node)
    return isinstance(node, str | int | float | bool)


def _store_parsed(cache_dir: Path, key: str, doc: dict[str, Any]) -> None:
    """Best effort, atomically and 0600: a cache that cannot be written only costs the next call a parse."""
    import json

    from .fsops import replace_at
    from .paths import make_private_dirs

    data = json.dumps({"sha256": key, "document": doc}, separators=(",", ":")).encode()
    try:
        make_private_dirs(cache_dir)
        dfd = os.open(cache_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            # Written unnamed where O_TMPFILE allows: a kill midway leaves no temp file in run/.
            replace_at(dfd, PARSED_CACHE, data, mode=0o600, fsync=False)
        finally:
            os.close(dfd)
    except OSError:
        return  # the next call parses again (and tries to store the result again)


def load_config(path: Path, catalog: Catalog | None = None, cache_dir: Path | None = None) -> Any:
    """Read and validate config.toml (`cache_dir`: see `read_raw`)."""
    return validate_config(read_raw(path, cache_dir), str(path), catalog)


def load_section(path: Path, keys: tuple[str, ...]) -> Any:
    """One section of config.toml (`("fermix_core", "jobs")`), validated as strictly as in the whole file.

    For a caller that must go on while another section is invalid (a jobs tick records that error on
    the runs it starts). A section that is not a table is reported by the full check.
    """
    import typing

    data = read_raw(path)
    cls: Any = root_class()
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


def read_document(path: Path) -> Any:
    """config.toml as an editable tomlkit document (comments, order and layout kept); empty when absent.

    Read as strictly as `read_raw` (a regular file, the size limit, TOML that tomllib accepts).
    """
    import tomlkit
    from tomlkit.exceptions import TOMLKitError

    data = _read_config_bytes(path)
    if data is None:
        return tomlkit.document()
    _parse_toml(path, data)  # tomllib's verdict, the same as every reader's
    try:
        return tomlkit.parse(data.decode("utf-8"))
    except TOMLKitError as e:  # a document tomllib took but tomlkit cannot lay out again
        raise ToolError(
            "invalid_config", f"{path}: cannot be edited in place ({e}). Fix the file.", {"path": str(path)}
        ) from None


def write_document(path: Path, doc: Any) -> None:
    """Validate the tomlkit document, then write it atomically, as it is laid out.

    A config.toml that is a symlink stays one: its target is replaced (atomically, in the target's
    directory) and keeps its mode. A new file is created 0600 in a 0700 directory. Call it under the
    config lock (`grants.config_lock`): it removes the temp files killed writers left.
    """
    import stat

    import tomlkit

    validate_config(doc.unwrap(), str(path))
    text = tomlkit.dumps(doc)
    target = path
    if os.path.islink(path):
        target = Path(os.path.realpath(path))
    else:
        from .paths import make_private_dirs

        make_private_dirs(path.parent)
    try:
        mode = stat.S_IMODE(os.stat(target).st_mode)
    except FileNotFoundError:
        mode = 0o600
    _sweep_temps(target, everything=target == path)
    # A random name: a pid is reused (a fresh PID namespace starts the same way every time), so a temp
    # file left by a killed writer would otherwise stop every later write from that pid.
    tmp = target.with_name(f".{target.name}.tmp-{os.urandom(6).hex()}")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except OSError as e:
        raise ToolError(
            "write_failed",
            f"cannot write {target}{f' (the target of {path})' if target != path else ''}: {e.strerror}. "
            "Nothing was changed",
            {"path": str(target)},
        ) from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            if mode != 0o600:
                os.fchmod(f.fileno(), mode)
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException as e:
        tmp.unlink(missing_ok=True)
        if isinstance(e, OSError):  # a full or read-only disk: say which file, and that nothing changed
            raise ToolError(
                "write_failed",
                f"cannot write {target}{f' (the target of {path})' if target != path else ''}: "
                f"{e.strerror or e}. Nothing was changed",
                {"path": str(target)},
            ) from None
        raise


# A temp file of config.toml older than this is a killed writer's, wherever config.toml lives.
STALE_TEMP_SECONDS = 600


def _sweep_temps(target: Path, *, everything: bool) -> None:
    """Remove `.config.toml.tmp-*` files a killed writer left beside `target`.

    The caller holds the config lock, so with `everything` (config.toml in this home's own directory)
    no other writer can be using one. The target of a symlink may be shared with another home (and
    its lock), so there only old ones go.
    """
    import time

    prefix = f".{target.name}.tmp-"
    try:
        names = [n for n in os.listdir(target.parent) if n.startswith(prefix)]
    except OSError:
        return
    for name in names:
        stale = target.parent / name
        try:
            st = os.lstat(stale)
            if everything or time.time() - st.st_mtime > STALE_TEMP_SECONDS:
                stale.unlink()
        except OSError:
            continue  # gone meanwhile, or not ours to remove: the write goes on under another name


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
