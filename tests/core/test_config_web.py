"""The network and web_search config sections: entries checked when the file is loaded, keys named."""

from __future__ import annotations

from pathlib import Path

import pytest

from fermix_cli.core.config import load_config
from fermix_cli.core.errors import ToolError
from tests.conftest import Env


@pytest.mark.parametrize(
    ("text", "key"),
    [
        (
            '[fermix_core.net]\nallowed_private_hosts = ["*.corp"]\n',
            "fermix_core.net.allowed_private_hosts.0",
        ),
        (
            '[fermix_core.net]\nallowed_private_hosts = ["ok.lan", "10.0.0.0/8"]\n',
            "fermix_core.net.allowed_private_hosts.1",
        ),
        (
            '[fermix_core.net]\nallowed_private_hosts = ["http://127.0.0.1"]\n',
            "fermix_core.net.allowed_private_hosts.0",
        ),
        (
            '[fermix_core.net]\nallowed_private_hosts = ["127.0.0.1:8080"]\n',
            "fermix_core.net.allowed_private_hosts.0",
        ),
        ('[fermix_core.net]\nallowed_private_hosts = [""]\n', "fermix_core.net.allowed_private_hosts.0"),
        ("[fermix_core.tools.web_search]\nbackend = 3\n", "fermix_core.tools.web_search.backend"),
        ('[fermix_core.tools.web_search]\nbrave_key = "x"\n', "fermix_core.tools.web_search.brave_key"),
        (
            '[fermix_core.tools.web_search]\nexa_url = "ftp://exa.example/"\n',
            "fermix_core.tools.web_search.exa_url",
        ),
        (
            '[fermix_core.tools.web_search]\nduckduckgo_url = "html.duckduckgo.com"\n',
            "fermix_core.tools.web_search.duckduckgo_url",
        ),
        ('[fermix_core.tools.web]\nexa_url = "https://u:p@exa.example/"\n', "fermix_core.tools.web.exa_url"),
        ('[fermix_core.tools.web]\nexa_api_key = "k"\n', "fermix_core.tools.web.exa_api_key"),
    ],
)
def test_bad_entries_name_their_key(tmp_path: Path, text: str, key: str) -> None:
    (tmp_path / "config.toml").write_text(text)
    with pytest.raises(ToolError) as e:
        load_config(tmp_path / "config.toml")
    assert e.value.code == "invalid_config" and e.value.details["key"] == key


def test_a_secret_of_the_wrong_type_is_not_echoed(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text("[fermix_core.tools.web_search]\ntavily_api_key = 987654321\n")
    with pytest.raises(ToolError) as e:
        load_config(tmp_path / "config.toml")
    assert e.value.details["key"] == "fermix_core.tools.web_search.tavily_api_key"
    assert "987654321" not in str(e.value.to_dict())


def test_good_sections_load_with_defaults(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text(
        '[fermix_core.net]\nallowed_private_hosts = ["127.0.0.1", "[::1]", "Build.LAN."]\n'
        '[fermix_core.tools.web_search]\nbackend = "Brave"\nbrave_api_key = "k"\n'
        'brave_url = "http://127.0.0.1:9/res/v1/web/search"\n'
    )
    cfg = load_config(tmp_path / "config.toml")
    assert cfg.fermix_core.net.allowed_private_hosts == ["127.0.0.1", "[::1]", "Build.LAN."]
    search = cfg.fermix_core.tools.web_search
    assert (search.backend, search.brave_api_key) == ("Brave", "k")
    assert search.duckduckgo_url == "https://html.duckduckgo.com/html/"
    assert search.brave_place_url == "https://api.search.brave.com/res/v1/local/place_search"
    assert cfg.fermix_core.tools.web.exa_url == "https://api.exa.ai/search"


def test_web_tools_refuse_to_run_on_a_bad_allowance(world: Env) -> None:
    world.fermix_home.mkdir()
    (world.fermix_home / "config.toml").write_text('[fermix_core.net]\nallowed_private_hosts = ["*"]\n')
    r = world.tool("web_fetch", {"url": "https://example.com/"})
    assert r.code == 2
    assert r.error()["code"] == "invalid_config"
    assert "fermix_core.net.allowed_private_hosts.0" in r.error()["message"]
