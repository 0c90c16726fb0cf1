"""Choosing the provider and model, API keys, and the config sections the model loop adds."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fermix_cli.agent.providers import choose_provider
from fermix_cli.core.config import load_config, validate_config
from fermix_cli.core.errors import ToolError


def cfg(**core: Any) -> Any:
    return validate_config({"fermix_core": core})


@pytest.mark.parametrize(
    ("core", "kwargs", "env", "expected"),
    [
        ({}, {"model": "echo"}, {}, ("echo", "echo", "echo")),
        ({}, {"model": "mock"}, {}, ("mock", "mock", "mock")),
        ({}, {"provider": "echo", "model": "parrot"}, {}, ("echo", "echo", "parrot")),
        ({}, {}, {"OPENAI_API_KEY": "k"}, ("openai", "openai", "gpt-4o-mini")),
        ({}, {}, {"ANTHROPIC_API_KEY": "k"}, ("anthropic", "anthropic", "claude-sonnet-4-5")),
        ({}, {"model": "gpt-4.1"}, {"OPENAI_API_KEY": "k"}, ("openai", "openai", "gpt-4.1")),
        (
            {
                "providers": {
                    "local": {
                        "type": "openai",
                        "base_url": "http://127.0.0.1:8080/v1",
                        "default_model": "smol",
                    }
                }
            },
            {},
            {"OPENAI_API_KEY": "k"},
            ("local", "openai", "smol"),
        ),
        (
            {
                "agent": {"provider": "anthropic", "model": "claude-x"},
                "providers": {"openai": {}, "anthropic": {}},
            },
            {},
            {},
            ("anthropic", "anthropic", "claude-x"),
        ),
        (
            {"agent": {"provider": "anthropic", "model": "claude-x"}},
            {"provider": "openai"},
            {},
            ("openai", "openai", "gpt-4o-mini"),
        ),
        ({"providers": {"openai": {"default_model": "o4-mini"}}}, {}, {}, ("openai", "openai", "o4-mini")),
    ],
)
def test_choice_order(core: dict, kwargs: dict, env: dict, expected: tuple[str, str, str]) -> None:
    choice = choose_provider(cfg(**core), env=env, **kwargs)
    assert (choice.name, choice.kind, choice.model) == expected


def test_no_provider_and_no_model_errors() -> None:
    with pytest.raises(ToolError) as e:
        choose_provider(cfg(), env={})
    assert e.value.code == "no_provider" and "fermix ask -m echo" in e.value.message
    with pytest.raises(ToolError) as e:
        choose_provider(cfg(providers={"local": {"type": "openai", "base_url": "http://h/v1"}}), env={})
    assert e.value.code == "no_model" and "fermix_core.providers.local.default_model" in e.value.message
    with pytest.raises(ToolError) as e:
        choose_provider(cfg(agent={"provider": "ghost"}), env={})
    assert e.value.code == "no_provider" and "ghost" in e.value.message


def test_api_keys_never_leak_to_other_base_urls() -> None:
    env = {"OPENAI_API_KEY": "official", "MY_KEY": "mine"}
    official = choose_provider(cfg(), env=env, provider="openai")
    assert official.api_key(env) == "official"
    custom = choose_provider(
        cfg(providers={"openai": {"base_url": "https://proxy.example/v1", "default_model": "m"}}), env=env
    )
    assert custom.api_key(env) is None
    via_env = choose_provider(
        cfg(
            providers={
                "x": {
                    "type": "openai",
                    "base_url": "https://p/v1",
                    "default_model": "m",
                    "api_key_env": "MY_KEY",
                }
            }
        ),
        env=env,
    )
    assert via_env.api_key(env) == "mine"
    inline = choose_provider(
        cfg(providers={"anthropic": {"api_key": "inline"}}), env=env, provider="anthropic"
    )
    assert inline.api_key(env) == "inline"


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ('[fermix_core.providers.local]\nbase_url = "http://x"\n', "fermix_core.providers.local.type"),
        ('[fermix_core.providers.openai]\nbase = "http://x"\n', "fermix_core.providers.openai.base"),
        ('[fermix_core.providers.x]\ntype = "gemini"\n', "fermix_core.providers.x.type"),
        ("[fermix_core.providers.openai]\nmax_retries = 99\n", "fermix_core.providers.openai.max_retries"),
        ("[fermix_core.agent]\nmax_iterations = 0\n", "fermix_core.agent.max_iterations"),
        ('[fermix_core.agent]\ntoolset = "all"\n', "fermix_core.agent.toolset"),
        ('[fermix_core.agent]\nmodle = "x"\n', "fermix_core.agent.modle"),
        (
            '[fermix_core.routing]\nsubagent_reasoning_effort = "huge"\n',
            "fermix_core.routing.subagent_reasoning_effort",
        ),
        ('[fermix_core.routing]\nmain_model = "x"\n', "fermix_core.routing.main_model"),
        ('[fermix_core.tools.tool_search]\nenabled = "yes"\n', "fermix_core.tools.tool_search.enabled"),
    ],
)
def test_invalid_agent_config_names_the_key(tmp_path: Path, text: str, key: str) -> None:
    (tmp_path / "config.toml").write_text(text)
    with pytest.raises(ToolError) as e:
        load_config(tmp_path / "config.toml")
    assert e.value.code == "invalid_config"
    assert e.value.details["key"] == key and key in e.value.message


def test_agent_config_defaults() -> None:
    c = cfg()
    assert c.fermix_core.agent.max_iterations == 25
    assert c.fermix_core.agent.max_iterations_scheduled == 100
    assert c.fermix_core.tools.tool_search.enabled is True
    assert c.fermix_core.providers == {}
