"""file_read, file_write, file_edit as seed 000 and the reference describe them."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys

import pytest

from fermix_cli.core.errors import ToolError
from tests.conftest import Env, Result


def test_read_range_and_cap(world: Env, invoke) -> None:
    p = world.project / "big.txt"
    lines = [f"line {i:06d} " + "x" * 80 for i in range(1, 3001)]
    p.write_text("\n".join(lines) + "\n")
    r = invoke("file_read", {"path": "big.txt"})
    assert r["truncated"] is True
    assert len(r["content"].encode()) <= 100_000
    n = r["lines"]
    assert r["next_offset"] == n + 1
    assert r["content"].split("\n") == lines[:n]
    r2 = invoke("file_read", {"path": "big.txt", "offset": r["next_offset"], "limit": 2})
    assert r2["content"].split("\n") == lines[n : n + 2]
    text = world.tool("file_read", {"path": "big.txt"}, "--text").stdout
    assert text.rstrip("\n").endswith(f"[truncated at 100000 bytes — continue with offset {n + 1}]")


def test_read_cap_counts_newlines(world: Env, invoke) -> None:
    (world.project / "c.txt").write_text("a" * 49_999 + "\n" + "b" * 50_000 + "\n" + "c\n")
    r = invoke("file_read", {"path": "c.txt"})
    assert r["lines"] == 2 and r["truncated"] is True and r["next_offset"] == 3


def test_read_single_line_over_cap(world: Env, invoke) -> None:
    (world.project / "wide.txt").write_text("short\n" + "w" * 100_001 + "\n")
    with pytest.raises(ToolError) as e:
        invoke("file_read", {"path": "wide.txt", "offset": 2})
    assert e.value.code == "too_large"
    assert e.value.message == "Line 2 alone exceeds the 100000-byte output cap"


@pytest.mark.parametrize("skip_chunk", [1, 7, 64, 1 << 20])
def test_lines_over_the_cap_are_read_past_at_any_chunk_boundary(
    world: Env, invoke, monkeypatch: pytest.MonkeyPatch, skip_chunk: int
) -> None:
    """A line past the cap is skipped in reused chunks; the newline may fall anywhere in one."""
    from fermix_cli.tools import files

    monkeypatch.setattr(files, "_SKIP_CHUNK", skip_chunk)
    wide = [100_001 + extra for extra in (0, 1, 5, 6, 7, 63, 64, 65, 200)]
    text = "".join(f"{n}\n" + "w" * width + "\n" for n, width in enumerate(wide)) + "end"
    (world.project / "wide.txt").write_text(text)
    for n in range(len(wide)):
        r = invoke("file_read", {"path": "wide.txt", "offset": 2 * n + 3, "limit": 1})
        assert r["content"] == (str(n + 1) if n + 1 < len(wide) else "end"), (n, r)
    r = invoke("file_read", {"path": "wide.txt", "offset": 2 * len(wide) + 1})
    assert (r["content"], r["truncated"]) == ("end", False)


@pytest.mark.parametrize(("field", "value"), [("offset", 0), ("offset", -3), ("limit", 0)])
def test_read_range_must_be_positive(world: Env, invoke, field: str, value: int) -> None:
    (world.project / "a.txt").write_text("a\n")
    with pytest.raises(ToolError) as e:
        invoke("file_read", {"path": "a.txt", field: value})
    assert e.value.code == "invalid_range"
    assert f"got: {value}" in e.value.message


def test_read_errors(world: Env, invoke) -> None:
    (world.project / "dir").mkdir()
    with pytest.raises(ToolError) as e:
        invoke("file_read", {"path": "dir"})
    assert (e.value.code, e.value.message) == (
        "invalid_path",
        f"Path is a directory: {world.project / 'dir'}",
    )
    (world.project / "bin.dat").write_bytes(b"\xff\xfe\x00\x01")
    with pytest.raises(ToolError) as e:
        invoke("file_read", {"path": "bin.dat"})
    assert e.value.code == "not_text"
    os.mkfifo(world.project / "fifo")
    with pytest.raises(ToolError) as e:
        invoke("file_read", {"path": "fifo"})
    assert e.value.code == "invalid_path"


def test_read_no_trailing_newline_and_empty_file(world: Env, invoke) -> None:
    (world.project / "n.txt").write_text("a\nb")
    assert invoke("file_read", {"path": "n.txt"})["content"] == "a\nb"
    (world.project / "e.txt").write_text("")
    assert invoke("file_read", {"path": "e.txt"})["content"] == ""


def test_write_creates_parents_and_replaces_atomically_keeping_mode(world: Env, invoke) -> None:
    r = invoke("file_write", {"path": "a/b/c.txt", "content": "héllo"})
    target = world.project / "a" / "b" / "c.txt"
    assert r == {"path": str(target), "bytes": 6, "created": True}
    assert target.read_text() == "héllo"
    os.chmod(target, 0o640)
    r = invoke("file_write", {"path": "a/b/c.txt", "content": ""})
    assert r["created"] is False and target.read_text() == ""
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert sorted(os.listdir(target.parent)) == ["c.txt"], "no temp file left behind"


def test_write_to_a_directory_fails(world: Env, invoke) -> None:
    (world.project / "d").mkdir()
    with pytest.raises(ToolError) as e:
        invoke("file_write", {"path": "d", "content": "x"})
    assert e.value.code == "invalid_path"


def test_edit_unique_anchor(world: Env, invoke) -> None:
    p = world.project / "app.py"
    p.write_text("a = 1\nDEBUG = True\nb = 2\n")
    os.chmod(p, 0o755)
    r = invoke("file_edit", {"path": "app.py", "old_string": "DEBUG = True", "new_string": "DEBUG = False"})
    assert r["line"] == 2
    assert p.read_text() == "a = 1\nDEBUG = False\nb = 2\n"
    assert stat.S_IMODE(p.stat().st_mode) == 0o755
    invoke("file_edit", {"path": "app.py", "old_string": "b = 2\n", "new_string": ""})
    assert p.read_text() == "a = 1\nDEBUG = False\n"


def test_edit_failures_change_nothing(world: Env, invoke) -> None:
    p = world.project / "f.txt"
    p.write_text("x x x\n")
    cases = [
        (
            {"old_string": "x", "new_string": "y"},
            "not_unique",
            "old_string is not unique; found 3 occurrences",
        ),
        ({"old_string": "zzz", "new_string": "y"}, "not_found", "old_string not found"),
        ({"old_string": "", "new_string": "y"}, "invalid_input", "old_string must be non-empty"),
    ]
    for args, code, message in cases:
        with pytest.raises(ToolError) as e:
            invoke("file_edit", {"path": "f.txt", **args})
        assert e.value.code == code
        assert e.value.message.startswith(message)
        assert p.read_text() == "x x x\n"
    assert e.value.exit_class == 2
    with pytest.raises(ToolError) as e:
        invoke("file_edit", {"path": "gone.txt", "old_string": "a", "new_string": "b"})
    assert e.value.code == "not_found" and e.value.message.startswith("File not found")


def test_symlink_swapped_in_after_the_check_is_not_followed(world: Env, tmp_path) -> None:
    """fsops walks with O_NOFOLLOW: a directory replaced by a symlink makes the write fail."""
    from fermix_cli.core.fsops import atomic_write

    d = world.project / "d"
    d.mkdir()
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    checked = str(d / "f.txt")
    d.rmdir()
    os.symlink(outside, d)
    with pytest.raises(ToolError) as e:
        atomic_write(checked, b"x")
    assert e.value.code == "invalid_path"
    assert list(outside.iterdir()) == []


def test_edit_counts_non_overlapping_occurrences(world: Env, invoke) -> None:
    p = world.project / "o.txt"
    p.write_text("aaaa\n")
    with pytest.raises(ToolError) as e:
        invoke("file_edit", {"path": "o.txt", "old_string": "aa", "new_string": "b"})
    assert e.value.details["count"] == 2
    p.write_text("aaa\n")
    invoke("file_edit", {"path": "o.txt", "old_string": "aa", "new_string": "b"})
    assert p.read_text() == "ba\n"


def _edit_with(tool: str, invoke, name: str) -> None:
    """Change `name` (holding "old\n") with one of the four file-writing tools."""
    if tool == "file_write":
        invoke("file_write", {"path": name, "content": "new\n"})
    elif tool == "file_edit":
        invoke("file_edit", {"path": name, "old_string": "old", "new_string": "new"})
    elif tool == "write":
        invoke("write", {"path": name, "content": "new\n"})
    else:
        header = invoke("read", {"paths": [name]}, session_id="s1")["content"].split("\n", 1)[0]
        invoke("hash_edit", {"input": f"{header}\nSWAP 1:\n+new"}, session_id="s1")


WRITERS = ["file_write", "file_edit", "write", "hash_edit"]


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can give a file to another user")
@pytest.mark.parametrize("tool", WRITERS)
def test_an_edit_keeps_the_files_owner_and_group(world: Env, invoke, tool: str) -> None:
    p = world.project / "owned.txt"
    p.write_text("old\n")
    os.chown(p, 1234, 2345)
    os.chmod(p, 0o2640)  # set-gid too: a chown after the chmod would clear it
    _edit_with(tool, invoke, "owned.txt")
    st = p.stat()
    assert p.read_text() == "new\n"
    assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (1234, 2345, 0o2640)


def _without_root_override(world: Env, tool: str, args: dict, session: str = "s1") -> Result:
    """The real CLI as a user file modes bind: as root, without CAP_DAC_OVERRIDE (setpriv, util-linux)."""
    argv = [
        sys.executable,
        "-m",
        "fermix_cli",
        "--session",
        session,
        "tool",
        tool,
        "--json",
        json.dumps(args),
    ]
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("setpriv (util-linux) is needed to drop root's write override")
        argv = [setpriv, "--bounding-set=-dac_override,-dac_read_search", *argv]
    proc = subprocess.run(argv, capture_output=True, text=True, cwd=world.project, env=world.env, timeout=60)
    return Result(proc.returncode, proc.stdout, proc.stderr)


READ_ONLY_CALLS = [
    ("file_write", {"path": "ro.txt", "content": "new\n"}),
    ("file_edit", {"path": "ro.txt", "old_string": "old", "new_string": "new"}),
    ("write", {"path": "ro.txt", "content": "new\n"}),
    ("hash_edit", {"input": "[ro.txt#TAG]\nSWAP 1:\n+new"}),
    ("hash_edit", {"input": "[ro.txt#TAG]\nSWAP 1:\n+new\nMV moved.txt"}),
]


@pytest.mark.parametrize(
    ("tool", "args"), READ_ONLY_CALLS, ids=["file_write", "file_edit", "write", "hash_edit", "mv"]
)
def test_a_read_only_file_is_refused_by_every_writer(world: Env, tool: str, args: dict) -> None:
    p = world.project / "ro.txt"
    p.write_text("old\n")
    p.chmod(0o444)
    inode = p.stat().st_ino
    if tool == "hash_edit":
        first = _without_root_override(world, "read", {"paths": ["ro.txt"]})
        tag = first.json()["content"].split("\n", 1)[0].split("#")[1].rstrip("]")
        args = {"input": args["input"].replace("TAG", tag)}
    r = _without_root_override(world, tool, args)
    assert r.code == 1, r.stderr
    error = r.error()
    shown = str(p) if tool.startswith("file_") else "ro.txt"
    assert error["code"] == "read_only_file"
    assert error["message"] == (
        f"{shown} is read-only (mode 0444); make it writable first (chmod u+w {shown}) if you mean to change it."
    )
    assert p.read_text() == "old\n" and p.stat().st_ino == inode
    assert sorted(os.listdir(world.project)) == ["ro.txt"]


def test_a_read_only_file_may_still_be_moved_unchanged_or_removed(world: Env) -> None:
    p = world.project / "ro.txt"
    p.write_text("old\n")
    p.chmod(0o444)
    tag = _without_root_override(world, "read", {"paths": ["ro.txt"]}).json()["content"][8:12]
    moved = _without_root_override(world, "hash_edit", {"input": f"[ro.txt#{tag}]\nMV kept.txt"})
    assert moved.code == 0, moved.stderr
    kept = world.project / "kept.txt"
    assert kept.read_text() == "old\n" and stat.S_IMODE(kept.stat().st_mode) == 0o444
    removed = _without_root_override(world, "hash_edit", {"input": f"[kept.txt#{tag}]\nREM"})
    assert removed.code == 0, removed.stderr
    assert not kept.exists()


def test_a_file_not_writable_by_its_user_names_owner_and_mode(world: Env) -> None:
    p = world.project / "theirs.txt"
    p.write_text("old\n")
    os.chmod(p, 0o644)
    if os.geteuid() == 0:
        os.chown(p, 1234, 1234)
    else:
        pytest.skip("a file owned by another user needs root to set up")
    r = _without_root_override(world, "file_write", {"path": "theirs.txt", "content": "new\n"})
    assert r.code == 1, r.stderr
    assert r.error()["message"] == (
        f"{p} is not writable by this user (mode 0644, owner uid 1234); change its permissions first if you "
        "mean to change it."
    )
    assert p.read_text() == "old\n"


@pytest.mark.parametrize("tool", WRITERS)
def test_root_still_replaces_a_read_only_file(world: Env, invoke, tool: str) -> None:
    """os.access semantics: whoever may write the file (root included) replaces it, mode kept."""
    if os.geteuid() != 0:
        pytest.skip("only root may write a mode 0444 file")
    p = world.project / "ro.txt"
    p.write_text("old\n")
    p.chmod(0o444)
    _edit_with(tool, invoke, "ro.txt")
    assert p.read_text() == "new\n" and stat.S_IMODE(p.stat().st_mode) == 0o444


@pytest.mark.parametrize("tool", WRITERS)
@pytest.mark.parametrize("name", ["n" * 251 + ".txt", "é" * 125 + ".txt"], ids=["255 bytes", "multibyte"])
def test_a_file_with_a_name_of_255_bytes_can_be_written_and_edited(
    world: Env, invoke, tool: str, name: str
) -> None:
    p = world.project / name
    assert len(os.fsencode(name)) >= 254
    p.write_text("old\n")
    _edit_with(tool, invoke, name)
    assert p.read_text() == "new\n"
    assert os.listdir(world.project) == [name], "no temp file left behind"
    p.unlink()
    if tool in ("file_write", "write"):
        invoke(tool, {"path": name, "content": "created\n"})
        assert p.read_text() == "created\n"


THROUGH_A_FILE = [
    ("read", {"paths": ["three.txt/x"]}, "not_found", "File not found: three.txt/x"),
    ("file_read", {"path": "three.txt/x"}, "not_found", "File not found: {P}/three.txt/x"),
    (
        "file_write",
        {"path": "three.txt/x", "content": "x"},
        "not_a_directory",
        "Cannot create {P}/three.txt/x: {P}/three.txt exists and is not a directory.",
    ),
    (
        "file_write",
        {"path": "three.txt/x/y", "content": "x", "mkdir": False},
        "not_a_directory",
        "Cannot create {P}/three.txt/x/y: {P}/three.txt exists and is not a directory.",
    ),
    (
        "file_edit",
        {"path": "three.txt/x", "old_string": "a", "new_string": "b"},
        "not_a_directory",
        "{P}/three.txt/x does not exist: {P}/three.txt is not a directory.",
    ),
    (
        "write",
        {"path": "three.txt/x", "content": "x"},
        "not_a_directory",
        "Cannot create three.txt/x: {P}/three.txt exists and is not a directory.",
    ),
]


@pytest.mark.parametrize(
    ("tool", "args", "code", "message"),
    THROUGH_A_FILE,
    ids=["read", "file_read", "file_write", "file_write nested", "file_edit", "write"],
)
def test_a_path_through_a_regular_file(
    world: Env, invoke, tool: str, args: dict, code: str, message: str
) -> None:
    """Not a path that changed while it was opened: no retry helps, so say what is in the way."""
    three = world.project / "three.txt"
    three.write_text("a\nb\nc\n")
    with pytest.raises(ToolError) as e:
        invoke(tool, args, session_id="s1")
    assert (e.value.code, e.value.message) == (code, message.replace("{P}", str(world.project)))
    assert three.read_text() == "a\nb\nc\n" and os.listdir(world.project) == ["three.txt"]


def test_atomic_write_through_a_file_names_it(world: Env) -> None:
    """Below the tools' own checks: the kernel walk reports the component that is not a directory."""
    from fermix_cli.core.fsops import atomic_write, read_bytes

    (world.project / "three.txt").write_text("a\n")
    for call in (
        lambda: atomic_write(str(world.project / "three.txt" / "x"), b"x", create_parents=True),
        lambda: read_bytes(str(world.project / "three.txt" / "x" / "y")),
    ):
        with pytest.raises(NotADirectoryError) as e:
            call()
        assert e.value.filename == str(world.project / "three.txt")


@pytest.mark.parametrize("tool", ["file_write", "file_edit"])
@pytest.mark.parametrize("dangling", [False, True], ids=["to a file", "dangling"])
def test_a_final_symlink_is_refused_not_written_through(
    world: Env, invoke, tool: str, dangling: bool
) -> None:
    real = world.project / "real.txt"
    if not dangling:
        real.write_text("old\n")
    (world.project / "link.txt").symlink_to("real.txt")
    args = {"content": "new\n"} if tool == "file_write" else {"old_string": "old", "new_string": "new"}
    with pytest.raises(ToolError) as e:
        invoke(tool, {"path": "link.txt", **args})
    leaf = world.project / "link.txt"
    assert (e.value.code, e.value.message) == (
        "symlink_refused",
        f"{tool} refuses {leaf}: the final path component is a symbolic link; write the real file path instead.",
    )
    assert leaf.is_symlink()
    assert (real.read_text() == "old\n") if not dangling else not real.exists()


TRAILING_SLASH = [
    (
        "file_write",
        "three.txt/",
        "not_a_directory",
        "{P}/three.txt/ ends with /, which names a directory, "
        "but {P}/three.txt is not one; drop the trailing / to write the file.",
    ),
    (
        "file_write",
        "fwd/",
        "invalid_path",
        "{P}/fwd/ ends with /, which names a directory; a file path is "
        "needed (drop the trailing / to write a file).",
    ),
    (
        "file_edit",
        "three.txt/",
        "not_a_directory",
        "{P}/three.txt/ ends with /, which names a directory, "
        "but {P}/three.txt is not one; drop the trailing / to write the file.",
    ),
    (
        "write",
        "three.txt/",
        "not_a_directory",
        "three.txt/ ends with /, which names a directory, but "
        "three.txt is not one; drop the trailing / to write the file.",
    ),
    (
        "write",
        "fwd/",
        "is_directory",
        "fwd/ ends with /, which names a directory; a file path is needed "
        "(drop the trailing / to write a file).",
    ),
]


@pytest.mark.parametrize(("tool", "path", "code", "message"), TRAILING_SLASH)
def test_a_trailing_slash_on_a_write_target_is_refused(
    world: Env, invoke, tool: str, path: str, code: str, message: str
) -> None:
    three = world.project / "three.txt"
    three.write_text("a\n")
    args = {"content": "x"} if tool != "file_edit" else {"old_string": "a", "new_string": "b"}
    with pytest.raises(ToolError) as e:
        invoke(tool, {"path": path, **args})
    assert (e.value.code, e.value.message) == (code, message.replace("{P}", str(world.project)))
    assert three.read_text() == "a\n" and os.listdir(world.project) == ["three.txt"]


def test_hash_edit_refuses_a_trailing_slash(world: Env, invoke) -> None:
    three = world.project / "three.txt"
    three.write_text("a\n")
    header = invoke("read", {"paths": ["three.txt"]}, session_id="s1")["content"].split("\n", 1)[0]
    with pytest.raises(ToolError) as e:
        invoke("hash_edit", {"input": header.replace(".txt#", ".txt/#") + "\nSWAP 1:\n+b"}, session_id="s1")
    assert e.value.code == "not_a_directory"
    assert three.read_text() == "a\n"


def test_file_edit_with_identical_strings_changes_nothing_and_says_so(world: Env, invoke) -> None:
    p = world.project / "same.txt"
    p.write_text("a\nkeep me\n")
    before = p.stat()
    with pytest.raises(ToolError) as e:
        invoke("file_edit", {"path": "same.txt", "old_string": "keep me", "new_string": "keep me"})
    assert (e.value.code, e.value.message) == (
        "no_change",
        f"old_string and new_string are identical, so {p} was left unchanged (the anchor is on line 2). "
        "Put the text you want in new_string.",
    )
    after = p.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    with pytest.raises(ToolError) as e:  # an anchor that is not there is still reported as such
        invoke("file_edit", {"path": "same.txt", "old_string": "gone", "new_string": "gone"})
    assert e.value.code == "not_found"


@pytest.mark.parametrize(
    ("text", "offset", "message"),
    [
        (
            "a\nb\nc\n",
            10,
            "offset 10 is beyond the end of the file (3 lines total). Use offset 1 to read from "
            "the start, or offset 3 for the last line.",
        ),
        (
            "a\nb\nc",
            4,
            "offset 4 is beyond the end of the file (3 lines total). Use offset 1 to read from "
            "the start, or offset 3 for the last line.",
        ),
        (
            "",
            2,
            "offset 2 is beyond the end of the file (0 lines total). Use offset 1 to read from the start.",
        ),
    ],
    ids=["newline-terminated", "no final newline", "empty"],
)
def test_read_offset_past_the_end_says_so(world: Env, invoke, text: str, offset: int, message: str) -> None:
    (world.project / "three.txt").write_text(text)
    with pytest.raises(ToolError) as e:
        invoke("file_read", {"path": "three.txt", "offset": offset})
    assert (e.value.code, e.value.message) == ("invalid_range", message)
    assert e.value.details["total_lines"] == len(text.splitlines())


def test_read_the_last_line_and_an_empty_file_from_the_start_still_succeed(world: Env, invoke) -> None:
    (world.project / "three.txt").write_text("a\nb\nc\n")
    assert invoke("file_read", {"path": "three.txt", "offset": 3})["content"] == "c"
    (world.project / "empty.txt").write_text("")
    assert invoke("file_read", {"path": "empty.txt", "offset": 1})["content"] == ""


def test_reading_a_unix_socket_is_refused_like_a_fifo(world: Env, invoke) -> None:
    import socket

    where = world.project / "s.sock"
    if len(os.fsencode(where)) >= 104:
        pytest.skip("the temp directory is too deep for a UNIX socket path")
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(where))
        with pytest.raises(ToolError) as e:
            invoke("file_read", {"path": "s.sock"})
        assert (e.value.code, e.value.message) == ("invalid_path", f"Not a regular file: {where}")
        with pytest.raises(ToolError) as e:
            invoke("read", {"paths": ["s.sock"]}, session_id="s1")
        assert (e.value.code, e.value.message) == (
            "not_regular_file",
            "s.sock is not a regular file; only text files can be read.",
        )
