"""Every hash_edit error message, one table row each; a failing call never changes a file."""

from __future__ import annotations

import pytest
from hashline_workspace import Workspace

from fermix_cli.core.errors import ToolError
from fermix_cli.tools.coding import refusals
from fermix_cli.tools.coding.hashedit import repeated_noop_error
from fermix_cli.tools.coding.hashline import compute_tag

F_TEXT = "one\ntwo\nthree\nfour\nfive\n"
SVC = 'import os\n\ndef load(key):\n    path = os.path.join("data", key)\n    return open(path).read()\n\nprint(load("a"))\n'
T = compute_tag(F_TEXT)
S = compute_tag(SVC)

BODY_ROW = (
    'line {L}: body rows must be `+TEXT` literal lines; got "{G}". Prefix every body line with `+` '
    "(a literal leading `+` or `-` becomes `++…` / `+-…`)."
)
UNKNOWN = (
    'line 2: unknown op "{W}"; valid ops: SWAP, SWAP.BLK, DEL, DEL.BLK, INS.PRE, INS.POST, INS.BLK.POST, '
    "INS.HEAD, INS.TAIL, MV, REM."
)
HEADER = 'Input header must be [PATH] or [PATH#TAG] with a 4-hex content-hash tag; got "{G}".'
APPLY_PATCH = (
    "apply_patch markers are not supported; start a section with [PATH#TAG] and use SWAP N.=M: / DEL N.=M. "
    "Use write for new files."
)
UNIFIED = "unified-diff hunk headers are not hashline ops; use SWAP N.=M: with +TEXT rows (or DEL N.=M)."
BARE = "line 2: a bare line number/range is not an op; write SWAP N.=M: (replace) or DEL N.=M (delete)."
MV_BODY = "`MV DEST` does not take body rows. Put line edits above the `MV` row."
NO_RESOLVER = (
    "`SWAP.BLK`/`DEL.BLK`/`INS.BLK.POST` are not available here (no block resolver configured). "
    "Use a concrete line range."
)

ROWS = [
    (
        "not a header",
        "SWAP 1.=1:\n+x",
        'input must begin with "[PATH#HASH]" on the first non-blank line for anchored edits; got: '
        '"SWAP 1.=1:". Example: "[src/foo.ts#1A2B]" then edit ops.',
    ),
    ("unified diff first", "@@ -1,2 +1,2 @@\n-a\n+b", UNIFIED),
    ("unified diff later", "[f.txt#{T}]\n@@ -1 +1 @@", UNIFIED),
    ("apply_patch first", "*** Begin Patch\n*** Update File: f.txt\n@@\n-a", APPLY_PATCH),
    ("apply_patch later", "[f.txt#{T}]\n*** Add File: g.txt", APPLY_PATCH),
    ("tag too short", "[f.txt#1A2]\nDEL 1", HEADER.replace("{G}", "[f.txt#1A2]")),
    ("tag not hex", "[f.txt#1A2G]\nDEL 1", HEADER.replace("{G}", "[f.txt#1A2G]")),
    ("tag too long", "[f.txt#1A2B5]\nDEL 1", HEADER.replace("{G}", "[f.txt#1A2B5]")),
    ("tag with line", "[f.txt#1A2B:42]\nDEL 1", HEADER.replace("{G}", "[f.txt#1A2B:42]")),
    ("empty path", "[#1A2B]\nDEL 1", HEADER.replace("{G}", "[#1A2B]")),
    (
        "reversed",
        "[f.txt#{T}]\nSWAP 3.=2:\n+x",
        "line 2: range 3.=2 is reversed; write the lower line number first.",
    ),
    (
        "del colon",
        "[f.txt#{T}]\nDEL 2:\n+x",
        "`DEL 2.=2` has no colon and no body. Remove the colon and body rows.",
    ),
    (
        "del.blk colon is a raw row",
        "[svc.py#{S}]\nDEL.BLK 3:",
        'line 2: payload line has no preceding hunk header: "DEL.BLK 3:"',
    ),
    ("bare body row", "[f.txt#{T}]\nSWAP 2.=2:\nTWO", BODY_ROW.replace("{L}", "3").replace("{G}", "TWO")),
    (
        "bare body row after a plus row",
        "[f.txt#{T}]\nINS.POST 2:\n+a\n  b",
        BODY_ROW.replace("{L}", "4").replace("{G}", "b"),
    ),
    (
        "minus row",
        "[f.txt#{T}]\nSWAP 2.=2:\n-two\n+TWO",
        "line 3: `-` rows are not valid; the range already names the lines being changed. "
        "For a literal `-` line, write `+-…`.",
    ),
    (
        "payload without hunk",
        "[f.txt#{T}]\nhello",
        'line 2: payload line has no preceding hunk header: "hello"',
    ),
    ("plus row without hunk", "[f.txt#{T}]\n+x", 'line 2: payload line has no preceding hunk header: "+x"'),
    ("bare number", "[f.txt#{T}]\n12", BARE),
    ("bare range", "[f.txt#{T}]\n5-7:", BARE),
    ("unknown op", "[f.txt#{T}]\nREPLACE 2:\n+x", UNKNOWN.replace("{W}", "REPLACE")),
    ("wrong-case keyword", "[f.txt#{T}]\nswap 2:\n+x", UNKNOWN.replace("{W}", "swap")),
    ("zero", "[f.txt#{T}]\nSWAP 0.=1:\n+x", 'line 2: line numbers start at 1; got "0".'),
    ("non-number", "[f.txt#{T}]\nDEL x", 'line 2: line numbers start at 1; got "x".'),
    ("unanchored", "[f.txt#{T}]\nSWAP:\n+x", 'line 2: line numbers start at 1; got "".'),
    ("beyond eof", "[f.txt#{T}]\nSWAP 9.=9:\n+x", "Line 9 does not exist (file has 6 lines)"),
    (
        "number past the int digit limit",
        "[f.txt#{T}]\nSWAP " + "9" * 5000 + ":\n+x",
        'line 2: line number "' + "9" * 40 + '…" is too large; no file has that many lines.',
    ),
    (
        "number just too large",
        "[f.txt#{T}]\nDEL 2.=" + "1" * 19,
        'line 2: line number "' + "1" * 19 + '" is too large; no file has that many lines.',
    ),
    (
        "lone CR in a body row",
        "[f.txt#{T}]\nSWAP 1:\n+a\rb",
        "line 3: body row contains a carriage return (\\r), which would split it into two lines; put each "
        "line in its own `+TEXT` row.",
    ),
    (
        "CR left after the CRLF row end",
        "[f.txt#{T}]\r\nINS.POST 1:\r\n+x\r\r\n",
        "line 3: body row contains a carriage return (\\r), which would split it into two lines; put each "
        "line in its own `+TEXT` row.",
    ),
    ("ins without body", "[f.txt#{T}]\nINS.POST 2:\nDEL 3", "`INS` needs at least one `+TEXT` body row."),
    ("ins.tail without body", "[f.txt#{T}]\nINS.TAIL:\n\n", "`INS` needs at least one `+TEXT` body row."),
    (
        "del with body",
        "[f.txt#{T}]\nDEL 2.=3\n+x",
        "line 3: `DEL 2.=3` does not take body rows. Remove the body, or use `SWAP 2.=3:`.",
    ),
    (
        "del.blk with body",
        "[svc.py#{S}]\nDEL.BLK 3\n+x",
        "line 3: `DEL.BLK 3` does not take body rows. Remove the body, or use `SWAP.BLK 3:`.",
    ),
    (
        "overlap",
        "[f.txt#{T}]\nSWAP 2.=3:\n+x\nDEL 3.=4",
        "line 4: anchor line 3 is already targeted by another hunk on line 2. Issue ONE hunk per range; "
        "payload is only the final desired content, never a before/after pair.",
    ),
    (
        "swap.blk without body",
        "[svc.py#{S}]\nSWAP.BLK 3:\n",
        "`SWAP.BLK 3:` needs at least one `+TEXT` body row. To delete a block, use `DEL.BLK 3`.",
    ),
    (
        "del.blk unresolved",
        "[svc.py#{S}]\nDEL.BLK 6",
        "DEL.BLK 6: `DEL.BLK 6` could not resolve a syntactic block beginning on line 6 (unsupported "
        "language, blank/closer line, or parse error). Use `DEL N.=M` with explicit lines.\n\n"
        ' 4:    path = os.path.join("data", key)\n 5:    return open(path).read()\n*6:\n 7:print(load("a"))',
    ),
    (
        "del.blk single line",
        "[svc.py#{S}]\nDEL.BLK 1",
        "DEL.BLK 1: `DEL.BLK 1` resolved a single-line block — line 1 is a bare statement, not the opening "
        "line of a multi-line construct. For that one line use `DEL 1`.",
    ),
    (
        "ins.blk.post single line",
        "[svc.py#{S}]\nINS.BLK.POST 7:\n+x",
        "INS.BLK.POST 7: `INS.BLK.POST 7` resolved a single-line block — line 7 is a bare statement, not "
        "the opening line of a multi-line construct. For that one line use `INS.POST 7:`.",
    ),
    (
        "rem after line ops",
        "[f.txt#{T}]\nDEL 1\nREM",
        "line 3: `REM` deletes the whole file and takes no body rows or line ops. Issue it alone under the header.",
    ),
    (
        "line ops after rem",
        "[f.txt#{T}]\nREM\nDEL 1",
        "`REM` deletes the whole file and cannot be combined with line ops.",
    ),
    (
        "rem merged with line ops",
        "[f.txt#{T}]\nDEL 1\n[f.txt#{T}]\nREM",
        "`REM` deletes the whole file and cannot be combined with line ops.",
    ),
    ("body after mv", "[f.txt#{T}]\nMV g.txt\n+x", MV_BODY),
    ("body after rem", "[f.txt#{T}]\nREM\n+x", MV_BODY),
    ("two file ops", "[f.txt#{T}]\nMV g.txt\nREM", "Only one file-level op (`REM` or `MV`) per section."),
    (
        "two file ops merged",
        "[f.txt#{T}]\nMV g.txt\n[f.txt#{T}]\nMV h.txt",
        "Only one file-level op (`REM` or `MV`) per section.",
    ),
    ("mv onto itself", "[f.txt#{T}]\nMV ./f.txt", "MV destination is the same as f.txt."),
    (
        "mv onto existing",
        "[f.txt#{T}]\nMV svc.py",
        "MV destination svc.py already exists; remove it first or pick another name.",
    ),
    (
        "conflicting tags",
        "[f.txt#{T}]\nDEL 1\n[f.txt#ABCD]\nDEL 2",
        "Conflicting hashline snapshot tags for f.txt: #{T} and #ABCD. Re-read the file and retry with one "
        "current header.",
    ),
    ("only blank input", "\n\n  \n", "No hashline sections found in input."),
    ("header without ops", "[f.txt#{T}]\n\n", "No hashline sections found in input."),
    (
        "missing tag",
        "[f.txt]\nDEL 1",
        "Missing hashline snapshot tag for f.txt; use [f.txt#tag] from your latest read/search output. "
        "To create a new file, use the write tool.",
    ),
    (
        "same file twice",
        "[f.txt#{T}]\nDEL 1\n[a/../f.txt#{T}]\nDEL 2",  # `./f.txt` merges; `..` is not resolved lexically
        "Multiple hashline sections resolve to the same file (f.txt, a/../f.txt).",
    ),
    (
        "tag not from this session",
        "[f.txt#ABCD]\nDEL 1",
        "Edit rejected for f.txt: hash #ABCD is not from this session.\nThe current file hashes to #{T}. "
        "Re-read the file with `read` to copy a current [path#tag] header — never invent the tag and never "
        "reuse one from a prior session.\n\n*1:one\n 2:two\n 3:three",
    ),
    (
        "stale rem is never recovered",
        "[f.txt#ABCD]\nREM",
        "Edit rejected for f.txt: hash #ABCD is not from this session.\nThe current file hashes to #{T}. "
        "Re-read the file with `read` to copy a current [path#tag] header — never invent the tag and never "
        "reuse one from a prior session.",
    ),
    (
        "file not found",
        "[nope.txt#ABCD]\nDEL 1",
        "File not found: nope.txt. Use the write tool to create new files.",
    ),
    (
        "multi-section no-op",
        "[f.txt#{T}]\nSWAP 1.=1:\n+one\n[svc.py#{S}]\nDEL 2",
        "Edits to f.txt parsed and applied cleanly, but produced no change: the file already has this content. "
        "Re-read the file if you expected a difference. Every section of a multi-section batch must change "
        "its file; drop this section and resend.",
    ),
    (
        "head with number",
        "[f.txt#{T}]\nINS.HEAD 3:\n+x",
        'line 2: `INS.HEAD:` takes no line number; got "3".',
    ),
    (
        "single op with range",
        "[f.txt#{T}]\nINS.POST 2-3:\n+x",
        'line 2: `INS.POST` takes one line number; got "2-3".',
    ),
    ("mv without destination", "[f.txt#{T}]\nMV", "line 2: `MV` needs a destination path."),
    ("rem with argument", "[f.txt#{T}]\nREM now", "line 2: `REM` takes no arguments."),
]


@pytest.fixture
def files(ws: Workspace) -> Workspace:
    ws.write("f.txt", F_TEXT)
    ws.write("svc.py", SVC)
    ws.read("f.txt", "svc.py")
    return ws


@pytest.mark.parametrize(("patch", "message"), [row[1:] for row in ROWS], ids=[row[0] for row in ROWS])
def test_error_messages(files: Workspace, patch: str, message: str) -> None:
    before = dict(files.files)
    with pytest.raises(ToolError) as caught:
        files.edit(patch.replace("{T}", T).replace("{S}", S))
    assert caught.value.message == message.replace("{T}", T).replace("{S}", S)
    assert files.files == before


def test_no_resolver_configured(files: Workspace) -> None:
    for op in ("DEL.BLK 3", "SWAP.BLK 3:\n+x", "INS.BLK.POST 3:\n+x"):
        with pytest.raises(ToolError) as caught:
            files.edit(f"[svc.py#{S}]\n{op}", resolver=None)
        assert caught.value.message == NO_RESOLVER


def test_unseen_lines_are_listed_then_count_as_seen(ws: Workspace) -> None:
    ws.write("f.txt", F_TEXT)
    assert ws.read("f.txt:1-1") == f"[f.txt#{T}]\n1:one\n2:two\n3:three\n4:four"
    with pytest.raises(ToolError) as caught:
        ws.edit(f"[f.txt#{T}]\nSWAP 4.=5:\n+FOUR\n+FIVE")
    assert caught.value.code == "unseen_lines"
    assert caught.value.message == (
        f"This edit targets line(s) 5 of f.txt that were not shown in the read output for [f.txt#{T}]. "
        "They are listed below and now count as seen; check them and resend the edit if it is still right."
        "\n\n5:five"
    )
    assert ws.text("f.txt") == F_TEXT
    ws.edit(f"[f.txt#{T}]\nSWAP 4.=5:\n+FOUR\n+FIVE")
    assert ws.text("f.txt") == "one\ntwo\nthree\nFOUR\nFIVE\n"


def test_unseen_line_ranges_are_compressed(ws: Workspace) -> None:
    ws.write("g.txt", "".join(f"{n}\n" for n in range(1, 11)))
    tag = compute_tag(ws.text("g.txt"))
    with pytest.raises(ToolError) as caught:  # never read: nothing was seen
        ws.edit(f"[g.txt#{tag}]\nSWAP 1.=4:\n+x\nDEL 7")
    assert caught.value.message.startswith("This edit targets line(s) 1-4, 7 of g.txt that were not shown")
    assert caught.value.message.endswith("\n\n1:1\n2:2\n3:3\n4:4\n7:7")
    ws.edit(f"[g.txt#{tag}]\nSWAP 1.=4:\n+x\nDEL 7")
    assert ws.text("g.txt") == "x\n5\n6\n8\n9\n10\n"


def test_unseen_listing_over_40_lines_does_not_mark_them_seen(ws: Workspace) -> None:
    ws.write("g.txt", "".join(f"{n}\n" for n in range(1, 61)))
    tag = compute_tag(ws.text("g.txt"))
    for _ in range(2):
        with pytest.raises(ToolError) as caught:
            ws.edit(f"[g.txt#{tag}]\nDEL 1.=50")
        rows = caught.value.message.split("\n\n", 1)[1].split("\n")
        assert rows[:40] == [f"{n}:{n}" for n in range(1, 41)]
        assert rows[40] == "[10 more unseen lines not listed; read them before retrying]"


def test_unseen_rows_are_clipped_at_512_columns(ws: Workspace) -> None:
    ws.write("w.txt", "y" * 600 + "\n")
    tag = compute_tag(ws.text("w.txt"))
    with pytest.raises(ToolError) as caught:
        ws.edit(f"[w.txt#{tag}]\nDEL 1")
    assert caught.value.message.endswith("\n\n1:" + "y" * 512 + "…[+88 chars]")


def test_result_over_1_mib_is_refused(ws: Workspace) -> None:
    ws.write("big.txt", "x" * 1_048_000 + "\n")
    ws.read("big.txt")
    tag = compute_tag(ws.text("big.txt"))
    with pytest.raises(ToolError) as caught:
        ws.edit(f"[big.txt#{tag}]\nINS.POST 1:\n+" + "y" * 1000)
    assert caught.value.message == (
        "big.txt would be 1049002 bytes after this edit; hash_edit is limited to 1 MiB files."
    )


@pytest.mark.parametrize(
    ("patch", "message"),
    [
        (
            "[f.txt#ABCD]\n+" + "x" * 1_048_576,
            "input is 1048590 bytes; hash_edit is limited to 1 MiB of input.",
        ),
        (
            "".join(f"[f{n}.txt#ABCD]\nDEL 1\n" for n in range(33)),
            "input has 33 sections; hash_edit accepts at most 32.",
        ),
        (
            "[f.txt#ABCD]\n" + "INS.TAIL:\n+x\n" * 1001,
            "input has 1001 hunks; hash_edit accepts at most 1000.",
        ),
    ],
    ids=["input bytes", "sections", "hunks"],
)
def test_call_limits(ws: Workspace, patch: str, message: str) -> None:
    with pytest.raises(ToolError) as caught:
        ws.edit(patch)
    assert caught.value.message == message


def test_stop_after_three_identical_noops() -> None:
    assert repeated_noop_error("f.txt", 2) is None
    error = repeated_noop_error("f.txt", 3)
    assert error is not None and error.message == (
        "STOP. Edits to f.txt have been a byte-identical no-op 3 times in a row — re-read the file and change "
        "your approach instead of resending."
    )


@pytest.mark.parametrize(
    ("error", "message"),
    [
        (refusals.read_not_found("a.txt"), "File not found: a.txt"),
        (refusals.read_directory("src"), "src is a directory; use find or list_files."),
        (refusals.edit_not_found("a.txt"), "File not found: a.txt. Use the write tool to create new files."),
        (
            refusals.edit_symlink("link.txt"),
            "hash_edit refuses link.txt: the final path component is a symbolic link; edit the real file path instead.",
        ),
        (
            refusals.rem_not_regular("dev"),
            "REM refuses dev: not a regular file (symlink, directory or special file).",
        ),
        (
            refusals.partial_commit("disk full", ["a.txt"], ["b.txt"]),
            "disk full\nSections already written: a.txt\nSections not written: b.txt",
        ),
    ],
)
def test_caller_side_refusals(error: ToolError, message: str) -> None:
    assert error.message == message


def test_path_recovery_notice() -> None:
    assert refusals.path_recovered("src/old.py", "1A2B", "src/new/old.py") == (
        'Path "src/old.py" does not exist; matched its filename and snapshot tag #1A2B to src/new/old.py '
        "(read earlier this session). Anchor future edits on [src/new/old.py#1A2B]."
    )
