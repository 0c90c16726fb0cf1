"""Reading what rg writes: its `--debug` log (the binary files and Perforce rule files it names, and
rg's own messages) and its JSON stream, cut into chunks anywhere.

These cases pin down what the names may hold (the separators rg prints around them), and check the
reading against the log of a real rg run.
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from fermix_cli.core.search import engines
from fermix_cli.core.search.p4ignore import P4Rules
from fermix_cli.core.search.ripgrep import Run, Scope

LOG = "\n".join(
    [
        "rg: DEBUG|rg::flags::parse|crates/core/flags/parse.rs:89: not reading config files",
        "rg: DEBUG|grep_printer::json|crates/printer/src/json.rs:702: ignoring ./a.bin: found binary data at offset 0",
        "rg: DEBUG|grep_printer::json|crates/printer/src/json.rs:702: ignoring ./odd: ignoring x.bin: "
        "found binary data at offset 9: found binary data at offset 12",
        "rg: DEBUG|grep_printer::json|crates/printer/src/json.rs:702: ignoring sub/é.dat: found binary data at offset 3",
        "rg: DEBUG|ignore::walk|crates/ignore/src/walk.rs:1790: ignoring ./d/.p4ignore: "
        'Ignore(IgnoreMatch(Override(Glob { glob: "!.p4ignore" })))',
        "rg: DEBUG|ignore::walk|crates/ignore/src/walk.rs:1790: ignoring ./d/other: "
        'Ignore(IgnoreMatch(Override(Glob { glob: "!other" })))',
        "rg: ./gone.txt: No such file or directory (os error 2)",
        "rg: DEBUG|globset|crates/globset/src/lib.rs:453: built glob set; 0 literals",
    ]
)


def read(log: str, p4: P4Rules | None = None) -> tuple[Run, str]:
    run = Run(Scope(root="/", p4=p4), [], deadline=0.0)
    rest = run._read_debug(log)
    return run, rest


def test_binary_files_rule_files_and_rgs_own_messages_are_told_apart() -> None:
    run, rest = read(LOG, P4Rules(ignore_names=(".p4ignore",)))
    assert run.stats.binary == [
        "a.bin",
        "odd: ignoring x.bin: found binary data at offset 9",  # first ": ignoring ", last ": found …"
        "sub/é.dat",
    ]
    assert run.stats.p4_seen == ["d/.p4ignore"]  # "other" is excluded by a glob that is not a rule file
    assert rest == "rg: ./gone.txt: No such file or directory (os error 2)"


def test_without_perforce_rules_no_rule_file_is_noted() -> None:
    run, _ = read(LOG)
    assert run.stats.p4_seen == [] and len(run.stats.binary) == 3


def test_a_log_without_debug_lines_is_returned_as_it_is() -> None:
    run, rest = read("rg: x: Permission denied (os error 13)\n")
    assert rest == "rg: x: Permission denied (os error 13)\n" and run.stats.binary == []


def test_the_real_log_of_a_real_run(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    for name in ("a.bin", "sub/b.bin", "c: ignoring d.bin"):
        (tmp_path / name).write_bytes(b"\x00hit\n")
    (tmp_path / "t.txt").write_text("hit\n")
    done = subprocess.run(
        [engines.rg(), "--no-config", "--json", "--debug", "-e", "hit"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    run, rest = read(done.stderr)
    assert sorted(run.stats.binary) == ["a.bin", "c: ignoring d.bin", "sub/b.bin"]
    assert "DEBUG" not in rest


def _child(code: str) -> tuple[subprocess.Popen[bytes], Any]:
    import sys

    from fermix_cli.core.search.ripgrep import LazyPipe

    log = LazyPipe(cap=5 << 20)
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=log.write_fd)
    log.started()
    guard = threading.Timer(20, proc.kill)  # a child left waiting on a full pipe fails the test, not hangs it
    guard.daemon = True
    guard.start()
    return proc, log


def test_a_log_longer_than_its_pipe_never_stalls_the_child_for_good() -> None:
    """3 MiB to stderr and nothing to stdout: the pipe (1 MiB) fills, the reader of stdout drains
    it every 10 ms without waiting on it, and every byte arrives in order."""
    from fermix_cli.core.search.ripgrep import read_beside

    code = "import os\nfor i in range(3 * 16):\n    os.write(2, bytes([65 + i % 26]) * 65536)\nprint('done')"
    proc, log = _child(code)
    assert proc.stdout is not None
    out = b"".join(read_beside(proc.stdout.fileno(), log))
    data = log.read_rest()
    log.close()
    assert proc.wait(timeout=30) == 0 and out == b"done\n"
    assert data == b"".join(bytes([65 + i % 26]) * 65536 for i in range(48))


def test_a_log_past_its_cap_is_read_to_its_end_and_kept_to_the_cap() -> None:
    proc, log = _child("import os\nos.write(2, b'x' * (6 << 20))")
    assert proc.stdout is not None
    from fermix_cli.core.search.ripgrep import read_beside

    assert b"".join(read_beside(proc.stdout.fileno(), log)) == b""
    assert log.read_rest() == b"x" * (5 << 20)
    assert log.cut
    log.close()
    assert proc.wait(timeout=30) == 0


def test_the_write_end_is_the_child_s_alone() -> None:
    """Once the child has it, the parent's copy is closed (else the pipe would never end), and the
    read end is not inherited by other children."""
    proc, log = _child("pass")
    assert log.write_fd == -1 and not os.get_inheritable(log.read_fd)
    assert log.read_rest() == b""
    log.close()
    proc.wait(timeout=30)


def _match(path: str, line: int, text: str) -> bytes:
    import json

    return json.dumps(
        {
            "type": "match",
            "data": {
                "path": {"text": path},
                "lines": {"text": text + "\n"},
                "line_number": line,
                "absolute_offset": 0,
                "submatches": [{"match": {"text": text}, "start": 0, "end": len(text)}],
            },
        },
        separators=(",", ":"),
    ).encode()


def _stream(*files: tuple[str, int]) -> bytes:
    out = b""
    for path, n in files:
        out += b'{"type":"begin","data":{"path":{"text":"%s"}}}\n' % path.encode()
        out += b"".join(_match(path, i + 1, f"hit{i}") + b"\n" for i in range(n))
        out += (
            b'{"type":"end","data":{"path":{"text":"%s"},"binary_offset":null,'
            b'"stats":{"matched_lines":%d,"bytes_searched":10}}}\n' % (path.encode(), n)
        )
    return out


def test_json_split_anywhere_across_chunks_decodes_the_same() -> None:
    from fermix_cli.core.search.ripgrep import Search

    data = _stream(("a.py", 3), ("b.py", 5))
    for size in (1, 7, 64, len(data)):
        search = Search(Scope(root="/"), ["hit"], deadline=0.0, keep=4)
        search.run.chunks = lambda n=size: iter(data[i : i + n] for i in range(0, len(data), n))  # type: ignore[method-assign]
        files = search._parse()
        assert [(f.path, len(f.lines), f.matched_lines) for f in files] == [("a.py", 3, 3), ("b.py", 4, 5)]
        assert [lm.text for lm in files[1].lines] == [b"hit0", b"hit1", b"hit2", b"hit3"]


def test_a_line_cut_off_by_a_kill_is_dropped_not_decoded() -> None:
    from fermix_cli.core.search.ripgrep import Search

    data = (
        _stream(("a.py", 2))
        + b'{"type":"begin","data":{"path":{"text":"b.py"}}}\n'
        + _match("b.py", 1, "hit")[:25]
    )
    search = Search(Scope(root="/"), ["hit"], deadline=0.0)
    search.run.chunks = lambda: iter([data])  # type: ignore[method-assign]
    assert [(f.path, len(f.lines)) for f in search._parse()] == [("a.py", 2)]


def test_the_summary_is_read_in_the_order_rg_prints_its_keys() -> None:
    """rg prints the summary with "data" first (`{"data":…,"type":"summary"}`), unlike every other
    message: its counts are read all the same."""
    from fermix_cli.core.search.ripgrep import Search

    summary = (
        b'{"data":{"elapsed_total":{"human":"0.001s","nanos":1000000,"secs":0},"stats":{"bytes_printed":9,'
        b'"bytes_searched":20,"elapsed":{"human":"0s","nanos":1,"secs":0},"matched_lines":5,"matches":5,'
        b'"searches":2,"searches_with_match":2}},"type":"summary"}\n'
    )
    search = Search(Scope(root="/"), ["hit"], deadline=0.0)
    search.run.chunks = lambda: iter([_stream(("a.py", 2), ("b.py", 3)) + summary])  # type: ignore[method-assign]
    assert len(search._parse()) == 2
    assert (search.files_searched, search.bytes_searched) == (2, 20)


def test_lines_keep_their_text_spans_and_ends_as_rg_reports_them(tmp_path: Path) -> None:
    """A real run: CRLF and LF endings stripped once, two matches on a line, text that is not UTF-8
    (rg sends it as base64), and the files searched counted from rg's own summary."""
    from fermix_cli.core.search.ripgrep import Search

    (tmp_path / "a.txt").write_bytes(b"hit and hit\r\nnothing\nhit\n")
    (tmp_path / "b.txt").write_bytes(b"\xffhit\n")
    (tmp_path / "c.txt").write_bytes(b"none here\n")
    search = Search(Scope(root=str(tmp_path)), ["hit"], deadline=time.monotonic() + 30, fixed=True)
    files = sorted(search._parse(), key=lambda f: f.path)
    got = [(f.path, [(lm.line, lm.text, lm.spans, lm.utf8) for lm in f.lines]) for f in files]
    assert got == [
        ("a.txt", [(1, b"hit and hit", ((0, 3), (8, 11)), True), (3, b"hit", ((0, 3),), True)]),
        ("b.txt", [(1, b"\xffhit", ((1, 4),), False)]),
    ]
    assert search.files_searched == 2  # rg counts the files that printed a match


def test_omission_notes_say_their_units_in_english() -> None:
    from fermix_cli.core.search.report import Omission

    notes = [Omission("x", 2, unit, "h").note() for unit in ("directory", "entry", "match", "path", "day")]
    assert [n.split()[2] for n in notes] == ["directories", "entries", "matches", "paths", "days"]
    assert Omission("x", 1, "directory", "h").note() == "[incomplete: 1 directory left out (x); h]"


def _wild_tree(root: Path) -> None:
    """Names rg's JSON must escape or cannot give as text, a file whose NUL comes after its first
    matches, and a file of many matches."""
    names = ['quote".py', "back\\slash.py", "tab\there.py", "é-ünï.py", "line\nbreak.py", "plain.py"]
    for name in names:
        (root / name).write_text("x = 1\nhit one\nhit two\n")
    (root / os.fsdecode(b"latin\xe9.py")).write_bytes(b"hit latin\n")
    (root / "bad-line.py").write_bytes(b"hit \xff\xfe bytes\nhit plain\n")
    (root / "late-nul.dat").write_bytes(b"hit before\n" + b"x" * 200_000 + b"\0hit after\n")
    (root / "many.py").write_text("hit\n" * 5000)


def test_begin_and_end_read_without_the_decoder_agree_with_it(tmp_path: Path) -> None:
    """The path, counts and binary flag fermix reads from rg's begin and end messages by their layout
    are what decoding each whole message gives, for every kind of name."""
    import base64
    import json

    from fermix_cli.core.search.ripgrep import Search, _path

    _wild_tree(tmp_path)
    search = Search(Scope(root=str(tmp_path)), ["hit"], deadline=time.monotonic() + 30, keep=3)
    got = {
        f.path: (f.matched_lines, f.bytes_searched, f.binary, [lm.text for lm in f.lines])
        for f in search.files()
    }
    done = subprocess.run(
        [engines.rg(), "--no-config", "--no-require-git", "-g", "!.git", "--json", "-e", "hit", "--", "."],
        cwd=tmp_path,
        capture_output=True,
        check=True,
    )
    want: dict[str, Any] = {}
    for line in done.stdout.splitlines():
        msg = json.loads(line)
        d = msg["data"]
        if msg["type"] == "begin":
            path, texts = _path(d["path"]), []
        elif msg["type"] == "match" and len(texts) < 3:
            lines = d["lines"]
            text = lines["text"].encode() if "text" in lines else base64.b64decode(lines["bytes"])
            texts.append(text.rstrip(b"\n"))
        elif msg["type"] == "end":
            st = d["stats"]
            want[path] = (st["matched_lines"], st["bytes_searched"], d["binary_offset"] is not None, texts)
    assert got == want
    assert len(got) == 10 and got["late-nul.dat"][2] is True and got["many.py"][0] == 5000


def test_lines_are_decoded_only_when_asked_for(tmp_path: Path) -> None:
    from fermix_cli.core.search.ripgrep import Search

    _wild_tree(tmp_path)
    files = {
        f.path: f for f in Search(Scope(root=str(tmp_path)), ["hit"], time.monotonic() + 30, keep=4).files()
    }
    many, bad, plain = files["many.py"], files["bad-line.py"], files["plain.py"]
    assert (len(many.pending), many.decoded) == (4, [])  # the first `keep` kept as rg wrote them
    assert bad.any_not_utf8() and not plain.any_not_utf8()
    assert [lm.utf8 for lm in bad.lines] == [False, True] and bad.pending == []
    assert bad.any_not_utf8()  # decoded now, and still told
    many.lines = many.lines[:1]
    assert [lm.line for lm in many.lines] == [1] and many.pending == []


_WRITER = """
import os, sys, time
for i in range(int(sys.argv[1])):
    os.write(1, b"%08d" % i + b"." * 4088)  # 4 KiB a write, numbered
    if i % 256 == 0:
        time.sleep(0.002)
"""


def test_the_output_is_read_whole_and_in_order_in_bounded_pieces(monkeypatch) -> None:
    """16 MiB written in 4 KiB pieces, read with the child's pidfd (collected every few ms, a pipe's
    worth at most at a time) and without one (a piece per wake-up): every byte, in order, either way."""
    import sys

    from fermix_cli.core.search import ripgrep
    from fermix_cli.core.search.ripgrep import LazyPipe, read_beside

    n = 4096
    want = b"".join(b"%08d" % i + b"." * 4088 for i in range(n))
    for pidfds in (True, False):
        if not pidfds:
            monkeypatch.setattr(ripgrep, "pidfd_open", lambda pid: None)
        log = LazyPipe()
        proc = subprocess.Popen(
            [sys.executable, "-c", _WRITER, str(n)], stdout=subprocess.PIPE, stderr=log.write_fd
        )
        log.started()
        assert proc.stdout is not None
        pieces = list(read_beside(proc.stdout.fileno(), log, proc.pid))
        log.close()
        assert proc.wait(timeout=30) == 0
        assert b"".join(pieces) == want
        assert max(len(p) for p in pieces) <= 1 << 20


def test_binary_lines_cut_by_their_common_head_read_as_the_general_way(tmp_path: Path, monkeypatch) -> None:
    """The names `_read_debug` cuts from binary files' log lines by the head they share are those the
    message-by-message reading gives, for names that hold the log's own words or a line break."""
    from fermix_cli.core.search import ripgrep

    for i, name in enumerate(
        ["a.bin", "odd: ignoring x.bin", "z: found binary data at offset 1", "line\nbreak.bin"]
    ):
        (tmp_path / f"d{i}").mkdir()
        (tmp_path / f"d{i}" / name).write_bytes(b"\x00hit\n")
    done = subprocess.run(
        [engines.rg(), "--no-config", "--json", "--debug", "-e", "hit", "--", "."],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert ripgrep._binary_head(done.stderr).endswith(": ignoring ./")  # the fast way is taken
    fast, rest = read(done.stderr)
    monkeypatch.setattr(ripgrep, "_binary_head", lambda err: "")
    slow, rest_slow = read(done.stderr)
    assert sorted(fast.stats.binary) == sorted(slow.stats.binary) and rest == rest_slow
    assert sorted(fast.stats.binary) == [
        "d0/a.bin",
        "d1/odd: ignoring x.bin",
        "d2/z: found binary data at offset 1",
        "d3/line\nbreak.bin",
    ]


def test_pending_lines_of_many_files_decode_in_one_call_as_each_alone(tmp_path: Path) -> None:
    from fermix_cli.core.search.ripgrep import Search, decode_pending

    _wild_tree(tmp_path)

    def search() -> dict[str, Any]:
        return {
            f.path: f
            for f in Search(Scope(root=str(tmp_path)), ["hit"], time.monotonic() + 30, keep=3).files()
        }

    together, alone = search(), search()
    files = sorted(together.values(), key=lambda f: f.path)
    assert files[0].lines  # one already decoded: left as it is
    decode_pending(files[:-1])
    assert [f.pending for f in files[:-1]] == [[]] * (len(files) - 1) and files[-1].pending
    assert {p: f.lines for p, f in together.items()} == {p: f.lines for p, f in alone.items()}
