"""model_routing_config: read the routing block, set and delete the three sub-agent keys in config.toml."""

from __future__ import annotations

import tomllib

import pytest

from fermix_cli.agent.assemble import Agent, AgentOptions
from tests.conftest import Env


def routing(world: Env, **args: str) -> tuple[int, dict]:
    r = world.tool("model_routing_config", args)
    return r.code, (r.json() if r.code == 0 else r.error())


def config(world: Env) -> dict:
    return tomllib.loads((world.fermix_home / "config.toml").read_text())


def test_read_returns_the_whole_block(world: Env) -> None:
    world.fermix_home.mkdir()
    (world.fermix_home / "config.toml").write_text('[fermix_core.routing]\ncron_model = "small"\n')
    code, out = routing(world, action="read")
    assert code == 0
    assert out["cron_model"] == "small"
    assert set(out) >= {
        "subagent_provider",
        "subagent_model",
        "subagent_reasoning_effort",
        "cron_provider",
        "meeting_model",
    }


def test_set_and_delete_write_config_toml(world: Env) -> None:
    assert routing(world, action="set", key="subagent_provider", value="anthropic") == (
        0,
        {"updated": "subagent_provider", "value": "anthropic"},
    )
    assert routing(world, action="set", key="subagent_model", value="claude-haiku-4-5")[0] == 0
    assert routing(world, action="set", key="subagent_reasoning_effort", value="low")[0] == 0
    assert config(world)["fermix_core"]["routing"] == {
        "subagent_provider": "anthropic",
        "subagent_model": "claude-haiku-4-5",
        "subagent_reasoning_effort": "low",
    }
    assert routing(world, action="read")[1]["subagent_reasoning_effort"] == "low"
    assert routing(world, action="delete", key="subagent_reasoning_effort") == (
        0,
        {"deleted": "subagent_reasoning_effort"},
    )
    assert "subagent_reasoning_effort" not in config(world)["fermix_core"]["routing"]
    assert (world.fermix_home / "config.toml").stat().st_mode & 0o777 == 0o600


@pytest.mark.parametrize(
    ("args", "code", "tag"),
    [
        ({"action": "frobnicate"}, 2, "invalid_action"),
        ({"action": "set", "key": "cron_model", "value": "x"}, 2, "invalid_key"),
        ({"action": "delete", "key": "model"}, 2, "invalid_key"),
        ({"action": "set", "key": "subagent_reasoning_effort", "value": "extreme"}, 2, "invalid_value"),
        ({"action": "set", "key": "subagent_provider", "value": "nobody"}, 2, "invalid_value"),
        ({"action": "set", "key": "subagent_model"}, 2, "missing_parameters"),
        ({"action": "set"}, 2, "missing_parameters"),
    ],
)
def test_refusals(world: Env, args: dict, code: int, tag: str) -> None:
    got_code, err = routing(world, **args)
    assert (got_code, err["code"]) == (code, tag)
    assert not (world.fermix_home / "config.toml").exists()


def test_invalid_action_names_the_action(world: Env) -> None:
    r = world.tool("model_routing_config", {"action": "frobnicate"}, "--text")
    assert r.error()["message"].startswith("frobnicate")


def test_mismatched_provider_and_model_are_refused(world: Env) -> None:
    assert routing(world, action="set", key="subagent_provider", value="anthropic")[0] == 0
    code, err = routing(world, action="set", key="subagent_model", value="gpt-4o-mini")
    assert (code, err["code"]) == (2, "invalid_value")
    # A free-form slug is fine, and an OpenAI-compatible server at another URL may serve anything.
    assert routing(world, action="set", key="subagent_model", value="my-finetune-v3")[0] == 0
    (world.fermix_home / "config.toml").write_text(
        '[fermix_core.providers.openrouter]\ntype = "openai"\nbase_url = "https://openrouter.example/api/v1"\n'
    )
    assert routing(world, action="set", key="subagent_provider", value="openrouter")[0] == 0
    assert routing(world, action="set", key="subagent_model", value="claude-sonnet-4-5")[0] == 0


def test_changes_apply_live_and_never_touch_the_main_model(world: Env) -> None:
    world.fermix_home.mkdir()
    (world.fermix_home / "config.toml").write_text('[fermix_core.agent]\nprovider = "echo"\nmodel = "main"\n')
    ctx = world.context()
    try:
        agent = Agent(ctx, AgentOptions())
        loop = agent.open()
        from fermix_cli.core.registry import default_registry

        default_registry().invoke(
            "model_routing_config", {"action": "set", "key": "subagent_model", "value": "tiny"}, loop.ctx
        )
        assert loop.ctx.config.fermix_core.routing.subagent_model == "tiny"
        assert loop.ctx.config.fermix_core.agent.model == "main"
    finally:
        ctx.close()
    assert config(world)["fermix_core"]["agent"] == {"provider": "echo", "model": "main"}


def test_guests_cannot_change_routing(world: Env) -> None:
    r = world.run(
        "--trust",
        "guest",
        "tool",
        "model_routing_config",
        "--json",
        '{"action":"set","key":"subagent_model","value":"x"}',
    )
    assert r.code == 3 and r.error()["code"] == "policy_denied"


def test_null_key_and_value_count_as_absent(world: Env) -> None:
    # As for the memory tools: a strict-schema model sends every key, null for the unused ones.
    r = world.tool("model_routing_config", {"action": "read", "key": None, "value": None})
    assert r.code == 0 and "subagent_model" in r.json()
    r = world.tool("model_routing_config", {"action": "set", "key": "subagent_model", "value": None})
    assert (r.code, r.error()["code"]) == (2, "missing_parameters")
    r = world.tool("model_routing_config", {"action": None})
    assert (r.code, r.error()["code"]) == (2, "invalid_input")  # action is required: null is no action
    props = world.run("tool", "model_routing_config", "--schema").json()["properties"]
    assert {"type": "null"} in props["key"]["anyOf"] and {"type": "null"} in props["value"]["anyOf"]
    assert "anyOf" not in props["action"]


def test_a_model_whose_name_names_its_provider_is_checked_against_that_provider(world: Env) -> None:
    """The documented example works whatever the main agent runs on: the workers infer the provider from
    the slug (gpt-* -> openai), so the route is checked against the pair they will really use."""
    from fermix_cli.agent.subagents.tools import SubagentsParams, worker_model

    world.fermix_home.mkdir()
    (world.fermix_home / "config.toml").write_text('[fermix_core.agent]\nprovider = "anthropic"\n')
    assert routing(world, action="set", key="subagent_model", value="gpt-4o-mini") == (
        0,
        {"updated": "subagent_model", "value": "gpt-4o-mini"},
    )
    ctx = world.context()
    try:
        p = SubagentsParams.model_validate({"tasks": [{"id": "a", "task": "t"}]})
        assert worker_model(p, ctx)[:2] == ("openai", "gpt-4o-mini")  # what the workers run on
    finally:
        ctx.close()
    # A slug that names no provider runs on the main agent's: checked against that one.
    code, err = routing(world, action="set", key="subagent_model", value="davinci-002")
    assert (code, err["code"], err["details"]["provider"]) == (2, "invalid_value", "anthropic")
    assert "subagent_provider" in err["message"]
    # Naming a provider that cannot serve the routed model is still refused, either way round.
    code, err = routing(world, action="set", key="subagent_provider", value="anthropic")
    assert (code, err["code"]) == (2, "invalid_value")
    assert config(world)["fermix_core"]["routing"] == {"subagent_model": "gpt-4o-mini"}
    assert routing(world, action="set", key="subagent_provider", value="openai")[0] == 0
    assert routing(world, action="set", key="subagent_model", value="claude-haiku-4-5")[0] == 2


def test_deleting_a_key_that_is_not_set_says_so(world: Env) -> None:
    assert routing(world, action="delete", key="subagent_model") == (
        0,
        {
            "deleted": False,
            "key": "subagent_model",
            "message": "subagent_model was not set in config.toml; nothing changed",
        },
    )
    assert not (world.fermix_home / "config.toml").exists()  # nothing to delete, nothing created
    assert routing(world, action="set", key="subagent_model", value="tiny")[0] == 0
    assert routing(world, action="delete", key="subagent_provider")[1]["deleted"] is False
    assert routing(world, action="delete", key="subagent_model") == (0, {"deleted": "subagent_model"})
    assert routing(world, action="delete", key="subagent_model")[1]["deleted"] is False
