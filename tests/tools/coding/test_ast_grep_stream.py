"""ast_grep over a tree with many matches: every match counted, only what the answer shows kept.

The CLI prints a JSON line per match; a tree of a million matches used to be decoded whole into memory
(3.3 GB, then the 30 s deadline) to show five of them.
"""

from __future__ import annotations

import json
import tracemalloc

from search_fixture import make_tree

from fermix_cli.core.search import engines
from tests.conftest import Env


def test_many_matches_are_counted_whole_in_bounded_memory(world: Env, invoke) -> None:
    files = 5
    per_file = 8_000
    make_tree(world.project, {f"f{i}.py": "print(x)\n" * per_file for i in range(files)})
    tracemalloc.start()
    try:
        r = invoke("ast_grep", {"pattern": "print($A)", "limit": 5})
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert r["matches_total"] == files * per_file and r["files_matched"] == files
    assert r["timed_out"] is False and r["more"]["count"] == files * per_file - 5
    assert r["output"].split("\n\n")[0] == "\n".join(f"f0.py:{n}:print(x)" for n in range(1, 6))
    # 40,000 matches decoded and kept took 160 MiB; five kept take a few hundred KiB.
    assert peak < 8 << 20, f"peak {peak / (1 << 20):.1f} MiB"


def test_the_first_matches_by_path_and_offset_whatever_the_stream_order(world: Env, invoke) -> None:
    """Nested matches (same start, different ends), many files, and a limit smaller than the matches:
    the answer holds the first ones by path, start and end, the same as with a limit that holds all."""
    tree = {f"d{i % 3}/m{i:02d}.py": "a.b.b.b\nc(2)\nx.b\n" * 5 for i in range(20)}
    make_tree(world.project, tree)
    whole = invoke("ast_grep", {"pattern": "$X.b", "limit": 500})
    assert whole["matches_total"] == 20 * 5 * 4 and whole["truncated"] is False
    rows = whole["output"].splitlines()
    spans = [(m["path"], m["byte_start"], m["byte_end"]) for m in whole["matches"]]
    assert spans[:4] == [("d0/m00.py", 0, 3), ("d0/m00.py", 0, 5), ("d0/m00.py", 0, 7), ("d0/m00.py", 13, 16)]
    assert spans == sorted(set(spans))
    for limit in (1, 2, 3, 7, 50, 333):
        part = invoke("ast_grep", {"pattern": "$X.b", "limit": limit})
        assert part["output"].split("\n\n")[0].splitlines() == rows[:limit]
        assert part["matches"] == whole["matches"][:limit]
        assert part["matches_total"] == whole["matches_total"] and part["more"]["count"] == len(rows) - limit


def test_rewrites_are_kept_to_the_limit_too(world: Env, invoke) -> None:
    make_tree(world.project, {f"r{i}.py": "".join(f"print({n})\n" for n in range(300)) for i in range(4)})
    r = invoke("ast_grep", {"pattern": "print($A)", "rewrite": "log($A)", "limit": 6})
    assert r["output"].split("\n\n")[0].splitlines() == [
        "@@ r0.py:1 bytes[0:8] @@",
        "-print(0)",
        "+log(0)",
        "@@ r0.py:2 bytes[9:17] @@",
        "-print(1)",
        "+log(1)",
    ]
    assert r["matches_total"] == 1200 and r["more"]["count"] == 1198


def test_names_with_quotes_backslashes_and_non_ascii(world: Env, invoke) -> None:
    """The file name is read from the line without decoding it, unless it holds an escape."""
    make_tree(world.project, {'q"uote.py': "foo(1)\n", "back\\slash.py": "foo(2)\n", "é.py": "foo(3)\n"})
    r = invoke("ast_grep", {"pattern": "foo($A)"})
    assert r["output"].splitlines() == ["back\\slash.py:1:foo(2)", 'q"uote.py:1:foo(1)', "é.py:1:foo(3)"]
    assert r["matches_total"] == 3 and r["files_matched"] == 3


def test_the_line_reader_agrees_with_json_loads(world: Env) -> None:
    """MatchStream's reading of the CLI's lines (file name and byte range without a full decode) keeps
    exactly what decoding every line and sorting would keep."""
    import subprocess

    from fermix_cli.tools.coding.astgrep.stream import FileTally, MatchStream

    make_tree(
        world.project,
        {
            'a"b.py': "f(1)\nf(f(2))\n",
            "c.py": 'f("\\"range\\":{\\"byteOffset\\":{\\"start\\":0,\\"end\\":1}} ,\\"file\\":\\"x")\n' * 3,
            "é/d.py": "f(4)\n" * 5,
        },
    )
    done = subprocess.run(
        [engines.ast_grep(), "run", "-p", "f($A)", "-l", "python", "--json=stream", "."],
        cwd=world.project,
        capture_output=True,
        check=True,
    )
    lines = [ln + b"\n" for ln in done.stdout.splitlines()]
    decoded = [json.loads(ln) for ln in lines]
    want = sorted(
        decoded, key=lambda m: (m["file"], m["range"]["byteOffset"]["start"], m["range"]["byteOffset"]["end"])
    )
    for keep in (1, 2, 5, 100):
        stream = MatchStream(keep, lambda name, m: FileTally(name, "ok", "python"), None, 1 << 20)
        for ln in lines:
            stream.add(ln)
        assert [m for _, m in stream.kept("python")] == want[:keep]
        assert sorted((t.rel, t.count) for t in stream.files.values()) == [
            ('a"b.py', 3),
            ("c.py", 3),
            ("é/d.py", 5),
        ]
