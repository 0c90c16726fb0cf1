"""`hash_edit` end to end: sessions across processes, the SQLite store, refusals, atomicity, locks."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from coding_world import cli, config, header, leftovers, snapshots

from fermix_cli.core.errors import ToolError
from fermix_cli.tools.coding.hashline import compute_tag
from tests.conftest import Env, Result

TODO = "alpha\nbeta\ngamma\ndelta\nepsilon\n"
STALE_KNOWN = (
    "Edit rejected for {p}: file changed between read and edit.\n"
    "Section is bound to #{old}, but the current file hashes to #{new}. If a prior edit in this session modified "
    "this file, copy the [path#newhash] header from that edit's response; otherwise re-read the file with `read` "
    "to refresh the tag before retrying."
)
STALE_UNKNOWN = (
    "Edit rejected for {p}: hash #{old} is not from this session.\n"
    "The current file hashes to #{new}. Re-read the file with `read` to copy a current [path#tag] header — never "
    "invent the tag and never reuse one from a prior session."
)


def edit(invoke, patch: str, session: str = "s1", **ctx: object) -> dict:
    return invoke("hash_edit", {"input": patch}, session_id=session, **ctx)


def refused(invoke, patch: str, session: str = "s1", **ctx: object) -> ToolError:
    with pytest.raises(ToolError) as e:
        invoke("hash_edit", {"input": patch}, session_id=session, **ctx)
    return e.value


def read_header(invoke, entry: str, session: str = "s1", **ctx: object) -> str:
    return invoke("read", {"paths": [entry]}, session_id=session, **ctx)["content"].split("\n", 1)[0]


# ----- chains across processes and sessions -------------------------------------------------------


def test_read_then_two_edits_each_in_its_own_process(world: Env) -> None:
    (world.project / "todo.txt").write_text(TODO)
    first = cli(world, "read", {"paths": ["todo.txt"]}, session="s1")
    assert header(first) == "[todo.txt#FEEF]"
    second = cli(
        world,
        "hash_edit",
        {"input": "[todo.txt#FEEF]\nDEL 2.=3\nINS.PRE 5:\n+DELTA-2\nINS.TAIL:\n+zeta"},
        session="s1",
    )
    assert second.code == 0, second.stderr
    assert second.json()["content"].split("\n")[0] == "[todo.txt#E0C3]"
    third = cli(world, "hash_edit", {"input": "[todo.txt#E0C3]\nSWAP 5.=5:\n+ZETA"}, session="s1")
    assert third.code == 0, third.stderr
    assert (world.project / "todo.txt").read_text() == "alpha\ndelta\nDELTA-2\nepsilon\nZETA\n"
    result = third.json()
    assert result["changed"] is True
    assert result["files"] == [
        {
            "path": "todo.txt",
            "tag": compute_tag("alpha\ndelta\nDELTA-2\nepsilon\nZETA\n"),
            "action": "edited",
            "warnings": [],
        }
    ]
    tags = [r["tag"] for r in snapshots(world)]
    assert tags == ["FEEF", "E0C3", result["files"][0]["tag"]]


def test_stale_retry_of_worked_example_2_is_rejected_with_context(world: Env) -> None:
    (world.project / "todo.txt").write_text(TODO)
    cli(world, "read", {"paths": ["todo.txt"]}, session="s1")
    cli(
        world,
        "hash_edit",
        {"input": "[todo.txt#FEEF]\nDEL 2.=3\nINS.PRE 5:\n+DELTA-2\nINS.TAIL:\n+zeta"},
        session="s1",
    )
    out = cli(world, "hash_edit", {"input": "[todo.txt#FEEF]\nSWAP 2.=2:\n+BETA"}, session="s1")
    assert out.code == 1 and out.error()["code"] == "stale_tag"
    assert out.error()["message"] == (
        STALE_KNOWN.format(p="todo.txt", old="FEEF", new="E0C3")
        + "\n\n 1:alpha\n*2:delta\n 3:DELTA-2\n 4:epsilon"
    )
    drift = cli(world, "hash_edit", {"input": "[todo.txt#FEEF]\nINS.TAIL:\n+eta"}, session="s1")
    assert drift.code == 0
    assert "head/tail position is content-independent" in drift.json()["content"]
    assert (world.project / "todo.txt").read_text().endswith("zeta\neta\n")


def test_another_session_does_not_see_the_snapshots(world: Env) -> None:
    path = world.project / "a.txt"
    path.write_text("one\ntwo\nthree\n")
    assert header(cli(world, "read", {"paths": ["a.txt"]}, session="s1")) == "[a.txt#2543]"
    path.write_text("zero\none\ntwo\nthree\n")
    patch = {"input": "[a.txt#2543]\nSWAP 3.=3:\n+THREE"}
    other = cli(world, "hash_edit", patch, session="s2")
    assert other.code == 1
    assert other.error()["message"] == (
        STALE_UNKNOWN.format(p="a.txt", old="2543", new="4EEA") + "\n\n 1:zero\n 2:one\n*3:two\n 4:three"
    )
    assert path.read_text() == "zero\none\ntwo\nthree\n"
    mine = cli(world, "hash_edit", patch, session="s1")  # worked example 3: remapped through the store
    assert mine.code == 0, mine.stderr
    assert path.read_text() == "zero\none\ntwo\nTHREE\n"
    content = mine.json()["content"]
    assert content.split("\n")[0] == "[a.txt#08C5]"
    assert content.endswith(
        "Warnings:\nRecovered by remapping stale line anchors to unchanged current lines (file changed since the "
        "tagged read). Verify the diff matches your intent."
    )


def test_recovery_from_an_external_change_with_the_same_numbers(world: Env, invoke) -> None:
    path = world.project / "a.txt"
    path.write_text("one\ntwo\nthree\nfour\n")
    tag = read_header(invoke, "a.txt")
    path.write_text("one\ntwo\nthree\nFOUR\n")
    result = edit(invoke, f"{tag}\nSWAP 1.=1:\n+ONE")
    assert path.read_text() == "ONE\ntwo\nthree\nFOUR\n"
    assert result["files"][0]["warnings"] == [
        "Recovered from a stale file hash using a previous read snapshot (file changed externally between read and edit)."
    ]


def test_a_tag_from_an_earlier_edit_recovers_through_the_store(world: Env, invoke) -> None:
    path = world.project / "a.txt"
    path.write_text("one\ntwo\nthree\nfour\n")
    tag = read_header(invoke, "a.txt")
    edit(invoke, f"{tag}\nSWAP 4.=4:\n+FOUR")
    result = edit(invoke, f"{tag}\nSWAP 1.=1:\n+ONE")  # the old header again, after our own edit
    assert path.read_text() == "ONE\ntwo\nthree\nFOUR\n"
    assert result["files"][0]["warnings"] == [
        "Recovered from a stale file hash using an earlier in-session snapshot (a prior edit in this session "
        "advanced the hash)."
    ]


def test_unseen_lines_are_listed_then_count_as_seen_in_the_next_process(world: Env) -> None:
    (world.project / "ten.txt").write_text("".join(f"r{n}\n" for n in range(1, 11)))
    tag = header(cli(world, "read", {"paths": ["ten.txt:1+2"]}, session="s1"))  # shows rows 1-5
    patch = {"input": f"{tag}\nSWAP 7.=8:\n+X"}
    first = cli(world, "hash_edit", patch, session="s1")
    assert first.code == 1 and first.error()["code"] == "unseen_lines"
    assert first.error()["message"] == (
        f"This edit targets line(s) 7-8 of ten.txt that were not shown in the read output for {tag}. They are "
        "listed below and now count as seen; check them and resend the edit if it is still right.\n\n7:r7\n8:r8"
    )
    assert (world.project / "ten.txt").read_text().count("X") == 0
    again = cli(world, "hash_edit", patch, session="s1")
    assert again.code == 0, again.stderr
    assert "X\nr9" in (world.project / "ten.txt").read_text()


def test_a_mismatch_records_the_live_file_so_its_tag_is_known(world: Env) -> None:
    path = world.project / "a.txt"
    path.write_text("a\nb\nc\n")
    cli(world, "read", {"paths": ["a.txt"]}, session="s1")
    path.write_text("x\ny\nz\n")
    live = compute_tag("x\ny\nz\n")
    out = cli(world, "hash_edit", {"input": "[a.txt#D988]\nSWAP 2.=2:\n+B"}, session="s1")
    assert out.code == 1 and out.error()["message"].startswith("Edit rejected for a.txt: file changed")
    assert [r["tag"] for r in snapshots(world)] == ["D988", live]
    # The live tag is now known to the session, but no row of it was shown: the guard lists the row first.
    unseen = cli(world, "hash_edit", {"input": f"[a.txt#{live}]\nSWAP 2.=2:\n+Y"}, session="s1")
    assert unseen.error()["code"] == "unseen_lines"
    assert cli(world, "hash_edit", {"input": f"[a.txt#{live}]\nSWAP 2.=2:\n+Y"}, session="s1").code == 0
    assert path.read_text() == "x\nY\nz\n"


def test_write_then_hash_edit_without_a_read(world: Env) -> None:
    made = cli(world, "write", {"path": "new/notes.md", "content": "# Notes\n\n- one\n- two\n"}, session="s1")
    assert made.code == 0, made.stderr
    tag = header(made)
    out = cli(world, "hash_edit", {"input": f"{tag}\nSWAP 4.=4:\n+- TWO\nINS.TAIL:\n+- three"}, session="s1")
    assert out.code == 0, out.stderr
    assert (world.project / "new" / "notes.md").read_text() == "# Notes\n\n- one\n- TWO\n- three\n"


# ----- worked examples through the tool -----------------------------------------------------------


def test_worked_example_1(world: Env, invoke) -> None:
    (world.project / "greet.py").write_text(
        'def greet(name):\n    msg = "Hello, " + name\n    print(msg)\ngreet("world")\n'
    )
    assert read_header(invoke, "greet.py") == "[greet.py#C918]"
    result = edit(
        invoke,
        '[greet.py#C918]\nSWAP 2.=2:\n+    greeting = "Hi"\n+    msg = f"{greeting}, {name}"\nINS.POST 3:\n+    return msg',
    )
    assert result["content"] == (
        '[greet.py#3716]\n1:def greet(name):\n2:    greeting = "Hi"\n3:    msg = f"{greeting}, {name}"\n'
        '4:    print(msg)\n5:    return msg\n6:greet("world")'
    )


def test_worked_example_4_block_swap_and_move(world: Env, invoke) -> None:
    svc = 'import os\n\ndef load(key):\n    path = os.path.join("data", key)\n    return open(path).read()\n\nprint(load("a"))\n'
    (world.project / "svc.py").write_text(svc)
    assert read_header(invoke, "svc.py") == "[svc.py#F796]"
    result = edit(
        invoke,
        '[svc.py#F796]\nSWAP.BLK 3:\n+def load(key):\n+    with open(os.path.join("data", key)) as fh:\n'
        "+        return fh.read()\nMV lib/svc.py",
    )
    lines = result["content"].split("\n")
    assert lines[:3] == [
        "[lib/svc.py#64F2]",
        "SWAP.BLK 3 → resolved lines 3-5 (3 lines)",
        "Moved to lib/svc.py",
    ]
    assert result["files"] == [
        {"path": "svc.py", "tag": "64F2", "action": "moved", "warnings": [], "moved_to": "lib/svc.py"}
    ]
    assert not (world.project / "svc.py").exists()
    assert "with open" in (world.project / "lib" / "svc.py").read_text()
    # The history moved with the file: the new tag is valid at the destination.
    edit(invoke, '[lib/svc.py#64F2]\nSWAP 7.=7:\n+print(load("b"))')
    assert (world.project / "lib" / "svc.py").read_text().endswith('print(load("b"))\n')


def test_worked_example_5_bom_and_crlf(world: Env, invoke) -> None:
    path = world.project / "f.txt"
    path.write_bytes(b"\xef\xbb\xbfone\r\ntwo\r\n")
    assert read_header(invoke, "f.txt") == "[f.txt#0127]"
    assert edit(invoke, "[f.txt#0127]\nSWAP 2.=2:\n+TWO")["content"].split("\n")[0] == "[f.txt#8E53]"
    assert path.read_bytes() == b"\xef\xbb\xbfone\r\nTWO\r\n"


def test_a_body_row_with_a_lone_cr_is_refused_so_later_numbers_stay_right(world: Env, invoke) -> None:
    """A CR inside a row would be two lines on disk but one in the snapshot; a later SWAP would miss."""
    path = world.project / "cr.txt"
    path.write_text("l1\nl2\nl3\n")
    assert read_header(invoke, "cr.txt") == "[cr.txt#D6C5]"
    e = refused(invoke, "[cr.txt#D6C5]\nSWAP 1:\n+a\rb")
    assert (e.code, e.details) == ("invalid_patch", {"line": 3})
    assert path.read_text() == "l1\nl2\nl3\n"
    edit(invoke, "[cr.txt#D6C5]\nSWAP 1:\n+a\n+b")
    tag = compute_tag("a\nb\nl2\nl3\n")
    edit(invoke, f"[cr.txt#{tag}]\nSWAP 3:\n+L2")
    assert path.read_text() == "a\nb\nL2\nl3\n"


def test_rem_deletes_the_file(world: Env, invoke) -> None:
    (world.project / "gone.txt").write_text("x\n")
    tag = read_header(invoke, "gone.txt")
    result = edit(invoke, f"{tag}\nREM")
    assert result["content"] == "Deleted gone.txt"
    assert result["files"][0]["action"] == "deleted"
    assert not (world.project / "gone.txt").exists()


def test_edit_keeps_mode_and_leaves_no_temp_files(world: Env, invoke) -> None:
    path = world.project / "run.sh"
    path.write_text("#!/bin/sh\necho hi\n")
    path.chmod(0o751)
    tag = read_header(invoke, "run.sh")
    edit(invoke, f"{tag}\nSWAP 2.=2:\n+echo bye")
    assert stat.S_IMODE(path.stat().st_mode) == 0o751
    assert leftovers(world.project) == []


def test_a_moved_file_keeps_its_mode(world: Env, invoke) -> None:
    """Hashline: each write keeps the mode; a script moved with MV stays executable."""
    script = world.project / "run.sh"
    script.write_text("#!/bin/sh\necho hi\n")
    script.chmod(0o750)
    tag = read_header(invoke, "run.sh")
    edit(invoke, f"{tag}\nMV bin/run2.sh")
    moved = world.project / "bin" / "run2.sh"
    assert not script.exists() and stat.S_IMODE(moved.stat().st_mode) == 0o750


def test_repairs_follow_the_capability(world: Env, invoke) -> None:
    text = "def f():\n    if x:\n        a()\n    return 1\n"
    patch = "{tag}\nSWAP 3.=3:\n+    if x:\n+        b()\n+    return 1"
    (world.project / "r.py").write_text(text)
    repaired = edit(invoke, patch.format(tag=read_header(invoke, "r.py")))
    assert (world.project / "r.py").read_text() == "def f():\n    if x:\n        b()\n    return 1\n"
    assert repaired["files"][0]["warnings"] == [
        "SWAP 3.=3: dropped body rows that repeated kept lines 2 and 4 (lines outside the range are not replaced)."
    ]
    config(world, "[capabilities.tools.hash_edit]\nrepairs = false\n")
    (world.project / "r.py").write_text(text)
    literal = edit(invoke, patch.format(tag=read_header(invoke, "r.py")))
    assert literal["files"][0]["warnings"] == []
    assert (
        world.project / "r.py"
    ).read_text() == "def f():\n    if x:\n    if x:\n        b()\n    return 1\n    return 1\n"


# ----- tool-level refusals ------------------------------------------------------------------------


def test_missing_tag_and_missing_file(world: Env, invoke) -> None:
    (world.project / "a.txt").write_text("a\n")
    e = refused(invoke, "[a.txt]\nSWAP 1.=1:\n+b")
    assert (e.code, e.message) == (
        "missing_tag",
        "Missing hashline snapshot tag for a.txt; use [a.txt#tag] from your latest read/search output. To create a "
        "new file, use the write tool.",
    )
    e = refused(invoke, "[nope.txt#1A2B]\nSWAP 1.=1:\n+b")
    assert (e.code, e.message) == (
        "not_found",
        "File not found: nope.txt. Use the write tool to create new files.",
    )


def test_final_symlink_directory_and_special_files(world: Env, invoke) -> None:
    (world.project / "real.txt").write_text("a\n")
    (world.project / "link.txt").symlink_to("real.txt")
    (world.project / "dir").mkdir()
    os.mkfifo(world.project / "pipe")
    e = refused(invoke, "[link.txt#1A2B]\nSWAP 1.=1:\n+b")
    assert (e.code, e.message) == (
        "symlink_refused",
        "hash_edit refuses link.txt: the final path component is a symbolic link; edit the real file path instead.",
    )
    e = refused(invoke, "[dir#1A2B]\nSWAP 1.=1:\n+b")
    assert (e.code, e.message) == ("is_directory", "dir is a directory; use find or list_files.")
    e = refused(invoke, "[pipe#1A2B]\nSWAP 1.=1:\n+b")
    assert (e.code, e.message) == (
        "not_regular_file",
        "pipe is not a regular file; only text files can be read.",
    )
    for name in ("link.txt", "dir", "pipe"):
        e = refused(invoke, f"[{name}#1A2B]\nREM")
        assert (e.code, e.message) == (
            "not_regular_file",
            f"REM refuses {name}: not a regular file (symlink, directory or special file).",
        )
    assert (world.project / "real.txt").read_text() == "a\n" and (world.project / "link.txt").is_symlink()


def test_too_large_and_not_utf8(world: Env, invoke) -> None:
    (world.project / "big.txt").write_bytes(b"x" * 1_048_577)
    (world.project / "bad.txt").write_bytes(b"\xc3(")
    e = refused(invoke, "[big.txt#1A2B]\nDEL 1")
    assert (
        e.message
        == "big.txt is 1048577 bytes; read is limited to 1 MiB files. Use grep, or bash for large files."
    )
    e = refused(invoke, "[bad.txt#1A2B]\nDEL 1")
    assert e.message == "bad.txt is not valid UTF-8 text (first bad byte at offset 0)."


def test_path_recovery_by_basename_and_tag(world: Env, invoke) -> None:
    (world.project / "src").mkdir()
    (world.project / "src" / "util.py").write_text("a = 1\n")
    tag = compute_tag("a = 1\n")
    read_header(invoke, "src/util.py")
    result = edit(invoke, f"[util.py#{tag}]\nSWAP 1.=1:\n+a = 2")
    assert (world.project / "src" / "util.py").read_text() == "a = 2\n"
    assert result["content"].split("\n")[0] == f"[src/util.py#{compute_tag('a = 2' + chr(10))}]"
    assert result["files"][0]["warnings"] == [
        f'Path "util.py" does not exist; matched its filename and snapshot tag #{tag} to src/util.py (read earlier '
        f"this session). Anchor future edits on [src/util.py#{tag}]."
    ]
    assert refused(invoke, f"[util.py#{tag}]\nSWAP 1.=1:\n+a = 3", session="s2").code == "not_found"


def test_path_recovery_needs_exactly_one_candidate(world: Env, invoke) -> None:
    for sub in ("x", "y"):
        (world.project / sub).mkdir()
        (world.project / sub / "same.txt").write_text("same\n")
        read_header(invoke, f"{sub}/same.txt")
    e = refused(invoke, f"[same.txt#{compute_tag('same' + chr(10))}]\nSWAP 1.=1:\n+other")
    assert e.message == "File not found: same.txt. Use the write tool to create new files."


def test_move_refusals(world: Env, invoke) -> None:
    (world.project / "a.txt").write_text("a\n")
    (world.project / "b.txt").write_text("b\n")
    (world.project / "plain").write_text("p\n")
    (world.project / "dangling").symlink_to("nowhere.txt")
    tag = read_header(invoke, "a.txt")
    cases = [
        (
            "b.txt",
            "destination_exists",
            "MV destination b.txt already exists; remove it first or pick another name.",
        ),
        ("./a.txt", "invalid_move", "MV destination is the same as a.txt."),
        (
            "dangling",
            "symlink_refused",
            "hash_edit refuses dangling: the final path component is a symbolic link; edit the real file path instead.",
        ),
        (
            "plain/c.txt",
            "not_a_directory",
            f"Cannot create plain/c.txt: {os.path.realpath(world.project / 'plain')} exists and is not a directory.",
        ),
    ]
    for dest, code, message in cases:
        e = refused(invoke, f"{tag}\nMV {dest}")
        assert (e.code, e.message) == (code, message), dest
    assert (world.project / "a.txt").read_text() == "a\n" and not (world.project / "nowhere.txt").exists()


def test_sections_naming_one_file_in_equivalent_spellings_merge(world: Env, invoke) -> None:
    (world.project / "ms.txt").write_text("a\nb\nc\n")
    assert read_header(invoke, "ms.txt") == "[ms.txt#D988]"
    absolute = world.project / "ms.txt"
    done = edit(
        invoke, f"[ms.txt#D988]\nSWAP 1:\n+A\n[{absolute}#D988]\nSWAP 3:\n+C\n[./ms.txt#D988]\nINS.TAIL:\n+d"
    )
    after = "A\nb\nC\nd\n"
    assert done["content"].split("\n")[0] == f"[ms.txt#{compute_tag(after)}]"
    assert [f["path"] for f in done["files"]] == ["ms.txt"]
    assert (world.project / "ms.txt").read_text() == after


def test_equivalent_spellings_with_different_tags_conflict(world: Env, invoke) -> None:
    (world.project / "ms.txt").write_text("a\nb\nc\n")
    read_header(invoke, "ms.txt")
    e = refused(invoke, f"[./ms.txt#D988]\nSWAP 1:\n+A\n[{world.project / 'ms.txt'}#D989]\nSWAP 3:\n+C")
    assert (e.code, e.message) == (
        "conflicting_tags",
        "Conflicting hashline snapshot tags for ms.txt: #D988 and #D989. Re-read the file and retry with one "
        "current header.",
    )
    assert (world.project / "ms.txt").read_text() == "a\nb\nc\n"


def test_two_sections_reaching_one_file_through_a_symlinked_directory(world: Env, invoke) -> None:
    (world.project / "a.txt").write_text("a\n")
    (world.project / "same").symlink_to(".")
    tag = read_header(invoke, "a.txt")
    e = refused(invoke, f"{tag}\nSWAP 1.=1:\n+b\n[same/a.txt#{tag[-5:-1]}]\nINS.TAIL:\n+c")
    assert (e.code, e.message) == (
        "duplicate_target",
        "Multiple hashline sections resolve to the same file (a.txt, same/a.txt).",
    )
    assert (world.project / "a.txt").read_text() == "a\n"


def test_swap_1_on_an_empty_file_needs_no_extra_round(world: Env, invoke) -> None:
    (world.project / "em.txt").write_text("")
    assert read_header(invoke, "em.txt") == "[em.txt#5D05]"
    done = edit(invoke, "[em.txt#5D05]\nSWAP 1:\n+x")
    assert done["content"] == f"[em.txt#{compute_tag('x')}]\n1:x"
    assert (world.project / "em.txt").read_text() == "x"


def test_lone_noop_then_stop_after_three_in_a_row_per_session(world: Env) -> None:
    (world.project / "a.txt").write_text("a\nb\n")
    cli(world, "read", {"paths": ["a.txt"]}, session="s1")
    patch = {"input": "[a.txt#9A46]\nSWAP 1.=1:\n+a"}
    noop = (
        "Edits to a.txt parsed and applied cleanly, but produced no change: the file already has this content. "
        "Re-read the file if you expected a difference."
    )
    for _ in range(2):
        out = cli(world, "hash_edit", patch, session="s1")
        assert out.code == 0 and out.json()["content"] == noop and out.json()["changed"] is False
    third = cli(world, "hash_edit", patch, session="s1")
    assert third.code == 1 and third.error() == {
        "code": "repeated_noop",
        "message": "STOP. Edits to a.txt have been a byte-identical no-op 3 times in a row — re-read the file and "
        "change your approach instead of resending.",
        "details": {},
    }
    cli(world, "read", {"paths": ["a.txt"]}, session="s2")
    assert cli(world, "hash_edit", patch, session="s2").code == 0  # another session counts on its own


def test_a_real_change_ends_the_noop_streak(world: Env, invoke) -> None:
    (world.project / "a.txt").write_text("a\nb\n")
    read_header(invoke, "a.txt")
    noop = "[a.txt#9A46]\nSWAP 1.=1:\n+a"
    edit(invoke, noop)
    edit(invoke, noop)
    edit(invoke, "[a.txt#9A46]\nSWAP 2.=2:\n+B")
    tag = read_header(invoke, "a.txt")
    edit(invoke, f"{tag}\nSWAP 2.=2:\n+b")
    read_header(invoke, "a.txt")
    edit(invoke, noop)
    edit(invoke, noop)  # two in a row again, not five
    assert refused(invoke, noop).code == "repeated_noop"


# ----- batches and atomicity ----------------------------------------------------------------------


def test_a_failing_section_in_a_batch_writes_nothing(world: Env, invoke) -> None:
    (world.project / "a.txt").write_text("a\n")
    (world.project / "b.txt").write_text("b\n")
    ta, tb = read_header(invoke, "a.txt"), read_header(invoke, "b.txt")
    (world.project / "b.txt").write_text("changed\n")
    e = refused(invoke, f"{ta}\nSWAP 1.=1:\n+A\n{tb}\nSWAP 1.=1:\n+B")
    assert e.code == "stale_tag"
    assert (world.project / "a.txt").read_text() == "a\n"
    assert leftovers(world.project) == []
    tb = read_header(invoke, "b.txt")
    e = refused(invoke, f"{ta}\nSWAP 1.=1:\n+A\n{tb}\nSWAP 1.=1:\n+changed")
    assert e.code == "no_change" and e.message.endswith(
        "Every section of a multi-section batch must change its file; drop this section and resend."
    )
    assert (world.project / "a.txt").read_text() == "a\n"


def test_a_batch_commits_every_section(world: Env, invoke) -> None:
    for name in ("a.txt", "b.txt", "c.txt"):
        (world.project / name).write_text(name + "\n")
    tags = [read_header(invoke, n) for n in ("c.txt", "a.txt", "b.txt")]
    result = edit(invoke, f"{tags[0]}\nSWAP 1.=1:\n+C\n{tags[1]}\nREM\n{tags[2]}\nMV d.txt")
    assert [f["action"] for f in result["files"]] == ["edited", "deleted", "moved"]
    assert (world.project / "c.txt").read_text() == "C\n"
    assert not (world.project / "a.txt").exists() and not (world.project / "b.txt").exists()
    assert (world.project / "d.txt").read_text() == "b.txt\n"
    assert leftovers(world.project) == []


def test_a_mid_batch_write_failure_reports_what_was_written(world: Env, invoke, monkeypatch) -> None:
    from fermix_cli.core import fsops

    for name in ("a.txt", "b.txt", "c.txt"):
        (world.project / name).write_text(name + "\n")
    tags = [read_header(invoke, n) for n in ("a.txt", "b.txt", "c.txt")]
    real = fsops.atomic_write

    def failing(path: str, data: bytes, **kw: object) -> bool:
        if path.endswith("/b.txt"):
            raise OSError(28, "No space left on device")
        return real(path, data, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(fsops, "atomic_write", failing)
    patch = "\n".join(f"{t}\nSWAP 1.=1:\n+X" for t in reversed(tags))
    e = refused(invoke, patch)
    assert (e.code, e.message) == (
        "write_failed",
        "Failed to write b.txt: No space left on device\nSections already written: a.txt\n"
        "Sections not written: b.txt, c.txt",
    )
    assert [(world.project / n).read_text() for n in ("a.txt", "b.txt", "c.txt")] == [
        "X\n",
        "b.txt\n",
        "c.txt\n",
    ]
    # What was written is recorded: a.txt's new tag works at once.
    assert edit(invoke, f"[a.txt#{compute_tag('X' + chr(10))}]\nSWAP 1.=1:\n+Y")["changed"] is True


def test_a_single_section_write_failure(world: Env, invoke, monkeypatch) -> None:
    from fermix_cli.core import fsops

    (world.project / "a.txt").write_text("a\n")
    tag = read_header(invoke, "a.txt")

    def failing(path: str, data: bytes, **kw: object) -> bool:
        raise OSError(30, "Read-only file system")

    monkeypatch.setattr(fsops, "atomic_write", failing)
    e = refused(invoke, f"{tag}\nSWAP 1.=1:\n+b")
    assert (e.code, e.message) == ("write_failed", "Failed to write a.txt: Read-only file system")
    assert (world.project / "a.txt").read_text() == "a\n"


def test_a_file_changed_after_planning_is_not_overwritten(world: Env, invoke, monkeypatch) -> None:
    from fermix_cli.tools.coding import edit as edit_module

    path = world.project / "a.txt"
    path.write_text("a\n")
    tag = read_header(invoke, "a.txt")
    real_plan = edit_module.plan_edit

    def plan_then_interfere(*args, **kw):  # another program writes while the plan is being made
        plan = real_plan(*args, **kw)
        path.write_text("someone else\n")
        return plan

    monkeypatch.setattr(edit_module, "plan_edit", plan_then_interfere)
    e = refused(invoke, f"{tag}\nSWAP 1.=1:\n+b")
    assert (e.code, e.message) == (
        "conflict",
        "a.txt changed while the edit was being prepared; nothing was written. Re-read the file and retry.",
    )
    assert path.read_text() == "someone else\n"


def test_symlink_swapped_in_after_resolution_is_not_followed(world: Env, invoke, monkeypatch) -> None:
    from fermix_cli.tools.coding import edit as edit_module

    (world.project / "src").mkdir()
    (world.project / "src" / "a.txt").write_text("a\n")
    elsewhere = world.root / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "a.txt").write_text("a\n")
    tag = read_header(invoke, "src/a.txt")
    real_prepare = edit_module.SandboxFiles.prepare

    def prepare_then_swap(self, sections):
        paths = real_prepare(self, sections)
        os.rename(world.project / "src", world.project / "src.orig")
        os.symlink(elsewhere, world.project / "src")
        return paths

    monkeypatch.setattr(edit_module.SandboxFiles, "prepare", prepare_then_swap)
    e = refused(invoke, f"{tag}\nSWAP 1.=1:\n+PWNED")
    assert e.code == "invalid_path" and e.message.startswith("Path changed while it was being opened")
    assert (elsewhere / "a.txt").read_text() == "a\n"


def test_sandbox_denials(world: Env) -> None:
    outside = world.root / "outside.txt"
    outside.write_text("o\n")
    (world.project / ".git").mkdir()
    (world.project / ".git" / "config").write_text("[core]\n")
    (world.home / ".bashrc").write_text("x\n")
    (world.project / "a.txt").write_text("a\n")
    cases = [
        (f"[{outside}#1A2B]\nDEL 1", "outside_root"),
        ("[~/.bashrc#1A2B]\nDEL 1", "protected_path"),
        ("[.git/config#1A2B]\nDEL 1", "protected_path"),
        ("[../outside.txt#1A2B]\nDEL 1", "outside_cwd"),  # relative: going absolute is the fix, not a grant
        ("[a.txt#9585]\nMV ../moved.txt", "outside_cwd"),
        ("[a.txt#9585]\nMV .git/hooks/post-commit", "protected_path"),
        (f"[a.txt#9585]\nMV {world.root / 'moved.txt'}", "outside_root"),
    ]
    for patch, code in cases:
        out = cli(world, "hash_edit", {"input": patch}, session="s1")
        assert (out.code, out.error()["code"]) == (3, code), patch
    git = cli(world, "hash_edit", {"input": "[.git/config#1A2B]\nDEL 1"})
    assert git.error()["message"].startswith(
        "Path is inside a .git directory, which file-writing tools never touch"
    )
    assert outside.read_text() == "o\n" and (world.project / "a.txt").exists()


def test_absolute_section_path_through_a_symlink_is_resolved_as_written(world: Env) -> None:
    """`[/cwd/link/x]` is an absolute path: it may reach outside cwd through a symlink, `[link/x]` may not.

    The absolute spelling is shown cwd-relative only for merging; the edit resolves what was written.
    """
    workspace = world.fermix_home / "workspace"  # a mode root: cwd and the link's target are both inside
    proj, outside = workspace / "proj", workspace / "outside"
    proj.mkdir(parents=True)
    outside.mkdir()
    before = "a\nb\n"
    (outside / "x.txt").write_text(before)
    (proj / "link").symlink_to(outside)
    through = proj / "link" / "x.txt"

    def run(name: str, args: dict) -> Result:
        return cli(world, name, args, session="s1", cwd=proj)

    read = run("read", {"paths": [str(through)]})
    tag = compute_tag(before)
    assert header(read) == f"[{outside / 'x.txt'}#{tag}]"  # outside cwd: shown absolute

    out = run("hash_edit", {"input": f"[{through}#{tag}]\nSWAP 1:\n+bye"})
    assert out.code == 0, out.stderr
    after = "bye\nb\n"
    assert out.json()["files"] == [
        {"path": str(outside / "x.txt"), "tag": compute_tag(after), "action": "edited", "warnings": []}
    ]
    assert (outside / "x.txt").read_text() == after
    tag = compute_tag(after)

    # The relative spelling is still refused, alone or merged with the absolute one; nothing is written.
    for patch in (
        f"[link/x.txt#{tag}]\nSWAP 1:\n+no",
        f"[{through}#{tag}]\nSWAP 1:\n+no\n[link/x.txt#{tag}]\nSWAP 2:\n+no",
    ):
        out = run("hash_edit", {"input": patch})
        assert (out.code, out.error()["code"]) == (3, "outside_cwd"), patch
        assert out.error()["message"].startswith("Relative path link/x.txt leaves the working directory")
    assert (outside / "x.txt").read_text() == after

    # MV: an absolute source and destination through the symlink move the file; a relative destination does not.
    out = run("hash_edit", {"input": f"[{through}#{tag}]\nMV link/y.txt"})
    assert (out.code, out.error()["code"]) == (3, "outside_cwd")
    moved = proj / "link" / "y.txt"
    out = run("hash_edit", {"input": f"[{through}#{tag}]\nMV {moved}"})
    assert out.code == 0, out.stderr
    assert out.json()["content"] == f"[{outside / 'y.txt'}#{tag}]\nMoved to {outside / 'y.txt'}"
    assert sorted(p.name for p in outside.iterdir()) == ["y.txt"]
    assert (outside / "y.txt").read_text() == after


def test_relative_paths_stay_in_cwd_and_absolute_follow_the_capability(world: Env, invoke) -> None:
    sub = world.project / "sub"
    sub.mkdir()
    (world.project / "top.txt").write_text("t\n")
    tag = read_header(invoke, "top.txt")[-5:-1]
    e = refused(invoke, f"[../top.txt#{tag}]\nSWAP 1.=1:\n+T", cwd=str(sub))
    assert e.code == "outside_cwd"
    config(world, "[capabilities.tools.hash_edit]\nabsolute_paths = false\n")
    e = refused(invoke, f"[{world.project / 'top.txt'}#{tag}]\nSWAP 1.=1:\n+T", cwd=str(sub))
    assert e.code == "absolute_path_denied"
    assert "capabilities.tools.hash_edit.absolute_paths is false" in e.message
    done = edit(invoke, f"[{world.project / 'top.txt'}#{tag}]\nSWAP 1.=1:\n+T")  # inside cwd: always allowed
    assert done["content"].split("\n")[0] == f"[top.txt#{compute_tag('T' + chr(10))}]"  # shown cwd-relative
    assert (world.project / "top.txt").read_text() == "T\n"


# ----- locks --------------------------------------------------------------------------------------

HOLDER = """
import sys, time
from pathlib import Path
from fermix_cli.core.filelocks import mutation_locks
with mutation_locks(Path(sys.argv[1]), [sys.argv[2]]):
    Path(sys.argv[3]).touch()
    time.sleep(float(sys.argv[4]))
"""


def hold_lock(world: Env, path: Path, seconds: float) -> subprocess.Popen:
    flag = world.root / "held"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            HOLDER,
            str(world.fermix_home / "run" / "locks"),
            os.path.realpath(path),
            str(flag),
            str(seconds),
        ],
        cwd=Path(__file__).resolve().parents[3],
    )
    while not flag.exists():
        time.sleep(0.01)
    return proc


def test_hash_edit_waits_for_the_file_lock(world: Env) -> None:
    path = world.project / "a.txt"
    path.write_text("a\n")
    cli(world, "read", {"paths": ["a.txt"]}, session="s1")
    holder = hold_lock(world, path, 1.5)
    started = time.monotonic()
    out = cli(world, "hash_edit", {"input": "[a.txt#9585]\nSWAP 1.=1:\n+b"}, session="s1")
    waited = time.monotonic() - started
    assert holder.wait(timeout=30) == 0
    assert out.code == 0, out.stderr
    assert waited >= 1.0 and path.read_text() == "b\n"


def test_a_lock_held_too_long_times_out(world: Env) -> None:
    from fermix_cli.core.filelocks import mutation_locks

    path = world.project / "a.txt"
    holder = hold_lock(world, path, 2)
    with (
        pytest.raises(ToolError) as e,
        mutation_locks(world.fermix_home / "run" / "locks", [os.path.realpath(path)], timeout=0.2),
    ):
        pass
    assert (e.value.code, e.value.message) == (
        "locked",
        f"{os.path.realpath(path)} is being changed by another fermix process; retry in a moment.",
    )
    holder.wait(timeout=30)


# ----- the store's bounds, seen through the tools ---------------------------------------------------


def test_least_recently_read_path_is_evicted_after_thirty(world: Env, invoke) -> None:
    for n in range(31):
        (world.project / f"f{n}.txt").write_text(f"file {n}\n")
        read_header(invoke, f"f{n}.txt")
    stored = {r["path"] for r in snapshots(world)}
    assert len(stored) == 30 and os.path.realpath(world.project / "f0.txt") not in stored
    # f0's tag still matches the file, but its snapshot (and the rows it showed) is gone.
    e = refused(invoke, f"[f0.txt#{compute_tag('file 0' + chr(10))}]\nSWAP 1.=1:\n+zero")
    assert e.code == "unseen_lines"
    edit(invoke, f"[f30.txt#{compute_tag('file 30' + chr(10))}]\nSWAP 1.=1:\n+thirty")
    assert (world.project / "f30.txt").read_text() == "thirty\n"


def test_only_four_versions_of_a_path_are_kept(world: Env, invoke) -> None:
    path = world.project / "v.txt"
    tags = []
    for n in range(5):
        path.write_text(f"version {n}\nsame\n")
        tags.append(read_header(invoke, "v.txt"))
    assert [f"[v.txt#{r['tag']}]" for r in snapshots(world)] == tags[1:]
    e = refused(invoke, f"{tags[0]}\nSWAP 2.=2:\n+SAME")
    assert e.message.startswith(f"Edit rejected for v.txt: hash #{tags[0][-5:-1]} is not from this session.")
    edit(invoke, f"{tags[1]}\nSWAP 2.=2:\n+SAME")  # still known: recovered onto the live file
    assert path.read_text() == "version 4\nSAME\n"


def test_concurrent_edits_in_separate_processes_lose_no_update(world: Env) -> None:
    import json

    path = world.project / "log.txt"
    path.write_text("start\n")
    cli(world, "read", {"paths": ["log.txt"]}, session="s1")
    tag = compute_tag("start\n")
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "fermix_cli", "--session", "s1", "tool", "hash_edit", "--json",
             json.dumps({"input": f"[log.txt#{tag}]\nINS.TAIL:\n+writer {n}"})],
            cwd=world.project, env=world.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )
        for n in range(4)
    ]  # fmt: skip
    assert [p.wait(timeout=60) for p in procs] == [0, 0, 0, 0]
    lines = path.read_text().splitlines()
    assert lines[0] == "start" and sorted(lines[1:]) == [f"writer {n}" for n in range(4)]


# Runs `fermix ARGV` in-process and SIGKILLs it (as the OOM killer or a timeout would) at its Nth fsync of
# a file or directory in the project: 1 is the new content's, once written; 2 the first directory's after it.
_KILLED_AT_FSYNC = """
import os, signal, sys
real_fsync = os.fsync
project, kill_at = sys.argv[1] + "/", int(sys.argv[2])
seen = 0
def fsync(fd):
    global seen
    real_fsync(fd)
    if (os.readlink(f"/proc/self/fd/{fd}") + "/").startswith(project):
        seen += 1
        if seen == kill_at:
            os.kill(os.getpid(), signal.SIGKILL)
os.fsync = fsync
from fermix_cli.__main__ import main
sys.exit(main(sys.argv[3:]))
"""


@pytest.mark.parametrize("kill_at", [1, 2])
def test_a_move_killed_mid_way_leaves_the_file_at_one_path(world: Env, kill_at: int) -> None:
    """A killed MV left the file at both paths, and the retry was refused `destination_exists`."""
    (world.project / "a.txt").write_text("a\n")
    tag = header(cli(world, "read", {"paths": ["a.txt"]}, session="s1"))
    args = {"input": f"{tag}\nSWAP 1.=1:\n+A\nMV sub/b.txt"}
    argv = ["--session", "s1", "tool", "hash_edit", "--json", json.dumps(args)]
    proc = subprocess.run(
        [sys.executable, "-c", _KILLED_AT_FSYNC, str(world.project), str(kill_at), *argv],
        capture_output=True,
        text=True,
        cwd=world.project,
        env=world.env,
        timeout=60,
    )
    assert proc.returncode == -9, proc.stderr
    files = sorted(str(p.relative_to(world.project)) for p in world.project.rglob("*") if not p.is_dir())
    if files == ["a.txt"]:  # killed before the move: nothing changed, and the same call now goes through
        assert (world.project / "a.txt").read_text() == "a\n"
        assert cli(world, "hash_edit", args, session="s1").code == 0
    else:
        assert files == ["sub/b.txt"]
    assert [str(p.relative_to(world.project)) for p in world.project.rglob("*") if not p.is_dir()] == [
        "sub/b.txt"
    ]
    assert (world.project / "sub" / "b.txt").read_text() == "A\n"
