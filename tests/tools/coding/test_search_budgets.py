"""grep and content_search read the walked files once each, in path order, within their budgets.

Each case is checked against a reference scan written out in the test: the files in byte-wise path
order, each read up to the per-file cap and what is left of the call's byte cap, binary files
counted but not matched, a cut file searched as far as it was read. The whole accounting (files and
bytes scanned, truncated files, where a budget stopped the scan) and the matching lines must agree.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from search_fixture import make_tree

from fermix_cli.core import fsops
from fermix_cli.tools import search
from fermix_cli.tools.coding.grep import searcher as grep_scan
from tests.conftest import Env


def _tree() -> dict[str, str | bytes]:
    files: dict[str, str | bytes] = {}
    for i in range(60):
        body = "".join(f"line {j} of file {i}\n" for j in range(i % 7 + 1))
        if i % 3 == 0:
            body += f"def target_{i}(x):\n    return target(x)\n"
        if i % 5 == 0:
            body += "import target\n" + "filler text\n" * (i * 3)
        files[f"d{i % 4}/sub{i % 2}/f{i:02d}.py"] = body
    files["d0/binary.bin"] = b"target\x00\x01\x02"
    files["d1/latin1.txt"] = "target café\n".encode("latin-1")
    files["d2/empty.txt"] = ""
    files["d3/big.txt"] = "target big\n" * 400  # 4,400 bytes: past the small file caps below
    return files


def _bytes(files: dict[str, str | bytes]) -> dict[str, bytes]:
    return {rel: body if isinstance(body, bytes) else body.encode() for rel, body in files.items()}


def _reference_scan(
    files: dict[str, str | bytes],
    pattern: str,
    *,
    file_cap: int = grep_scan.FILE_CAP,
    call_cap: int = grep_scan.CALL_BYTES_CAP,
    max_files: int = grep_scan.MAX_FILES,
) -> dict[str, Any]:
    """grep's accounting and matching lines, ("path:line"), for a plain read of `files` in path order."""
    rx = re.compile(pattern.encode())
    out: dict[str, Any] = dict.fromkeys(("files_scanned", "bytes_scanned", "files_truncated", "binary"), 0)
    out |= {"invalid_utf8": 0, "scan_stop": None}
    rows: list[str] = []
    read: list[str] = []
    for rel, body in sorted(_bytes(files).items()):
        if out["files_scanned"] >= max_files:
            out["scan_stop"] = "file_cap"
            break
        room = call_cap - out["bytes_scanned"]
        if room <= 0:
            out["scan_stop"] = "byte_cap"
            break
        data = body[: min(file_cap, room)]
        read.append(rel)
        out["files_scanned"] += 1
        out["bytes_scanned"] += len(data)
        if b"\0" in data:
            out["binary"] += 1
            continue
        if len(data) < len(body):
            out["files_truncated"] += 1  # the cut line is searched as far as it was read
            if room < file_cap:
                out["scan_stop"] = "byte_cap"
        found = [f"{rel}:{n}" for n, line in enumerate(data.splitlines(), 1) if rx.search(line)]
        try:
            data.decode()
        except UnicodeDecodeError:
            out["invalid_utf8"] += bool(found)  # only a file with hits is checked
            continue
        rows += found
        if out["scan_stop"]:
            break
    out["hits_total"] = len(rows)
    return {"counts": out, "rows": rows, "read": read}


def _raw_rows(r: dict[str, Any]) -> list[str]:
    """The "path:line" of each primary row of a raw page."""
    return [m.group(1) for m in re.finditer(r"^(\S+?:\d+):", r["output"], re.M)]


def _counts(r: dict[str, Any]) -> dict[str, Any]:
    counts = {
        k: r[k] for k in ("files_scanned", "bytes_scanned", "files_truncated", "scan_stop", "hits_total")
    }
    return counts | {k: r["skipped"][k] for k in ("binary", "invalid_utf8")}


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The path of every file read, in order (grep and content_search both read through FileReader)."""
    log: list[str] = []
    real_read = fsops.FileReader.read

    def read(self: fsops.FileReader, path: str, cap: int) -> tuple[bytes, bool]:
        log.append(path)
        return real_read(self, path, cap)

    monkeypatch.setattr(fsops.FileReader, "read", read)
    return log


def _rel(world: Env, paths: list[str]) -> list[str]:
    return [str(Path(p).relative_to(world.project)) for p in paths]


@pytest.mark.parametrize(
    ("args", "pattern"),
    [
        ({"patterns": ["target"]}, "target"),
        ({"patterns": ["target"], "context": 2}, "target"),
        ({"patterns": [r"def \w+\("], "offset": 3, "limit": 4}, r"def \w+\("),
        ({"patterns": ["no such text"]}, "no such text"),
    ],
)
def test_ranked_mode_reads_every_file_once(
    world: Env, invoke, reads, args: dict[str, Any], pattern: str
) -> None:
    files = _tree()
    make_tree(world.project, files)
    ref = _reference_scan(files, pattern)
    r = invoke("grep", args)
    assert _counts(r) == ref["counts"] and r["files_scanned"] == 64 and r["scan_complete"]
    assert r["skipped"]["binary"] == 1
    assert _rel(world, reads) == ref["read"]  # each file once, in path order


@pytest.mark.parametrize(
    ("args", "pattern", "read"),
    [
        ({"patterns": ["target", "filler"], "mode": "raw", "limit": 7}, "target|filler", 7),
        ({"patterns": ["target"], "mode": "raw", "limit": 5, "offset": 40, "context": 1}, "target", 49),
    ],
)
def test_raw_mode_reads_only_as_far_as_its_page(
    world: Env, invoke, reads, args: dict[str, Any], pattern: str, read: int
) -> None:
    files = _tree()
    make_tree(world.project, files)
    ref = _reference_scan(files, pattern)
    r = invoke("grep", args)
    offset, limit = args.get("offset", 0), args["limit"]
    page, rows = ref["rows"][offset : offset + limit], _raw_rows(r)
    # With context, a matching line inside a hit's context prints as a primary row as well.
    assert [row for row in rows if row in page] == page and set(rows) <= set(ref["rows"])
    assert r["returned"] == limit and r["has_more"] and r["next_offset"] == offset + limit
    # The page's last file tells that there is more: the scan stops there, at the lookahead.
    assert r["scan_stop"] == "lookahead" and r["truncation_reasons"] == []
    assert r["files_scanned"] == read and _rel(world, reads) == ref["read"][:read]


@pytest.mark.parametrize("file_cap", [1_000, grep_scan.FILE_CAP])
@pytest.mark.parametrize("call_bytes", [300, 2_500, 6_000, 9_000])
@pytest.mark.parametrize("mode", ["ranked", "raw"])
def test_call_byte_cap_stops_on_the_reference_file(
    world: Env, invoke, reads, monkeypatch, call_bytes: int, file_cap: int, mode: str
) -> None:
    files = _tree()
    make_tree(world.project, files)
    monkeypatch.setattr(grep_scan, "CALL_BYTES_CAP", call_bytes)
    monkeypatch.setattr(grep_scan, "FILE_CAP", file_cap)
    ref = _reference_scan(files, "target", file_cap=file_cap, call_cap=call_bytes)
    r = invoke("grep", {"patterns": ["target"], "mode": mode, "limit": 500})
    assert _counts(r) == ref["counts"]
    assert r["scan_stop"] == "byte_cap" and r["bytes_scanned"] == call_bytes
    assert r["truncation_reasons"] == ["byte_cap"] and not r["scan_complete"]
    if mode == "raw":
        assert _raw_rows(r) == ref["rows"]
    assert _rel(world, reads) == ref["read"]  # nothing read past the cap


@pytest.mark.parametrize("max_files", [1, 5, 40, 63, 64, 65])
@pytest.mark.parametrize("mode", ["ranked", "raw"])
def test_file_cap_stops_on_the_reference_file(
    world: Env, invoke, reads, monkeypatch, max_files: int, mode: str
) -> None:
    files = _tree()
    make_tree(world.project, files)
    monkeypatch.setattr(grep_scan, "MAX_FILES", max_files)
    ref = _reference_scan(files, "target", max_files=max_files)
    r = invoke("grep", {"patterns": ["target"], "mode": mode, "limit": 500})
    assert _counts(r) == ref["counts"]
    # 64 files: a cap of 64 is not reached, since the walk ends first.
    assert r["scan_stop"] == ("file_cap" if max_files < 64 else None)
    assert r["files_scanned"] == min(max_files, 64)
    if mode == "raw":
        assert _raw_rows(r) == ref["rows"]
    assert _rel(world, reads) == ref["read"]


@pytest.mark.parametrize("file_cap", [120, 1_000])
def test_truncated_files_are_counted_and_searched_as_read(
    world: Env, invoke, monkeypatch, file_cap: int
) -> None:
    files = _tree()
    make_tree(world.project, files)
    monkeypatch.setattr(grep_scan, "FILE_CAP", file_cap)
    ref = _reference_scan(files, "target", file_cap=file_cap)
    r = invoke("grep", {"patterns": ["target"], "mode": "raw", "limit": 500})
    assert _counts(r) == ref["counts"] and r["files_truncated"] >= 1
    assert r["scan_stop"] is None and r["files_scanned"] == 64  # a per-file cut does not stop the scan
    assert _raw_rows(r) == ref["rows"]


def test_the_call_cap_stops_reading_in_the_middle_of_a_directory(
    world: Env, invoke, reads, monkeypatch
) -> None:
    # a/ is well under the cap, b/ well over it: the scan stops in b/ and reads nothing after.
    small = {f"a/f{i:02d}.txt": "target\n" for i in range(40)}
    large = {f"b/f{i:02d}.txt": "target " + "x" * 192 + "\n" for i in range(40)}
    make_tree(world.project, small | large)
    monkeypatch.setattr(grep_scan, "CALL_BYTES_CAP", 1_500)
    ref = _reference_scan(small | large, "target", call_cap=1_500)
    r = invoke("grep", {"patterns": ["target"]})
    assert _counts(r) == ref["counts"]
    assert r["scan_stop"] == "byte_cap" and r["files_scanned"] == 47 and r["files_truncated"] == 1
    assert _rel(world, reads) == ref["read"] and len(reads) == 47  # 40 + 7 of b/'s 40 files


# ----- content_search --------------------------------------------------------------------------


def _reference_matches(
    files: dict[str, str | bytes], pattern: str, file_cap: int
) -> tuple[list[tuple[str, int]], int]:
    """content_search's (path, line) for every matching line, in path order, and the files too large."""
    rx = re.compile(pattern.encode())
    rows: list[tuple[str, int]] = []
    large = 0
    for rel, body in sorted(_bytes(files).items()):
        if len(body) > file_cap:
            large += 1
        elif b"\0" not in body:
            rows += [(rel, n) for n, line in enumerate(body.splitlines(), 1) if rx.search(line)]
    return rows, large


@pytest.mark.parametrize(
    "args",
    [
        {"pattern": "target"},
        {"pattern": "target", "max_results": 7},
        {"pattern": "target", "max_results": 40},
        {"pattern": r"def \w+\(", "regex": True},
        {"pattern": "no such text"},
    ],
)
def test_content_search_gives_the_reference_matches(
    world: Env, invoke, monkeypatch, args: dict[str, Any]
) -> None:
    files = _tree()
    make_tree(world.project, files)
    monkeypatch.setattr(search, "CONTENT_FILE_CAP", 4_000)  # d3/big.txt is skipped as too large
    pattern = args["pattern"] if args.get("regex") else re.escape(args["pattern"])
    rows, large = _reference_matches(files, pattern, 4_000)
    limit = args.get("max_results", 200)
    r = invoke("content_search", args)
    assert [(m["path"], m["line"]) for m in r["matches"]] == [
        (str(world.project / p), n) for p, n in rows[:limit]
    ]
    assert r["truncated"] == ("max_results" in args) == (len(rows) > limit)
    if not r["truncated"]:
        assert r["files_skipped_large"] == large == 1


@pytest.mark.parametrize(
    ("max_results", "read", "truncated"), [(3, 1, True), (300, 61, True), (400, 80, False)]
)
def test_content_search_stops_reading_once_past_the_limit(
    world: Env, invoke, reads, max_results: int, read: int, truncated: bool
) -> None:
    # 80 files of 5 matching lines: the limit+1st match says there is more, and nothing after it is read.
    make_tree(world.project, {f"d/f{i:03d}.txt": "target\n" * 5 for i in range(80)})
    r = invoke("content_search", {"pattern": "target", "max_results": max_results})
    assert r["truncated"] == truncated and len(r["matches"]) == min(max_results, 400)
    assert _rel(world, reads) == [f"d/f{i:03d}.txt" for i in range(read)]
