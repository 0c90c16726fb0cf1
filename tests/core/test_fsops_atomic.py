"""atomic_write under a kill and where O_TMPFILE or /proc is missing: no temp file stays visible."""

from __future__ import annotations

import errno
import json
import os
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import Env

# Runs `fermix ARGV` in-process, killing the process (SIGKILL, as the OOM killer or a timeout would)
# once the new file's data is written and synced, before it is renamed over the target.
_KILLED_AFTER_THE_DATA = """
import os, signal, stat, sys
real_fsync = os.fsync
watched = sys.argv[1] + "/"
def fsync(fd):
    real_fsync(fd)
    if not stat.S_ISDIR(os.fstat(fd).st_mode) and os.readlink(f"/proc/self/fd/{fd}").startswith(watched):
        os.kill(os.getpid(), signal.SIGKILL)
os.fsync = fsync
from fermix_cli.__main__ import main
sys.exit(main(sys.argv[2:]))
"""


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("file_write", {"path": "f.txt", "content": "new\n" * 200_000}),
        ("write", {"path": "f.txt", "content": "new\n" * 1000}),
        ("file_edit", {"path": "f.txt", "old_string": "old", "new_string": "new"}),
    ],
)
def test_a_write_killed_mid_way_leaves_no_temp_file_beside_the_target(
    world: Env, tool: str, args: dict[str, str]
) -> None:
    target = world.project / "f.txt"
    target.write_text("old\n")
    payload = world.root / "payload.json"
    payload.write_text(json.dumps(args))
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            _KILLED_AFTER_THE_DATA,
            str(world.project),
            "tool",
            tool,
            "--json",
            f"@{payload}",
        ],
        capture_output=True,
        text=True,
        cwd=world.project,
        env=world.env,
        timeout=60,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert sorted(os.listdir(world.project)) == ["f.txt"]  # nothing for list_files, glob or git to show
    assert target.read_text() == "old\n"


def _no_tmpfile(monkeypatch: pytest.MonkeyPatch) -> None:
    """A file system without O_TMPFILE support (tmpfs before 3.11, NFS, many FUSE ones)."""
    real_open = os.open

    def open_(path: str, flags: int, *a: object, **kw: object) -> int:
        if flags & os.O_TMPFILE == os.O_TMPFILE:
            raise OSError(errno.EOPNOTSUPP, "Operation not supported")
        return real_open(path, flags, *a, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", open_)


def _no_proc(monkeypatch: pytest.MonkeyPatch) -> None:
    """A container or chroot without /proc: the anonymous file cannot be given a name."""
    from fermix_cli.core import fsops

    real_link, real_isdir = os.link, os.path.isdir

    def link(src: str, dst: str, **kw: object) -> None:
        if str(src).startswith("/proc/"):
            raise FileNotFoundError(errno.ENOENT, "No such file or directory", src)
        real_link(src, dst, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "link", link)
    monkeypatch.setattr(os.path, "isdir", lambda p: False if str(p).startswith("/proc") else real_isdir(p))
    monkeypatch.setattr(fsops, "_proc_fd_links", True)  # restored after the test (the fallback clears it)


@pytest.mark.parametrize("setting", [None, _no_tmpfile, _no_proc])
def test_atomic_write_keeps_its_guarantees_on_every_route(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, setting: object
) -> None:
    from fermix_cli.core.fsops import atomic_write

    if setting is not None:
        setting(monkeypatch)  # type: ignore[operator]
    kept = tmp_path / "kept.sh"
    kept.write_text("old\n")
    kept.chmod(0o751)
    other = tmp_path / "other-link"
    os.link(kept, other)
    assert atomic_write(str(kept), b"new\n") is True
    assert atomic_write(str(tmp_path / "made.txt"), b"made\n", new_mode=0o640) is False
    assert atomic_write(str(tmp_path / "sub" / "deep.txt"), b"deep\n" * 100_000, create_parents=True) is False
    assert kept.read_text() == "new\n" and stat.S_IMODE(kept.stat().st_mode) == 0o751
    assert other.read_text() == "old\n"  # replaced, not rewritten in place
    assert stat.S_IMODE((tmp_path / "made.txt").stat().st_mode) == 0o640
    assert (tmp_path / "sub" / "deep.txt").read_bytes() == b"deep\n" * 100_000
    assert sorted(os.listdir(tmp_path)) == ["kept.sh", "made.txt", "other-link", "sub"]
    assert os.listdir(tmp_path / "sub") == ["deep.txt"]


def test_without_proc_later_writes_go_the_named_way_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from fermix_cli.core import fsops

    _no_proc(monkeypatch)
    fsops.atomic_write(str(tmp_path / "a"), b"a")
    assert fsops._proc_fd_links is False
    tried: list[str] = []
    monkeypatch.setattr(os, "link", lambda src, dst, **kw: tried.append(src))
    fsops.atomic_write(str(tmp_path / "b"), b"b")
    assert tried == [] and (tmp_path / "b").read_bytes() == b"b"


def test_a_move_that_cannot_finish_changes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from fermix_cli.core.fsops import move_with_content

    source, dest = tmp_path / "a.txt", tmp_path / "sub" / "b.txt"
    source.write_text("a\n")
    source.chmod(0o750)
    (tmp_path / "taken.txt").write_text("taken\n")
    with pytest.raises(FileExistsError):
        move_with_content(str(source), str(tmp_path / "taken.txt"), b"A\n")
    real_unlink = os.unlink

    def unlink(path: str, **kw: object) -> None:
        if path == "a.txt":
            raise PermissionError(errno.EACCES, "Permission denied", path)
        real_unlink(path, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "unlink", unlink)
    with pytest.raises(PermissionError):
        move_with_content(str(source), str(dest), b"A\n")
    assert (tmp_path / "taken.txt").read_text() == "taken\n" and source.read_text() == "a\n"
    assert os.listdir(tmp_path / "sub") == []  # the destination it had linked is gone again
    monkeypatch.setattr(os, "unlink", real_unlink)
    move_with_content(str(source), str(dest), b"A\n")
    assert not source.exists() and dest.read_text() == "A\n" and stat.S_IMODE(dest.stat().st_mode) == 0o750
    assert sorted(os.listdir(tmp_path)) == ["sub", "taken.txt"] and os.listdir(tmp_path / "sub") == ["b.txt"]
