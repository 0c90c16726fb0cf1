"""The validated-config cache: same values as a full validation, and never a way around it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fermix_cli.core import configcache
from fermix_cli.core.config import load_config
from fermix_cli.core.errors import ToolError

CONFIG = """
[sandbox]
mode = "strict"
allowed_roots = ["/srv/data"]
[sandbox.env]
allow = ["API_TOKEN"]
[fermix_core.net]
allowed_private_hosts = ["127.0.0.1"]
[fermix_core.providers.local]
type = "openai"
base_url = "http://127.0.0.1:8080/v1"
"""


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    cfg = tmp_path / "config.toml"
    cfg.write_text(CONFIG)
    return cfg, tmp_path / "run"


def test_a_hit_gives_the_validated_values_without_pydantic_models(files: tuple[Path, Path]) -> None:
    cfg, run = files
    first = configcache.load_config_cached(cfg, run)
    assert (run / configcache.CACHE_NAME).exists()
    assert oct((run / configcache.CACHE_NAME).stat().st_mode & 0o777) == "0o600"
    second = configcache.load_config_cached(cfg, run)
    assert isinstance(second, configcache.ConfigView)
    assert second.model_dump() == first.model_dump(mode="json") == load_config(cfg).model_dump(mode="json")
    assert second.sandbox.mode == "strict" and second.sandbox.env.allow == ["API_TOKEN"]
    assert second.fermix_core.providers["local"].base_url == "http://127.0.0.1:8080/v1"
    assert second.fermix_core.tools.web_search.backend == "duckduckgo"  # defaults are cached too
    with pytest.raises(AttributeError):
        second.sandbox.nope  # noqa: B018
    with pytest.raises(AttributeError):
        second.sandbox.mode = "open"


def test_an_edited_file_is_validated_again_and_fails_closed(files: tuple[Path, Path]) -> None:
    cfg, run = files
    configcache.load_config_cached(cfg, run)
    cfg.write_text(CONFIG.replace('mode = "strict"', 'mode = "wide"'))
    with pytest.raises(ToolError) as e:
        configcache.load_config_cached(cfg, run)
    assert e.value.code == "invalid_config" and e.value.details["key"] == "sandbox.mode"


def test_a_forged_or_broken_cache_is_ignored(files: tuple[Path, Path]) -> None:
    cfg, run = files
    configcache.load_config_cached(cfg, run)
    entry = json.loads((run / configcache.CACHE_NAME).read_text())
    entry["key"] = "someone-else:" + entry["key"].split(":")[1]
    entry["tree"]["__section__"]["sandbox"]["__section__"]["mode"] = "open"
    (run / configcache.CACHE_NAME).write_text(json.dumps(entry))
    assert configcache.load_config_cached(cfg, run).sandbox.mode == "strict"
    (run / configcache.CACHE_NAME).write_text("{not json")
    assert configcache.load_config_cached(cfg, run).sandbox.mode == "strict"


def test_no_config_file_caches_the_defaults(tmp_path: Path) -> None:
    view = None
    for _ in range(2):
        view = configcache.load_config_cached(tmp_path / "missing.toml", tmp_path / "run")
    assert isinstance(view, configcache.ConfigView)
    assert view.sandbox.mode == "standard"


def test_unwritable_cache_dir_still_loads(files: tuple[Path, Path], tmp_path: Path) -> None:
    cfg, _ = files
    blocker = tmp_path / "file-not-dir"
    blocker.write_text("x")
    assert configcache.load_config_cached(cfg, blocker / "run").sandbox.mode == "strict"
