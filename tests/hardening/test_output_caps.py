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


def test_grep_searches_a_line_longer_than_the_old_file_cap_whole(world: Env) -> None:
    # Caps are on output, not on what is searched (issue 15): the match after 5 MiB of one line is found.
    (world.project / "wide.txt").write_bytes(b"needle" + b"z" * (5 * MIB) + b"needle2\n")
    r = world.tool("grep", {"patterns": ["needle2"]})
    assert r.code == 0, r.stderr
    out = r.json()
    assert out["scan_complete"] is True and out["total_exact"] is True and out["complete"] is True
    assert out["primary_total"] == 1 and "wide.txt" in out["output"]
    assert len(r.stdout) < 64 * 1024  # the line itself is cut in the answer, not in the search
    assert out["hits"][0]["text_truncated"] is True and len(out["hits"][0]["text"]) == 4096


def test_grep_reads_a_big_file_to_its_end(world: Env) -> None:
    (world.project / "long.txt").write_bytes(b"short\n" * (1024 * 1024) + b"needle\n")  # 6 MiB
    out = world.tool("grep", {"patterns": ["needle"], "mode": "raw"}).json()
    assert out["output"] == "long.txt:1048577:needle"
    assert out["scan_complete"] is True and out["bytes_scanned"] == 6 * MIB + 7
