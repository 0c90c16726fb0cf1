"""The local inbox channel: text and files land as JSON lines a reader can trust."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from fermix_cli.channels import ChannelError, channel_for
from fermix_cli.channels.inbox import TEXT_MAX, read_inbox
from fermix_cli.core.paths import resolve_paths
from tests.conftest import Env


def test_inbox_sends_text_and_files(tmp_path: Path) -> None:
    paths = resolve_paths(str(tmp_path / "home"))
    inbox = channel_for("inbox", paths)
    assert inbox is not None and inbox.capabilities == {"text", "file"}
    sent = inbox.send_text("owner", "hello", {"job_id": "j"})
    assert sent.as_dict()["platform"] == "inbox" and sent.address == "owner"
    report = tmp_path / "report.txt"
    report.write_text("numbers")
    filed = inbox.send_file("owner", report, "the report", {"job_id": "j"})
    messages = read_inbox(paths, "owner", 0)
    assert [(m["text"], m.get("file")) for m in messages] == [
        ("hello", None),
        ("the report", filed.detail["file"]),
    ]
    assert Path(filed.detail["file"]).read_text() == "numbers"
    target = Path(sent.detail["path"])
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert all(json.loads(line)["job_id"] == "j" for line in target.read_text().splitlines())


def test_long_text_is_cut_and_says_so(tmp_path: Path) -> None:
    paths = resolve_paths(str(tmp_path / "home"))
    inbox = channel_for("inbox", paths)
    assert inbox is not None
    inbox.send_text("owner", "x" * (TEXT_MAX + 1), {})
    (message,) = read_inbox(paths, "owner", 1)
    assert message["truncated"] is True and len(message["text"]) == TEXT_MAX


def test_failures_are_channel_errors(tmp_path: Path) -> None:
    paths = resolve_paths(str(tmp_path / "home"))
    inbox = channel_for("inbox", paths)
    assert inbox is not None
    with pytest.raises(ChannelError):
        inbox.send_file("owner", tmp_path / "missing.txt", "gone", {})
    assert channel_for("sms", paths) is None


def test_files_with_the_same_name_never_replace_each_other(tmp_path: Path) -> None:
    paths = resolve_paths(str(tmp_path / "home"))
    inbox = channel_for("inbox", paths)
    assert inbox is not None
    copies = []
    for folder, content in (("a", "first"), ("b", "second"), ("c", "third")):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "report.txt").write_text(content)
        copies.append(
            Path(inbox.send_file("owner", tmp_path / folder / "report.txt", content, {}).detail["file"])
        )
    assert [c.name for c in copies] == ["report.txt", "report-2.txt", "report-3.txt"]
    assert [c.read_text() for c in copies] == ["first", "second", "third"]
    assert [m["file"] for m in read_inbox(paths, "owner", 0)] == [str(c) for c in copies]


def test_a_directory_or_a_missing_file_is_a_permanent_failure(tmp_path: Path) -> None:
    paths = resolve_paths(str(tmp_path / "home"))
    inbox = channel_for("inbox", paths)
    assert inbox is not None
    with pytest.raises(ChannelError) as e:
        inbox.send_file("owner", tmp_path, "a folder", {})
    assert (e.value.code, e.value.permanent) == ("not_a_file", True)
    with pytest.raises(ChannelError) as e:
        inbox.send_file("owner", tmp_path / "missing.txt", "gone", {})
    assert (e.value.code, e.value.permanent) == ("unreadable_file", True)
    assert read_inbox(paths, "owner", 0) == []


def test_channels_send_file_twice_keeps_both_files(world: Env) -> None:
    target = '{"platform":"inbox","recipient":"owner"}'
    for folder, caption in (("a", "first"), ("b", "second")):
        (world.root / folder).mkdir()
        (world.root / folder / "report.txt").write_text(caption)
        out = world.run(
            "channels", "send", target, caption, "--file", str(world.root / folder / "report.txt")
        )
        assert out.code == 0, out.stderr
    messages = world.run("inbox", "owner", "--json").json()["messages"]
    assert [(m["text"], Path(m["file"]).read_text()) for m in messages] == [
        ("first", "first"),
        ("second", "second"),
    ]
    folder = world.run("channels", "send", target, "x", "--file", str(world.root / "a"))
    assert folder.code == 1
    assert folder.error()["code"] == "not_a_file" and folder.error()["details"]["permanent"] is True


def test_fermix_inbox_reads_what_was_delivered(world: Env) -> None:
    paths = resolve_paths(str(world.fermix_home))
    inbox = channel_for("local", paths)  # `local` is the inbox's other name
    assert inbox is not None
    inbox.send_text("owner", "first", {"delivered_at": "2026-03-02T08:00:00Z", "job_id": "disk"})
    report = world.root / "r.txt"
    report.write_text("x")
    inbox.send_file("owner", report, "second", {"delivered_at": "2026-03-02T08:01:00Z"})
    out = world.run("inbox")
    assert out.code == 0, out.stderr
    assert out.stdout.splitlines()[:3] == [
        "--- 2026-03-02T08:00:00Z  disk",
        "first",
        "--- 2026-03-02T08:01:00Z",
    ]
    assert "[file: " in out.stdout
    as_json = world.run("inbox", "owner", "--json", "-n", "1").json()
    assert [m["text"] for m in as_json["messages"]] == ["second"]
    # The older spelling still works and says the same.
    assert world.run("jobs", "inbox", "owner", "--json", "-n", "1").json() == as_json
    assert world.run("inbox", "nobody").stdout.strip() == "Inbox nobody is empty."
    assert world.run("inbox", "../x").code == 2


def test_a_write_cut_short_by_a_full_disk_leaves_nothing_and_the_next_message_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A short write (the disk filled up mid-line) is cut back off: the send fails, and the message after
    it, once there is room again, is a line of its own that `fermix inbox` shows."""
    import os

    paths = resolve_paths(str(tmp_path / "home"))
    inbox = channel_for("inbox", paths)
    assert inbox is not None
    inbox.send_text("owner", "first", {})
    target = tmp_path / "home" / "inbox" / "owner.jsonl"
    before = target.read_bytes()
    real_write = os.write

    def disk_fills_up(fd: int, data: bytes) -> int:
        if os.path.realpath(f"/proc/self/fd/{fd}") == str(target.resolve()):
            return real_write(fd, data[: len(data) // 2])  # the rest did not fit
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", disk_fills_up)
    with pytest.raises(ChannelError, match="short write"):
        inbox.send_text("owner", "x" * 30_000, {})
    monkeypatch.setattr(os, "write", real_write)
    assert target.read_bytes() == before
    inbox.send_text("owner", "second message", {})
    assert [m["text"] for m in read_inbox(paths, "owner", 0)] == ["first", "second message"]


def test_a_message_after_a_torn_line_is_still_read_and_written_on_a_line_of_its_own(tmp_path: Path) -> None:
    """An inbox left with a torn last line (an older fermix on a full disk): the message glued onto it is
    read, and a new message starts a new line."""
    paths = resolve_paths(str(tmp_path / "home"))
    inbox = channel_for("inbox", paths)
    assert inbox is not None
    inbox.send_text("owner", "first", {})
    target = tmp_path / "home" / "inbox" / "owner.jsonl"
    with open(target, "a") as f:
        f.write('{"text":"torn xxxxx')  # no end, no newline
    inbox.send_text("owner", "second", {})
    assert [m["text"] for m in read_inbox(paths, "owner", 0)] == ["first", "second"]
    glued = target.read_text() + '{"text":"torn again' + json.dumps({"text": "glued"}) + "\n"
    target.write_text(glued)
    assert [m["text"] for m in read_inbox(paths, "owner", 0)] == ["first", "second", "glued"]
    assert [m["text"] for m in read_inbox(paths, "owner", 2)] == ["second", "glued"]
