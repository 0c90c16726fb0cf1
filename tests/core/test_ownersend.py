"""send_to_owner goes through the sender a `fermix jobs run` tick lends, and says so when there is none."""

from __future__ import annotations

import pytest

from fermix_cli.core.errors import ToolError
from fermix_cli.core.ownersend import send_to_owner
from fermix_cli.jobs.ownersend import lend_owner_send
from tests.conftest import Env


def test_without_a_lent_sender_nothing_is_sent_and_the_error_says_who_delivers(world: Env) -> None:
    ctx = world.context()
    try:
        with pytest.raises(ToolError) as e:
            send_to_owner(ctx, "done", {"run_id": "hr_000000000000"})
    finally:
        ctx.close()
    assert e.value.code == "no_owner_channel" and "fermix jobs run" in e.value.message


def test_the_lent_sender_delivers_to_the_default_target(world: Env) -> None:
    from fermix_cli.channels.inbox import read_inbox

    world.fermix_home.mkdir(parents=True, exist_ok=True)
    (world.fermix_home / "config.toml").write_text(
        '[fermix_core.jobs]\ndefault_delivery_target = { platform = "inbox", recipient = "owner" }\n'
    )
    ctx = lend_owner_send(world.context())
    try:
        receipt = send_to_owner(ctx, "run hr_1 finished", {"run_id": "hr_1"})
        messages = read_inbox(ctx.paths, "owner", 10)
    finally:
        ctx.close()
    assert receipt and [m["text"] for m in messages] == ["run hr_1 finished"]
