"""hash_edit semantics: ordering, the phantom line, leniency, line endings, batches, file ops, preview."""

from __future__ import annotations

import pytest
from hashline_workspace import Workspace

from fermix_cli.core.errors import ToolError
from fermix_cli.tools.coding.hashedit import MoveFile, RemoveFile, WriteFile
from fermix_cli.tools.coding.hashline import compute_tag
from fermix_cli.tools.coding.patchparse import normalise_section_path, parse_patch


def setup(ws: Workspace, path: str, text: str | bytes) -> str:
    """Write and read a file in full; return its tag."""
    ws.write(path, text)
    ws.read(path)
    return compute_tag(ws.files[path].decode())


def edited(ws: Workspace, text: str, ops: str) -> str:
    tag = setup(ws, "f.txt", text)
    ws.edit(f"[f.txt#{tag}]\n{ops}")
    return ws.text("f.txt")


ABC = "a\nb\nc\n"

SEMANTICS = [
    (
        "order at one line",
        ABC,
        "INS.POST 2:\n+post\nSWAP 2.=2:\n+swap\nINS.PRE 2:\n+pre",
        "a\npre\nswap\npost\nc\n",
    ),
    (
        "inserts keep written order",
        ABC,
        "INS.PRE 2:\n+p1\nINS.PRE 2:\n+p2\nINS.POST 2:\n+q1\nINS.POST 2:\n+q2",
        "a\np1\np2\nb\nq1\nq2\nc\n",
    ),
    ("head before pre 1", ABC, "INS.PRE 1:\n+pre\nINS.HEAD:\n+head", "head\npre\na\nb\nc\n"),
    (
        "tail after post of last line",
        ABC,
        "INS.TAIL:\n+t1\nINS.POST 3:\n+post\nINS.TAIL:\n+t2",
        "a\nb\nc\npost\nt1\nt2\n",
    ),
    (
        "insert on a deleted line",
        ABC,
        "DEL 2\nINS.POST 2:\n+after\nINS.PRE 2:\n+before",
        "a\nbefore\nafter\nc\n",
    ),
    (
        "original numbering",
        "1\n2\n3\n4\n5\n",
        "SWAP 1.=1:\n+x\n+y\n+z\nDEL 3\nSWAP 5.=5:\n+five",
        "x\ny\nz\n2\n4\nfive\n",
    ),
    ("empty swap body deletes", ABC, "SWAP 2.=2:", "a\nc\n"),
    ("delete the phantom is dropped", ABC, "DEL 3.=4", "a\nb\n"),
    ("swap over the phantom keeps final newline", ABC, "SWAP 3.=4:\n+C", "a\nb\nC\n"),
    ("insert after the phantom lands before it", ABC, "INS.POST 4:\n+d", "a\nb\nc\nd\n"),
    ("insert before the phantom", ABC, "INS.PRE 4:\n+d", "a\nb\nc\nd\n"),
    ("tail without final newline", "a\nb", "INS.TAIL:\n+c", "a\nb\nc"),
    ("delete everything", ABC, "DEL 1.=3", ""),
    (
        "range separators",
        "1\n2\n3\n4\n5\n6\n7\n8\n9\n",
        "SWAP 1..2:\n+a\nSWAP 3-4:\n+b\nSWAP 5 6:\n+c\nSWAP 7…8:\n+d",
        "a\nb\nc\nd\n9\n",
    ),
    ("single number is a one-line range", ABC, "SWAP 2:\n+B\nDEL 3", "a\nB\n"),
    ("missing colon tolerated", ABC, "SWAP 2.=2\n+B\nINS.POST 3\n+d", "a\nB\nc\nd\n"),
    ("indented keywords", ABC, "  SWAP 2.=2:\n+B\n\tDEL 3", "a\nB\n"),
    (
        "body rows are verbatim after one plus",
        ABC,
        "SWAP 2.=2:\n++x\n+- item\n+\n+  indented\n+12:x",
        "a\n+x\n- item\n\n  indented\n12:x\nc\n",
    ),
    ("blank raw rows inside a body", ABC, "SWAP 2.=2:\n+x\n\n\n+y\n\n\nDEL 3", "a\nx\n\n\ny\n"),
    ("comment line before a hunk is dropped", ABC, "# replace b\nSWAP 2.=2:\n+B", "a\nB\nc\n"),
    ("end patch stops parsing", ABC, "SWAP 2.=2:\n+B\n*** End Patch\ngarbage", "a\nB\nc\n"),
    ("abort stops parsing", ABC, "DEL 1\n*** Abort\nDEL 2", "b\nc\n"),
]


@pytest.mark.parametrize(
    ("text", "ops", "expected"), [r[1:] for r in SEMANTICS], ids=[r[0] for r in SEMANTICS]
)
def test_semantics(ws: Workspace, text: str, ops: str, expected: str) -> None:
    assert edited(ws, text, ops) == expected


@pytest.mark.parametrize("ops", ["INS.HEAD:\n+x\n+y", "INS.TAIL:\n+x\n+y"])
def test_empty_file_head_and_tail_replace_the_element(ws: Workspace, ops: str) -> None:
    assert edited(ws, "", ops) == "x\ny"


def test_empty_file_head_and_tail_together(ws: Workspace) -> None:
    assert edited(ws, "", "INS.TAIL:\n+t\nINS.HEAD:\n+h") == "h\nt"


def test_leading_blank_lines_bom_begin_patch_and_lowercase_tag(ws: Workspace) -> None:
    tag = setup(ws, "f.txt", ABC)
    ws.edit(f"\ufeff\n\n*** Begin Patch\n[f.txt#{tag.lower()}]\nSWAP 1.=1:\n+A\n*** End Patch\n")
    assert ws.text("f.txt") == "A\nb\nc\n"


@pytest.mark.parametrize(
    "header", ["[my file.txt#{T}]", '["my file.txt"#{T}]', "[*** Update File: my file.txt#{T}]"]
)
def test_header_paths_with_spaces_quotes_and_apply_patch_noise(ws: Workspace, header: str) -> None:
    tag = setup(ws, "my file.txt", ABC)
    ws.edit(header.replace("{T}", tag) + "\nDEL 1")
    assert ws.text("my file.txt") == "b\nc\n"


@pytest.mark.parametrize(
    ("raw", "ops", "expected"),
    [
        (b"one\r\ntwo\r\n", "SWAP 2.=2:\n+TWO\nINS.TAIL:\n+three", b"one\r\nTWO\r\nthree\r\n"),
        (b"\xef\xbb\xbfone\ntwo\n", "INS.HEAD:\n+zero", b"\xef\xbb\xbfzero\none\ntwo\n"),
        (b"\xef\xbb\xbfone\r\ntwo", "INS.TAIL:\n+three", b"\xef\xbb\xbfone\r\ntwo\r\nthree"),
        (b"one\r\ntwo\nthree\n", "DEL 3", b"one\r\ntwo\r\n"),  # the first EOL decides
        (b"one\ntwo\r\nthree\r\n", "DEL 3", b"one\ntwo\n"),
        (b"one  \r\ntwo\t\r\n", "SWAP 2.=2:\n+TWO", b"one  \r\nTWO\r\n"),  # kept lines keep trailing space
    ],
)
def test_bom_and_crlf_round_trip(ws: Workspace, raw: bytes, ops: str, expected: bytes) -> None:
    tag = setup(ws, "f.txt", raw)
    ws.edit(f"[f.txt#{tag}]\n{ops}")
    assert ws.files["f.txt"] == expected


def test_multi_section_batch_applies_every_section_and_joins_responses(ws: Workspace) -> None:
    a = setup(ws, "a.txt", ABC)
    b = setup(ws, "b.txt", "x\ny\n")
    response = ws.edit(f"[a.txt#{a}]\nDEL 1\n[b.txt#{b}]\nSWAP 2.=2:\n+Y")
    assert ws.text("a.txt") == "b\nc\n" and ws.text("b.txt") == "x\nY\n"
    new_a, new_b = compute_tag("b\nc\n"), compute_tag("x\nY\n")
    assert response == f"[a.txt#{new_a}]\n1:b\n2:c\n\n[b.txt#{new_b}]\n1:x\n2:Y"


@pytest.mark.parametrize(
    "bad",
    [
        "[c.txt#{C}]\nSWAP 9.=9:\n+x",
        "[c.txt#ABCD]\nDEL 1",
        "[missing.txt#ABCD]\nDEL 1",
        "[c.txt#{C}]\nREPLACE 1:\n+x",
    ],
)
def test_one_invalid_section_changes_nothing(ws: Workspace, bad: str) -> None:
    a = setup(ws, "a.txt", ABC)
    b = setup(ws, "b.txt", "x\ny\n")
    c = setup(ws, "c.txt", "p\nq\n")
    before = dict(ws.files)
    with pytest.raises(ToolError):
        ws.edit(f"[a.txt#{a}]\nDEL 1\n[b.txt#{b}]\nDEL 2\n" + bad.replace("{C}", c))
    assert ws.files == before


def test_same_path_sections_merge_in_order(ws: Workspace) -> None:
    tag = setup(ws, "f.txt", ABC)
    ws.edit(f"[f.txt#{tag}]\nINS.TAIL:\n+1\n[b.txt#ABCD]\n\n[f.txt#{tag}]\nINS.TAIL:\n+2\nDEL 1")
    assert ws.text("f.txt") == "b\nc\n1\n2\n"


@pytest.mark.parametrize(
    ("written", "cwd", "key"),
    [
        ("f.txt", "/ws", "f.txt"),
        ("./f.txt", "/ws", "f.txt"),
        ("a/./b//f.txt", "/ws", "a/b/f.txt"),
        ("/ws/f.txt", "/ws", "f.txt"),
        ("/ws//a/./f.txt", "/ws", "a/f.txt"),
        ("/ws/f.txt", "/ws/", "f.txt"),
        ("/ws", "/ws", "."),
        ("./", "/ws", "."),
        ("/wsx/f.txt", "/ws", "/wsx/f.txt"),  # a sibling sharing the prefix is outside
        ("/other/f.txt", "/ws", "/other/f.txt"),
        ("/ws/../ws/f.txt", "/ws", "/ws/../ws/f.txt"),  # `..` is the filesystem's to resolve
        ("../f.txt", "/ws", "../f.txt"),
        ("/ws/f.txt", None, "/ws/f.txt"),
        ("/etc/x", "/", "etc/x"),
        ("sub/", "/ws", "sub/"),
        ("~/f.txt", "/ws", "~/f.txt"),
    ],
)
def test_section_paths_are_normalised_before_merging(written: str, cwd: str | None, key: str) -> None:
    assert normalise_section_path(written, cwd) == key


def test_equivalent_spellings_of_one_path_merge(ws: Workspace) -> None:
    tag = setup(ws, "f.txt", ABC)
    ws.edit(f"[f.txt#{tag}]\nSWAP 1:\n+A\n[/ws/f.txt#{tag}]\nSWAP 3:\n+C\n[./f.txt#{tag}]\nINS.TAIL:\n+d")
    assert ws.text("f.txt") == "A\nb\nC\nd\n"
    with pytest.raises(ToolError) as caught:
        ws.edit("[./f.txt#ABCD]\nDEL 1\n[/ws/f.txt#DCBA]\nDEL 2")
    assert caught.value.code == "conflicting_tags"
    assert caught.value.message.startswith("Conflicting hashline snapshot tags for f.txt: #ABCD and #DCBA.")


def test_merged_sections_keep_every_spelling_as_written_for_resolution() -> None:
    sections = parse_patch(
        "[/ws/f.txt#ABCD]\nDEL 1\n[f.txt]\nDEL 2\n[./f.txt#abcd]\nDEL 3\n[/ws//f.txt]\nDEL 4", "/ws"
    )
    assert [(s.path, s.tag, s.written) for s in sections] == [
        ("f.txt", "ABCD", ("/ws/f.txt", "f.txt", "./f.txt", "/ws//f.txt"))
    ]
    assert [
        (s.path, s.written) for s in parse_patch("[/ws/f.txt#ABCD]\nDEL 1\n[/ws/f.txt]\nDEL 2", "/ws")
    ] == [("f.txt", ("/ws/f.txt",))]


def test_swap_1_on_an_empty_file_is_not_an_unseen_line(ws: Workspace) -> None:
    tag = setup(ws, "e.txt", "")
    assert ws.edit(f"[e.txt#{tag}]\nSWAP 1:\n+x") == f"[e.txt#{compute_tag('x')}]\n1:x"
    assert ws.text("e.txt") == "x"


def test_rem_is_an_effect_and_answers_deleted(ws: Workspace) -> None:
    tag = setup(ws, "f.txt", ABC)
    plan = ws.plan(f"[f.txt#{tag}]\nREM")
    assert plan.sections[0].effect == RemoveFile("/ws/f.txt")
    assert plan.sections[0].snapshot is None
    assert ws.edit(f"[f.txt#{tag}]\nREM") == "Deleted f.txt"
    assert "f.txt" not in ws.files


def test_mv_only_moves_bytes_unchanged(ws: Workspace) -> None:
    tag = setup(ws, "f.txt", b"\xef\xbb\xbfa\r\nb\r\n")
    plan = ws.plan(f'[f.txt#{tag}]\nMV "sub dir/g.txt"')
    effect = plan.sections[0].effect
    assert effect == MoveFile("/ws/f.txt", "/ws/sub dir/g.txt", b"\xef\xbb\xbfa\r\nb\r\n")
    assert plan.response == f"[sub dir/g.txt#{tag}]\nMoved to sub dir/g.txt"


def test_line_ops_may_follow_mv(ws: Workspace) -> None:
    tag = setup(ws, "f.txt", ABC)
    ws.edit(f"[f.txt#{tag}]\nMV g.txt\nDEL 1")
    assert ws.files == {"g.txt": b"b\nc\n"}


def test_lone_noop_is_not_an_error(ws: Workspace) -> None:
    tag = setup(ws, "f.txt", ABC)
    plan = ws.plan(f"[f.txt#{tag}]\nSWAP 2.=2:\n+b")
    assert plan.sections[0].effect is None
    assert plan.response == (
        "Edits to f.txt parsed and applied cleanly, but produced no change: the file already has this "
        "content. Re-read the file if you expected a difference."
    )
    assert plan.sections[0].payload == f"[f.txt#{tag}]\nSWAP 2.=2:\n+b"


def test_write_effect_and_new_snapshot(ws: Workspace) -> None:
    tag = setup(ws, "f.txt", ABC)
    plan = ws.plan(f"[f.txt#{tag}]\nSWAP 2.=2:\n+B")
    section = plan.sections[0]
    assert section.effect == WriteFile("/ws/f.txt", b"a\nB\nc\n")
    assert section.snapshot is not None
    assert (section.snapshot.path, section.snapshot.tag, section.snapshot.text) == (
        "/ws/f.txt",
        compute_tag("a\nB\nc\n"),
        "a\nB\nc\n",
    )
    assert section.snapshot.seen == {1, 2, 3}


def test_preview_regions_deletions_and_collapsed_runs(ws: Workspace) -> None:
    text = "".join(f"l{n}\n" for n in range(1, 31))
    tag = setup(ws, "f.txt", text)
    response = ws.edit(
        f"[f.txt#{tag}]\nINS.POST 2:\n" + "".join(f"+n{k}\n" for k in range(1, 8)) + "DEL 20.=21"
    )
    assert response == (
        f"[f.txt#{compute_tag(ws.text('f.txt'))}]\n"
        "1:l1\n2:l2\n3:n1\n4:n2\n…\n8:n6\n9:n7\n10:l3\n11:l4\n\n25:l18\n26:l19\n27:l22\n28:l23"
    )


def test_preview_rows_and_inserted_lines_count_as_seen(ws: Workspace) -> None:
    text = "".join(f"l{n}\n" for n in range(1, 21))
    ws.write("f.txt", text)
    ws.read("f.txt:1-1")  # shows 1-4
    tag = compute_tag(text)
    response = ws.edit(f"[f.txt#{tag}]\nINS.POST 4:\n+new")
    new_tag = compute_tag(ws.text("f.txt"))
    assert response == f"[f.txt#{new_tag}]\n3:l3\n4:l4\n5:new\n6:l5\n7:l6"
    ws.edit(f"[f.txt#{new_tag}]\nSWAP 7.=7:\n+L6")  # line 7 was only in the preview; now 5-9 are shown
    assert ws.text("f.txt").splitlines()[6] == "L6"
    with pytest.raises(ToolError) as caught:
        ws.edit(f"[f.txt#{compute_tag(ws.text('f.txt'))}]\nDEL 12")
    assert caught.value.code == "unseen_lines"


def test_offset_zero_recovery_from_the_newest_snapshot_warns_external_change(ws: Workspace) -> None:
    tag = setup(ws, "f.txt", ABC)
    ws.write("f.txt", ABC + "d\n")
    response = ws.edit(f"[f.txt#{tag}]\nSWAP 1.=1:\n+A")
    assert ws.text("f.txt") == "A\nb\nc\nd\n"
    assert response.endswith(
        "Warnings:\nRecovered from a stale file hash using a previous read snapshot (file changed externally "
        "between read and edit)."
    )


def test_offset_zero_recovery_from_an_older_snapshot_warns_prior_edit(ws: Workspace) -> None:
    tag = setup(ws, "f.txt", ABC)
    ws.edit(f"[f.txt#{tag}]\nINS.TAIL:\n+d")
    response = ws.edit(f"[f.txt#{tag}]\nSWAP 1.=1:\n+A")
    assert ws.text("f.txt") == "A\nb\nc\nd\n"
    assert response.endswith(
        "Warnings:\nRecovered from a stale file hash using an earlier in-session snapshot (a prior edit in "
        "this session advanced the hash)."
    )


def test_recovery_needs_one_offset_for_every_anchor(ws: Workspace) -> None:
    tag = setup(ws, "f.txt", "1\n2\n3\n4\n5\n6\n")
    ws.write("f.txt", "1\n2\n3\nX\n4\n5\n6\n")
    with pytest.raises(ToolError) as caught:
        ws.edit(f"[f.txt#{tag}]\nSWAP 2.=2:\n+two\nSWAP 5.=5:\n+five")
    assert caught.value.code == "stale_tag"
    assert ws.text("f.txt") == "1\n2\n3\nX\n4\n5\n6\n"


def test_recovery_of_duplicated_text_needs_both_neighbours(ws: Workspace) -> None:
    tag = setup(ws, "f.txt", "a\nx\nb\nx\nc\n")
    ws.write("f.txt", "a\nx\nb\nNEW\nx\nc\n")  # neighbour before the second x no longer agrees
    with pytest.raises(ToolError) as caught:
        ws.edit(f"[f.txt#{tag}]\nSWAP 4.=4:\n+X")
    assert caught.value.code == "stale_tag"
    ws.write("f.txt", "top\na\nx\nb\nx\nc\n")  # both neighbours move with it
    tag2 = tag
    ws.edit(f"[f.txt#{tag2}]\nSWAP 4.=4:\n+X")
    assert ws.text("f.txt") == "top\na\nx\nb\nX\nc\n"


def test_recovery_that_changes_nothing_fails(ws: Workspace) -> None:
    tag = setup(ws, "f.txt", ABC)
    ws.write("f.txt", "z\n" + ABC.replace("b", "B"))
    ws.write("f.txt", "z\na\nB\nc\n")
    with pytest.raises(ToolError):
        ws.edit(f"[f.txt#{tag}]\nSWAP 3.=3:\n+c")


def test_mismatch_records_the_live_file_so_its_tag_is_known(ws: Workspace) -> None:
    ws.write("f.txt", ABC)
    with pytest.raises(ToolError) as first:
        ws.edit("[f.txt#ABCD]\nDEL 1")
    assert "is not from this session" in first.value.message
    live = compute_tag(ABC)
    assert ws.store.get("/ws/f.txt", live) is not None


def test_colliding_tag_with_different_text_has_no_seen_lines(ws: Workspace) -> None:
    first, second = "line one 263\nline two 4471\n", "line one 410\nline two 6970\n"
    setup(ws, "f.txt", first)
    ws.write("f.txt", second)  # same tag, different text
    with pytest.raises(ToolError) as caught:
        ws.edit("[f.txt#1D84]\nDEL 1")
    assert caught.value.code == "unseen_lines"
    assert caught.value.message.endswith("\n\n1:line one 410")
