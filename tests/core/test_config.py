"""config.toml: validation that fails closed and names the key; the config CLI."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from fermix_cli.core.config import load_config, parse_cli_value
from fermix_cli.core.errors import ToolError
from tests.conftest import Env


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ('[sandbox]\nmode = "wide-open"\n', "sandbox.mode"),
        ('[sandbox]\nallowed_roots = "/tmp"\n', "sandbox.allowed_roots"),
        ("[sandbox]\nallowed_roots = [1]\n", "sandbox.allowed_roots.0"),
        ('[sandbox]\nmodes = "open"\n', "sandbox.modes"),
        ('[sandbox.env]\nallow = ["A"]\nmode = 3\n', "sandbox.env.mode"),
        ('[fermix_core.net]\nallowed_private_hosts = "x"\n', "fermix_core.net.allowed_private_hosts"),
        ("[surprise]\nx = 1\n", "surprise"),
    ],
)
def test_invalid_config_names_the_key(tmp_path: Path, text: str, key: str) -> None:
    (tmp_path / "config.toml").write_text(text)
    with pytest.raises(ToolError) as e:
        load_config(tmp_path / "config.toml")
    assert e.value.code == "invalid_config"
    assert e.value.details["key"] == key
    assert key in e.value.message


def test_unparseable_toml_fails_closed(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text("[sandbox\nmode=")
    with pytest.raises(ToolError) as e:
        load_config(tmp_path / "config.toml")
    assert e.value.code == "invalid_config"


def test_tools_refuse_to_run_on_an_invalid_config(world: Env) -> None:
    world.fermix_home.mkdir()
    (world.fermix_home / "config.toml").write_text('[sandbox]\nmode = "yolo"\n')
    (world.project / "a.txt").write_text("x")
    r = world.tool("file_read", {"path": "a.txt"})
    assert r.code == 2
    assert r.error()["code"] == "invalid_config"
    assert "sandbox.mode" in r.error()["message"]


@pytest.mark.parametrize(
    ("text", "value"),
    [("true", True), ("5", 5), ('["a", "b"]', ["a", "b"]), ("standard", "standard"), ('"x y"', "x y")],
)
def test_cli_values(text: str, value: object) -> None:
    assert parse_cli_value(text) == value


def test_config_cli_round_trip(world: Env) -> None:
    assert world.run("config", "path").stdout.strip() == str(world.fermix_home / "config.toml")
    assert world.run("config", "get", "sandbox.mode").stdout.strip() == "standard"
    r = world.run("config", "set", "sandbox.mode", "strict")
    assert r.code == 0, r.stderr
    assert world.run("config", "get", "sandbox.mode").stdout.strip() == "strict"
    r = world.run("config", "set", "fermix_core.net.allowed_private_hosts", '["127.0.0.1"]')
    assert r.code == 0, r.stderr
    assert (
        world.run("config", "get", "fermix_core.net.allowed_private_hosts").stdout.strip() == '["127.0.0.1"]'
    )
    text = (world.fermix_home / "config.toml").read_text()
    assert 'mode = "strict"' in text
    assert (world.fermix_home / "config.toml").stat().st_mode & 0o777 == 0o600
    r = world.run("config", "unset", "sandbox.mode")
    assert r.code == 0
    assert world.run("config", "get", "sandbox.mode").stdout.strip() == "standard"


def test_config_set_refuses_an_invalid_value_and_keeps_the_file(world: Env) -> None:
    world.run("config", "set", "sandbox.mode", "open")
    before = (world.fermix_home / "config.toml").read_text()
    r = world.run("config", "set", "sandbox.mode", "chaos")
    assert r.code == 2
    assert r.error()["code"] == "invalid_config"
    r = world.run("config", "set", "sandbox.nonsense", "1")
    assert r.code == 2
    assert (world.fermix_home / "config.toml").read_text() == before


def test_config_get_unknown_key(world: Env) -> None:
    r = world.run("config", "get", "sandbox.nope")
    assert r.code == 2
    assert r.error()["code"] == "invalid_key"


def test_sandbox_mode_command(world: Env) -> None:
    assert world.run("sandbox", "mode", "strict").code == 0
    assert world.run("sandbox", "status").stdout.startswith("mode strict")
    r = world.run("sandbox", "mode", "sideways")
    assert r.code == 2


def test_sandbox_explain_json(world: Env) -> None:
    data = world.run("sandbox", "explain", "--json").json()
    assert data["mode"] == "standard"
    sources = {r["source"] for r in data["roots"]}
    assert {"mode", "cwd"} <= sources
    assert str(world.home / ".ssh") in data["protected"]
    text = world.run("sandbox", "explain").stdout
    assert "not an OS sandbox" in text and "fermix grant path" in text


def test_platformdirs_when_no_home_is_set(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from fermix_cli.core.paths import resolve_paths

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    p = resolve_paths(None, {"FERMIX_HOME": "  "})
    assert p.config_file == tmp_path / "cfg" / "fermix" / "config.toml"
    assert p.state_db == tmp_path / "data" / "fermix" / "state.db"
    assert p.workspace == tmp_path / "data" / "fermix" / "workspace"
    assert not p.explicit_home


def test_parsed_document_is_cached_by_the_files_bytes(tmp_path: Path) -> None:
    from fermix_cli.core.config import PARSED_CACHE, read_raw

    cfg, run = tmp_path / "config.toml", tmp_path / "run"
    cfg.write_text('[sandbox]\nmode = "strict"\n')
    assert read_raw(cfg, run) == {"sandbox": {"mode": "strict"}}
    assert (run / PARSED_CACHE).stat().st_mode & 0o777 == 0o600
    cfg.write_text('[sandbox]\nmode = "open"\n')  # new bytes: parsed again, never the stale document
    assert read_raw(cfg, run) == {"sandbox": {"mode": "open"}}
    (run / PARSED_CACHE).write_text("{not json")  # a broken cache only costs a parse
    assert read_raw(cfg, run) == {"sandbox": {"mode": "open"}}
    cfg.write_text("[x]\nwhen = 2026-12-02T01:00:00Z\n")  # TOML datetimes do not survive JSON: not cached
    assert read_raw(cfg, run)["x"]["when"].year == 2026
    assert read_raw(cfg, run)["x"]["when"].year == 2026
    cfg.write_text("not = [toml")
    with pytest.raises(ToolError) as e:
        read_raw(cfg, run)
    assert e.value.code == "invalid_config"


def test_the_parsed_cache_has_no_name_until_it_is_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process killed while it wrote run/.config-parsed.json.<pid>.tmp left it there for good: the data
    now goes into an unnamed (O_TMPFILE) file, so while it is written run/ shows no temp file."""
    from fermix_cli.core.config import PARSED_CACHE, read_raw

    cfg, run = tmp_path / "config.toml", tmp_path / "run"
    cfg.write_text('[sandbox]\nmode = "strict"\n')
    import json

    real_write, real_dump, real_dumps = os.write, json.dump, json.dumps
    seen: list[tuple[str, list[str]]] = []  # what run/ holds while the cache's data is made and written

    def write(fd: int, data: bytes) -> int:
        if b'"sha256"' in bytes(data):
            seen.append(("write", sorted(os.listdir(run))))
        return real_write(fd, data)

    def dump(*a: Any, **kw: Any) -> Any:
        seen.append(("json", sorted(os.listdir(run)) if run.exists() else []))
        return real_dump(*a, **kw)

    def dumps(*a: Any, **kw: Any) -> Any:
        seen.append(("json", sorted(os.listdir(run)) if run.exists() else []))
        return real_dumps(*a, **kw)

    monkeypatch.setattr(os, "write", write)
    monkeypatch.setattr(json, "dump", dump)
    monkeypatch.setattr(json, "dumps", dumps)
    assert read_raw(cfg, run) == {"sandbox": {"mode": "strict"}}
    cfg.write_text('[sandbox]\nmode = "open"\n')
    assert read_raw(cfg, run) == {"sandbox": {"mode": "open"}}
    monkeypatch.undo()
    assert [listing for _, listing in seen if set(listing) - {PARSED_CACHE}] == []
    assert ("write", [PARSED_CACHE]) in seen  # it was watched while the data went in
    assert os.listdir(run) == [PARSED_CACHE] and (run / PARSED_CACHE).stat().st_mode & 0o777 == 0o600


def test_a_tool_call_with_an_unchanged_config_imports_no_tomllib(tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = {**os.environ, "FERMIX_HOME": str(home), "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    home.mkdir()
    (home / "config.toml").write_text('[sandbox]\nmode = "standard"\n')
    probe = (
        "import sys, runpy; sys.argv = ['fermix', 'tool', 'file_write', '--json', "
        '\'{"path": "a.txt", "content": "x"}\']\n'
        "try:\n    runpy.run_module('fermix_cli', run_name='__main__')\n"
        "except SystemExit:\n    pass\n"
        "print('tomllib' in sys.modules, file=sys.stderr)"
    )
    first = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True)
    second = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True)
    assert first.stderr.strip().endswith("True"), first.stderr
    assert second.stderr.strip().endswith("False"), second.stderr


def test_a_call_imports_only_the_config_sections_its_file_names(tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = {**os.environ, "FERMIX_HOME": str(home), "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    home.mkdir()
    (home / "config.toml").write_text("[fermix_core.jobs]\nmax_concurrent_runs = 2\n")
    probe = (
        "import sys\nfrom fermix_cli.core.context import ToolContext\n"
        "ctx = ToolContext.for_cli()\nctx.config.sandbox.mode\n"
        "before = sorted(m for m in sys.modules if m.endswith('.config'))\n"
        "assert ctx.config.fermix_core.jobs.max_concurrent_runs == 2\n"
        "assert ctx.config.fermix_core.tools.web_search.backend == 'duckduckgo'  # a default, read late\n"
        "print(before)"
    )
    out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True)
    imported = out.stdout.strip()
    assert "fermix_cli.jobs.config" in imported and "fermix_cli.tools.web.config" not in imported


def test_every_sections_defaults_read_from_declarations_equal_validated_defaults() -> None:
    """`Section()` skips compiling checks (pydantic does not check defaults); it must build the same."""
    import importlib

    from fermix_cli.core.catalog import default_catalog
    from fermix_cli.core.params import Params

    seen = 0
    for module in default_catalog().config_modules:
        for section in importlib.import_module(module).CONFIG_SECTIONS.values():
            classes = [section] if isinstance(section, type) else []
            for cls in classes:
                fast, full = cls(), cls.model_validate({})
                assert fast == full and fast.model_dump() == full.model_dump(), cls.__name__
                for name, value in vars(full).items():
                    if isinstance(value, Params):
                        assert getattr(fast, name) == value
                seen += 1
    assert seen >= 10


def test_a_missing_or_empty_file_builds_every_section_from_declarations_without_compiling_checks(
    tmp_path: Path,
) -> None:
    """The common case (no config.toml) must not pay for validation: no section compiles its checks.

    Run in a fresh interpreter, since any earlier validation in this process compiles them for good.
    """
    probe = (
        "import importlib\n"
        "from pathlib import Path\n"
        "from fermix_cli.core.catalog import default_catalog\n"
        "from fermix_cli.core.config import load_config, root_class\n"
        "from fermix_cli.core.params import Params\n"
        "fast = 0\n"
        "for module in default_catalog().config_modules:\n"
        "    for cls in importlib.import_module(module).CONFIG_SECTIONS.values():\n"
        "        if isinstance(cls, type) and cls._defaults_only() is not None:\n"
        "            fast += 1\n"
        f"config = load_config(Path({str(tmp_path / 'absent.toml')!r}))\n"
        "config.sandbox.env.mode, config.fermix_core.jobs\n"
        "compiled = [c.__name__ for c in (type(config), type(config.sandbox), type(config.sandbox.env))\n"
        "            if '_plan' in c.__dict__]\n"
        "assert not compiled, compiled\n"
        "full = root_class(default_catalog()).model_validate({})\n"
        "assert config.model_dump() == full.model_dump()\n"
        "print(fast)\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert int(out.stdout) >= 10  # sections whose defaults are read straight from their declarations


COMMENTED = """\
# My fermix settings: keep these notes.
[sandbox]
# strict while travelling
mode = "standard"  # the default
allowed_roots = []

# Routing, tuned by hand.
[fermix_core.routing]
"""


def test_config_edits_keep_comments_and_layout(world: Env) -> None:
    grant = world.root / "granted"
    grant.mkdir()
    cfg = world.fermix_home / "config.toml"
    world.fermix_home.mkdir(mode=0o700)
    cfg.write_text(COMMENTED)
    os.chmod(cfg, 0o600)
    assert world.run("config", "set", "sandbox.mode", "strict").code == 0
    assert world.run("grant", "path", str(grant)).code == 0
    text = cfg.read_text()
    assert text == COMMENTED.replace('"standard"', '"strict"').replace("[]", f'["{grant}"]')
    assert world.run("revoke", "path", str(grant)).code == 0
    assert world.run("config", "unset", "sandbox.mode").code == 0
    text = cfg.read_text()
    for note in ("# My fermix settings", "# strict while travelling", "# Routing, tuned by hand."):
        assert note in text
    assert "mode =" not in text and "allowed_roots = []" in text


def test_config_edits_write_through_a_symlink(world: Env) -> None:
    real = world.root / "dotfiles" / "fermix.toml"
    real.parent.mkdir()
    real.write_text(COMMENTED)
    os.chmod(real, 0o640)
    world.fermix_home.mkdir(mode=0o700)
    link = world.fermix_home / "config.toml"
    link.symlink_to(real)
    r = world.run("config", "set", "sandbox.mode", "strict")
    assert r.code == 0, r.stderr
    assert link.is_symlink() and link.resolve() == real
    assert real.read_text() == COMMENTED.replace('"standard"', '"strict"')
    assert real.stat().st_mode & 0o777 == 0o640
    assert sorted(p.name for p in real.parent.iterdir()) == ["fermix.toml"]  # no temporary file left
    r = world.run("config", "set", "sandbox.mode", "chaos")  # validated before anything is written
    assert r.code == 2
    assert real.read_text() == COMMENTED.replace('"standard"', '"strict"')


def test_a_temp_file_left_by_a_killed_config_write_never_blocks_a_later_one(world: Env) -> None:
    """`fermix config set` killed after writing its temp file left `.config.toml.tmp-<pid>`; a later write
    from the same pid (a fresh PID namespace starts the same way every time) failed `File exists`. It
    now writes under a random name and removes what a killed writer left."""
    from fermix_cli.core.grants import update_config
    from fermix_cli.core.paths import resolve_paths

    paths = resolve_paths(str(world.fermix_home))
    paths.config_file.parent.mkdir(parents=True, exist_ok=True)
    paths.config_file.write_text("[fermix_core.jobs]\nmax_concurrent_runs = 2\n")
    left = [
        paths.config_file.with_name(f".config.toml.tmp-{os.getpid()}"),  # an older fermix's, this pid
        paths.config_file.with_name(".config.toml.tmp-0123456789ab"),
    ]
    for stale in left:
        stale.write_text("half a file")

    def change(doc: object) -> object:
        doc["fermix_core"]["jobs"]["max_concurrent_runs"] = 4  # type: ignore[index]
        return doc

    update_config(paths, change)
    assert "max_concurrent_runs = 4" in paths.config_file.read_text()
    assert sorted(p.name for p in paths.config_file.parent.iterdir() if ".tmp-" in p.name) == []
    r = world.run("config", "get", "fermix_core.jobs.max_concurrent_runs")
    assert r.code == 0 and r.stdout.strip() == "4", r.stderr


def test_a_full_disk_while_writing_config_names_the_file_and_changes_nothing(
    world: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno

    from fermix_cli.core.grants import update_config
    from fermix_cli.core.paths import resolve_paths

    paths = resolve_paths(str(world.fermix_home))
    paths.config_file.parent.mkdir(parents=True, exist_ok=True)
    paths.config_file.write_text("[fermix_core.jobs]\nmax_concurrent_runs = 2\n")
    real_fsync = os.fsync

    def disk_full(fd: int) -> None:
        if ".config.toml.tmp-" in os.readlink(f"/proc/self/fd/{fd}"):
            raise OSError(errno.ENOSPC, "No space left on device")
        real_fsync(fd)

    def change(doc: object) -> object:
        doc["fermix_core"]["jobs"]["max_concurrent_runs"] = 4  # type: ignore[index]
        return doc

    monkeypatch.setattr(os, "fsync", disk_full)
    with pytest.raises(ToolError) as e:
        update_config(paths, change)
    monkeypatch.setattr(os, "fsync", real_fsync)
    assert e.value.code == "write_failed"
    assert str(paths.config_file) in e.value.message and "No space left on device" in e.value.message
    assert paths.config_file.read_text() == "[fermix_core.jobs]\nmax_concurrent_runs = 2\n"
    assert [p.name for p in paths.config_file.parent.iterdir() if ".tmp-" in p.name] == []
