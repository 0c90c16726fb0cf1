"""`write` end to end: create/replace atomically, parents, caps, symlinks, sandbox, the recorded snapshot."""

from __future__ import annotations

import os
import stat

import pytest
from coding_world import cli, config, leftovers, snapshots

from fermix_cli.core.errors import ToolError
from fermix_cli.tools.coding.hashline import compute_tag
from tests.conftest import Env


def write(invoke, path: str, content: str, **ctx: object) -> dict:
    return invoke("write", {"path": path, "content": content}, **ctx)


def refused(invoke, path: str, content: str = "x\n", **ctx: object) -> ToolError:
    with pytest.raises(ToolError) as e:
        invoke("write", {"path": path, "content": content}, **ctx)
    return e.value


def test_create_then_replace(world: Env, invoke) -> None:
    created = write(invoke, "deep/er/new.txt", "one\ntwo\n")
    tag = compute_tag("one\ntwo\n")
    assert created == {
        "content": f"Wrote 8 bytes to deep/er/new.txt (created)\n[deep/er/new.txt#{tag}]",
        "path": "deep/er/new.txt",
        "bytes": 8,
        "created": True,
        "tag": tag,
    }
    assert (world.project / "deep" / "er" / "new.txt").read_text() == "one\ntwo\n"
    replaced = write(invoke, "deep/er/new.txt", "")
    assert replaced["content"] == "Wrote 0 bytes to deep/er/new.txt (replaced)\n[deep/er/new.txt#5D05]"
    assert (world.project / "deep" / "er" / "new.txt").read_bytes() == b""
    assert leftovers(world.project / "deep" / "er") == []


def test_content_is_written_verbatim_and_the_mode_is_kept(world: Env, invoke) -> None:
    path = world.project / "x.sh"
    path.write_text("old\n")
    path.chmod(0o700)
    write(invoke, "x.sh", "12:not a row prefix\r\n\ufeffkeep\n")
    assert path.read_bytes() == "12:not a row prefix\r\n\ufeffkeep\n".encode()
    assert stat.S_IMODE(path.stat().st_mode) == 0o700


def test_the_snapshot_is_recorded_with_every_line_seen(world: Env) -> None:
    out = cli(world, "write", {"path": "a.py", "content": "\ufeffa\r\nb  \nc"}, session="w1")
    assert out.code == 0 and out.stdout
    [row] = snapshots(world)
    assert (row["session_id"], row["path"], row["tag"]) == (
        "w1",
        os.path.realpath(world.project / "a.py"),
        compute_tag("a\nb\nc"),
    )
    assert (row["text"], row["seen"]) == ("a\nb  \nc", "1-3")
    text = world.run(
        "--session", "w1", "tool", "write", "--json", '{"path":"a.py","content":"z\\n"}', "--text"
    )
    assert (
        text.stdout.rstrip("\n") == f"Wrote 2 bytes to a.py (replaced)\n[a.py#{compute_tag('z' + chr(10))}]"
    )


def test_one_mib_cap_counts_utf8_bytes(world: Env, invoke) -> None:
    write(invoke, "edge.txt", "x" * 1_048_576)
    e = refused(invoke, "big.txt", "é" * 524_289)
    assert (e.code, e.message) == ("too_large", "content is 1048578 bytes; write is limited to 1 MiB.")
    assert not (world.project / "big.txt").exists()


def test_final_symlinks_are_refused_even_dangling(world: Env, invoke) -> None:
    (world.project / "real.txt").write_text("real\n")
    (world.project / "link.txt").symlink_to("real.txt")
    (world.project / "dangling.txt").symlink_to("nowhere.txt")
    for name in ("link.txt", "dangling.txt"):
        e = refused(invoke, name)
        assert (e.code, e.message) == (
            "symlink_refused",
            f"write refuses {name}: the final path component is a symbolic link.",
        )
    assert (world.project / "real.txt").read_text() == "real\n"
    assert not (world.project / "nowhere.txt").exists()


def test_a_symlinked_directory_on_the_way_is_fine_inside_cwd(world: Env, invoke) -> None:
    (world.project / "real").mkdir()
    (world.project / "alias").symlink_to("real")
    assert write(invoke, "alias/f.txt", "f\n")["path"] == "real/f.txt"
    assert (world.project / "real" / "f.txt").read_text() == "f\n"


def test_directories_special_files_and_file_parents(world: Env, invoke) -> None:
    (world.project / "dir").mkdir()
    (world.project / "file").write_text("f\n")
    os.mkfifo(world.project / "pipe")
    cases = [
        ("dir", "is_directory", "dir is a directory; write needs a file path."),
        ("pipe", "not_regular_file", "pipe is not a regular file; write replaces regular files only."),
        (
            "file/inner/x.txt",
            "not_a_directory",
            f"Cannot create file/inner/x.txt: {os.path.realpath(world.project / 'file')} exists and is not a directory.",
        ),
        ("bad\x00name", "invalid_path", "Path contains null bytes"),
    ]
    for path, code, message in cases:
        e = refused(invoke, path)
        assert (e.code, e.message) == (code, message), path


def test_unpaired_surrogates_are_refused(world: Env, invoke) -> None:
    e = refused(invoke, "s.txt", "a\ud800b")  # by validation, as for every string field
    assert e.code == "invalid_input" and "content has text that is not valid UTF-8" in e.message


def test_both_fields_are_required(world: Env) -> None:
    for args in ({"path": "a.txt"}, {"content": "x"}):
        out = world.tool("write", args)
        assert out.code == 2 and out.error()["code"] == "invalid_input"


def test_sandbox_denials(world: Env) -> None:
    (world.project / ".git").mkdir()
    (world.home / ".ssh").mkdir()
    cases = [
        (str(world.root / "outside.txt"), "outside_root"),
        ("~/.ssh/authorized_keys", "protected_path"),
        (".git/hooks/pre-commit", "protected_path"),
        (str(world.fermix_home / "config.toml"), "protected_path"),
    ]
    for path, code in cases:
        out = world.tool("write", {"path": path, "content": "x\n"})
        assert (out.code, out.error()["code"]) == (3, code), path
    assert not (world.root / "outside.txt").exists()
    assert not (world.project / ".git" / "hooks").exists()


def test_relative_paths_stay_in_cwd_and_absolute_follow_the_capability(world: Env, invoke) -> None:
    sub = world.project / "sub"
    sub.mkdir()
    e = refused(invoke, "../escape.txt", cwd=str(sub))
    assert e.code == "outside_cwd" and not (world.project / "escape.txt").exists()
    # Leaving the roots too: still outside_cwd, whose advice (go absolute) is the one that can work.
    e = refused(invoke, "../../outside.txt", cwd=str(sub))
    assert e.code == "outside_cwd" and "pass the absolute path instead" in e.message
    assert not (world.home / "outside.txt").exists()
    write(invoke, str(world.project / "abs.txt"), "a\n", cwd=str(sub))  # absolute, default allow
    config(world, "[capabilities.tools.write]\nabsolute_paths = false\n")
    e = refused(invoke, str(world.project / "abs2.txt"), cwd=str(sub))
    assert e.code == "absolute_path_denied"
    assert "capabilities.tools.write.absolute_paths is false" in e.message
    assert write(invoke, str(sub / "in.txt"), "i\n", cwd=str(sub))["path"] == "in.txt"


def test_symlink_swapped_in_for_a_parent_is_not_followed(world: Env, invoke, monkeypatch) -> None:
    from fermix_cli.core import filelocks

    (world.project / "src").mkdir()
    elsewhere = world.root / "elsewhere"
    elsewhere.mkdir()
    real_locks = filelocks.mutation_locks

    def swap_then_lock(*args, **kw):
        os.rename(world.project / "src", world.project / "src.orig")
        os.symlink(elsewhere, world.project / "src")
        return real_locks(*args, **kw)

    monkeypatch.setattr(filelocks, "mutation_locks", swap_then_lock)
    e = refused(invoke, "src/a.txt", "PWNED\n")
    assert e.code == "invalid_path" and e.message.startswith("Path changed while it was being opened")
    assert list(elsewhere.iterdir()) == []


def test_a_failed_directory_sync_is_reported_as_not_durable(world: Env, invoke, monkeypatch) -> None:
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            raise OSError(5, "Input/output error")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    e = refused(invoke, "d.txt", "d\n")
    assert (e.code, e.message) == (
        "write_not_durable",
        "d.txt was replaced but the directory sync failed (Input/output error).",
    )
    monkeypatch.setattr(os, "fsync", real_fsync)
    assert (world.project / "d.txt").read_text() == "d\n"  # committed, only not known to be durable
    assert [r["tag"] for r in snapshots(world)] == [compute_tag("d\n")]


def test_a_refused_write_reports_the_reason_and_records_nothing(world: Env, invoke, monkeypatch) -> None:
    from fermix_cli.core import fsops

    def failing(path: str, data: bytes, **kw: object) -> bool:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(fsops, "atomic_write", failing)
    e = refused(invoke, "full.txt", "x\n")
    assert (e.code, e.message) == ("write_failed", "Failed to write full.txt: No space left on device")
    assert not (world.project / "full.txt").exists() and snapshots(world) == []
