"""Every answer is bounded and says when it was cut; what was read is searched; a cut file is never 'complete'."""

from __future__ import annotations

from tests.conftest import Env

MIB = 1024 * 1024


def test_content_search_caps_a_huge_line_and_says_so(world: Env) -> None:
    (world.project / "one.txt").write_bytes(b"needle" + b"x" * (50 * MIB) + b"\n")
    r = world.tool("content_search", {"pattern": "needle"})
    assert r.code == 0, r.stderr
    assert len(r.stdout) < 64 * 1024
    (match,) = r.json()["matches"]
    assert match["line_truncated"] is True and match["text"].startswith("needle")


def test_content_search_caps_the_whole_answer(world: Env) -> None:
    line = b"hit " + b"y" * 990 + b"\n"
    for i in range(4):
        (world.project / f"f{i}.txt").write_bytes(line * 250)
    r = world.tool("content_search", {"pattern": "hit", "max_results": 1000})
    assert r.code == 0, r.stderr
    out = r.json()
    assert out["truncated"] is True and out["output_capped_at"] == 256 * 1024
    assert len(r.stdout) < 300 * 1024 + 200 * len(out["matches"])


def test_a_failing_command_reports_its_output_once(world: Env) -> None:
    r = world.tool("shell", {"command": "head -c 200000 /dev/zero | tr '\\0' a; exit 7"})
    assert r.code == 1
    assert 200_000 <= len(r.stderr) < 220_000, len(r.stderr)
    err = r.error()
    assert err["code"] == "exit_nonzero" and len(err["details"]["output"]) == 200_000
    assert "a" * 100 not in err["message"]


def test_grep_searches_the_read_part_of_a_line_longer_than_its_file_cap(world: Env) -> None:
    (world.project / "wide.txt").write_bytes(b"needle" + b"z" * (5 * MIB) + b"\n")
    r = world.tool("grep", {"patterns": ["needle"]})
    assert r.code == 0, r.stderr
    out = r.json()
    assert out["files_truncated"] == 1
    assert out["scan_complete"] is False and out["total_exact"] is False
    assert "file_bytes" in out["truncation_reasons"] and out["truncated"] is True
    assert out["primary_total"] >= 1 and "wide.txt" in out["output"]


def test_grep_never_calls_a_cut_file_complete(world: Env) -> None:
    (world.project / "long.txt").write_bytes(b"short\n" * (1024 * 1024))  # 6 MiB of short lines
    r = world.tool("grep", {"patterns": ["nothing-here"]})
    out = r.json()
    assert out["files_truncated"] == 1 and out["scan_complete"] is False
