"""send_attachment in scheduled runs (reference 8.2): a job that delivers to a chat or channel may send up
to 16 files to its snapshotted target, through the channel its result goes through; local and none refuse.

Real `fermix jobs run` ticks, the mock provider scripted to call the tool, and the Telegram Bot API
stand-in on 127.0.0.1 (tests/channels/botstandin.py).
"""

from __future__ import annotations

import json
import os
import signal
import struct
import subprocess
import sys
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.channels.botstandin import BotStandIn
from tests.channels.standins import telegram_section, write_config
from tests.jobs.jobs_world import NOW, Jobs, later, wait_for
from tests.tools.webfakes import json_reply

DUE = later(NOW, minutes=1, seconds=10)
CHAT = {"platform": "telegram", "chat_id": 42, "message_thread_id": 7}


def png() -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    raw = zlib.compress(b"\x00\xff\x00\x00")
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0))
        + chunk(b"IDAT", raw)
        + chunk(b"IEND", b"")
    )


@pytest.fixture
def bot() -> Iterator[BotStandIn]:
    standin = BotStandIn()
    try:
        yield standin
    finally:
        standin.close()


@pytest.fixture
def jobs(world: Any, bot: BotStandIn) -> Jobs:
    jobs = Jobs(world)
    write_config(world.fermix_home, telegram_section(bot, owner_user_id=42))
    return jobs


def workspace_file(jobs: Jobs, name: str, data: bytes) -> str:
    folder = jobs.world.fermix_home / "workspace"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_bytes(data)
    return str(folder / name)


def send(path: str, **extra: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": "send_attachment", "arguments": {"path": path, **extra}}]}


def run_of(jobs: Jobs, summary: dict[str, Any]) -> dict[str, Any]:
    (run,) = summary["runs"]
    detail: dict[str, Any] = jobs.call("get_job_run", {"run_id": run["run_id"]})["run"]
    return detail


def tool_results(jobs: Jobs, session: str) -> list[tuple[str, str]]:
    rows = jobs.sql(
        "SELECT m.tool_name, m.content FROM messages m JOIN runs r ON r.id = m.run_id"
        " WHERE r.conversation_id = ? AND m.role = 'tool' ORDER BY m.seq",
        (session,),
    )
    return [(r["tool_name"], r["content"]) for r in rows]


def recorded(jobs: Jobs, session: str) -> list[tuple[str, int, str | None]]:
    rows = jobs.sql(
        "SELECT tool, ok, error_code FROM tool_calls WHERE session_id = ? ORDER BY started_at", (session,)
    )
    return [(r["tool"], r["ok"], r["error_code"]) for r in rows]


def test_a_channel_job_sends_files_to_its_target_with_its_result(jobs: Jobs, bot: BotStandIn) -> None:
    picture = workspace_file(jobs, "chart.png", png())
    report = workspace_file(jobs, "report.txt", b"all quiet\n")
    script = jobs.mock_script(
        [
            send(picture, kind="image", caption="This week"),
            send(report, filename="weekly.txt"),
            {"text": "Report sent."},
        ]
    )
    jobs.add("Weekly", "every 1 minutes", provider="mock", model=script, delivery_target=CHAT)
    run = run_of(jobs, jobs.tick(DUE))
    assert (run["status"], run["final_response"], run["delivery"]["status"]) == (
        "ok",
        "Report sent.",
        "delivered",
    )
    # The files went where the result went: the job's chat and topic, as a photo and a document.
    [photo] = bot.payloads("sendPhoto")
    assert photo["chat_id"] == (None, b"42") and photo["message_thread_id"] == (None, b"7")
    assert photo["photo"] == ("chart.png", png()) and photo["caption"] == (None, b"This week")
    [document] = bot.payloads("sendDocument")
    assert document["document"] == ("weekly.txt", b"all quiet\n") and "caption" not in document
    [message] = bot.payloads("sendMessage")
    assert (message["chat_id"], message["message_thread_id"], message["text"]) == (42, 7, "Report sent.")
    # The model was told each send landed, and how many it has left.
    results = tool_results(jobs, run["session_id"])
    first = json.loads(results[0][1])
    assert (first["sent"], first["platform"], first["attachment"], first["sends_left"]) == (
        True,
        "telegram",
        1,
        15,
    )
    assert first["delivered"]["method"] == "sendPhoto" and first["delivered"]["address"] == "42"
    assert json.loads(results[1][1])["filename"] == "weekly.txt"
    assert recorded(jobs, run["session_id"]) == [("send_attachment", 1, None), ("send_attachment", 1, None)]
    # The run's record lists the sends; the staged copies are gone.
    sends = run["attachments"]
    assert [(a["seq"], a["filename"], a["kind"], a["status"]) for a in sends] == [
        (1, "chart.png", "image", "sent"),
        (2, "weekly.txt", "document", "sent"),
    ]
    assert sends[0]["bytes"] == len(png()) and sends[0]["detail"]["message_id"] is not None
    shown = jobs.cli("jobs", "show", run["run_id"]).stdout
    assert f"attachment 1   sent chart.png (image, {len(png())} bytes)" in shown
    assert "attachment 2   sent weekly.txt (document, 10 bytes)" in shown
    run_dir = jobs.world.fermix_home / "jobs" / "weekly" / run["run_id"]
    assert not (run_dir / "attachments").exists()


def test_the_seventeenth_send_of_a_run_is_refused(jobs: Jobs, bot: BotStandIn) -> None:
    report = workspace_file(jobs, "r.txt", b"r")
    steps = [send(report, caption=f"part {n}") for n in range(1, 18)]
    script = jobs.mock_script([*steps, {"text": "done"}])
    jobs.add("Flood", "every 1 minutes", provider="mock", model=script, delivery_target=CHAT)
    run = run_of(jobs, jobs.tick(DUE))
    assert run["status"] == "ok"
    assert len(bot.calls("sendDocument")) == 16
    captions = [p["caption"][1].decode() for p in bot.payloads("sendDocument")]
    assert captions == [f"part {n}" for n in range(1, 17)]
    results = tool_results(jobs, run["session_id"])
    assert json.loads(results[15][1])["sends_left"] == 0
    assert results[16][1].startswith(
        "attachment_limit: this run already sent 16 files, the most one scheduled run may send; r.txt was not sent"
    )
    assert recorded(jobs, run["session_id"])[-1] == ("send_attachment", 0, "attachment_limit")
    assert [a["status"] for a in run["attachments"]] == ["sent"] * 16


@pytest.mark.parametrize(
    ("mode", "why"), [("local", "recorded in the job's run history only"), ("none", "not sent anywhere")]
)
def test_local_and_none_jobs_refuse_sends_and_say_why(
    jobs: Jobs, bot: BotStandIn, mode: str, why: str
) -> None:
    report = workspace_file(jobs, "r.txt", b"r")
    script = jobs.mock_script([send(report), {"text": "kept"}])
    jobs.add("Quiet", "every 1 minutes", provider="mock", model=script, delivery_mode=mode)
    run = run_of(jobs, jobs.tick(DUE))
    [(tool, text)] = tool_results(jobs, run["session_id"])
    assert tool == "send_attachment"
    assert text.startswith(
        f"no_delivery_channel: this job's delivery mode is {mode}: its result is {why}, so it sends no files."
    )
    assert recorded(jobs, run["session_id"]) == [("send_attachment", 0, "no_delivery_channel")]
    assert run["attachments"] == [] and bot.web.hits == []


def test_the_tool_is_offered_only_where_files_can_go(jobs: Jobs) -> None:
    def offered(n: int, **delivery: Any) -> list[str]:
        job = jobs.add(f"Probe {n}", "every 1 minutes", provider="echo", model="echo", **delivery)
        (run,) = jobs.tick(later(DUE, minutes=n))["runs"]
        assert run["job_id"] == job["id"]
        final = jobs.call("get_job_run", {"run_id": run["run_id"]})["run"]["final_response"]
        jobs.call("pause_job", {"job_id": job["id"]})
        tools: list[str] = json.loads(final)["tools"]
        return tools

    assert "send_attachment" in offered(0, delivery_target=CHAT)
    assert "send_attachment" not in offered(1, delivery_mode="local")
    assert "send_attachment" in offered(2, delivery_target={"platform": "inbox", "recipient": "owner"})


def test_a_send_cut_off_by_the_run_s_end_is_undelivered_and_never_sent_again(
    jobs: Jobs, bot: BotStandIn
) -> None:
    report = workspace_file(jobs, "r.txt", b"r")
    script = jobs.mock_script([send(report), {"text": "never"}])
    jobs.add(
        "Stuck", "every 1 minutes", provider="mock", model=script, delivery_target=CHAT, timeout_seconds=2
    )
    slow = json_reply({"ok": True, "result": {"message_id": 500, "chat": {"id": 42}}})
    slow.delay = 6  # Telegram has not answered when the run's timeout stops the worker mid-send
    bot.script.append(slow)
    run = run_of(jobs, jobs.tick(DUE))
    assert (run["status"], run["error"]["code"]) == ("error", "timeout")
    [attachment] = run["attachments"]
    assert attachment["status"] == "undelivered" and attachment["detail"]["code"] == "run_ended"
    assert "may or may not have reached the channel, and is not sent again" in attachment["detail"]["message"]
    assert (
        "attachment 1   undelivered (run_ended) r.txt (document, 1 bytes)"
        in jobs.cli("jobs", "show", run["run_id"]).stdout
    )
    assert len(bot.calls("sendDocument")) == 1
    # Later ticks close nothing else and send nothing again.
    jobs.call("pause_job", {"job_id": "stuck"})
    assert jobs.tick(later(DUE, minutes=1))["runs"] == []
    assert len(bot.calls("sendDocument")) == 1
    assert jobs.sql("SELECT status FROM job_run_attachments")[0][0] == "undelivered"


def test_a_job_that_delivers_to_the_inbox_files_the_copy_there(jobs: Jobs) -> None:
    report = workspace_file(jobs, "report.txt", b"numbers\n")
    script = jobs.mock_script([send(report, caption="the numbers"), {"text": "see the file"}])
    inbox = {"platform": "inbox", "recipient": "owner"}
    jobs.add("Numbers", "every 1 minutes", provider="mock", model=script, delivery_target=inbox)
    run = run_of(jobs, jobs.tick(DUE))
    filed, message = jobs.inbox()
    assert (filed["text"], filed["job_id"], filed["run_id"], filed["attachment"]) == (
        "the numbers",
        "numbers",
        run["run_id"],
        1,
    )
    assert Path(filed["file"]).read_bytes() == b"numbers\n" and filed["file"] != report
    assert message["text"] == "see the file"
    assert run["attachments"][0]["status"] == "sent"


def test_a_runner_killed_mid_send_leaves_the_send_undelivered_for_the_next_tick(
    jobs: Jobs, bot: BotStandIn
) -> None:
    report = workspace_file(jobs, "r.txt", b"r")
    script = jobs.mock_script([send(report), {"text": "never"}])
    jobs.add("Victim", "every 1 minutes", provider="mock", model=script, delivery_target=CHAT)
    slow = json_reply({"ok": True, "result": {"message_id": 500, "chat": {"id": 42}}})
    slow.delay = 20
    bot.script.append(slow)
    runner = subprocess.Popen(
        [sys.executable, "-m", "fermix_cli", "jobs", "run", "--json"],
        env=jobs.env(DUE),
        cwd=jobs.world.project,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for(lambda: bot.calls("sendDocument"), timeout=90)
        assert [r[0] for r in jobs.sql("SELECT status FROM job_run_attachments")] == ["sending"]
        runner.send_signal(signal.SIGKILL)  # its worker dies with it, mid-send
        runner.wait(timeout=30)
    finally:
        if runner.poll() is None:
            runner.kill()
            runner.wait()
    [run] = jobs.runs("victim")
    wait_for(lambda: not _workers_of(run["id"]), timeout=30)
    summary = jobs.tick(DUE)
    assert summary["reconciled"][0]["error_code"] == "interrupted"
    [attachment] = jobs.call("get_job_run", {"run_id": run["id"]})["run"]["attachments"]
    assert (attachment["status"], attachment["detail"]["code"]) == ("undelivered", "run_ended")
    assert len(bot.calls("sendDocument")) == 1  # never sent again


def _workers_of(run_id: str) -> list[int]:
    """Processes whose command line names `run_id` (the run's `fermix jobs worker`)."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmd = f.read().split(b"\0")
            with open(f"/proc/{entry}/stat") as f:
                zombie = f.read().split(") ", 1)[1][0] == "Z"
        except OSError:
            continue
        if b"worker" in cmd and run_id.encode() in cmd and not zombie:
            pids.append(int(entry))
    return pids


def test_a_job_whose_target_takes_text_only_refuses_files(jobs: Jobs, bot: BotStandIn) -> None:
    section = telegram_section(bot)
    section["fermix_core"]["channels"]["webhooks"] = {"ops": {"url": bot.web.url("/hook"), "format": "json"}}
    write_config(jobs.world.fermix_home, section)
    bot.web.routes["/hook"] = json_reply({"ok": True})
    report = workspace_file(jobs, "r.txt", b"r")
    script = jobs.mock_script([send(report), {"text": "see r.txt"}])
    hook = {"platform": "webhook", "recipient": "ops"}
    jobs.add("Hooked", "every 1 minutes", provider="mock", model=script, delivery_target=hook)
    run = run_of(jobs, jobs.tick(DUE))
    [(_, text)] = tool_results(jobs, run["session_id"])
    assert text.startswith("attachments_unsupported: this job delivers to webhook, which carries text only")
    assert run["delivery"]["status"] == "delivered" and run["attachments"] == []
    [hit] = bot.web.hits_on("/hook")
    assert hit.json()["text"] == "see r.txt"
