"""Property: read, then hash_edit with random SWAP/DEL/INS ops, equals the same ops on a list of lines."""

from __future__ import annotations

from hashline_strategies import ANY_LINE, Op, apply_to_list, scenarios
from hashline_workspace import Workspace
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fermix_cli.tools.coding.hashline import clip_row, compute_tag, render_section, split_rows

SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def check(
    ws: Workspace, lines: list[str], final_newline: bool, ops: list[Op], compact: bool, **kwargs: object
) -> None:
    text = "\n".join(lines) + ("\n" if final_newline else "")
    ws.write("f.txt", text)
    header = ws.read("f.txt").split("\n", 1)[0]
    patch = header + "\n" + "\n".join(op.render(compact) for op in ops)
    expected_lines = apply_to_list(lines, ops)
    expected = "\n".join(expected_lines) + ("\n" if final_newline and expected_lines else "")
    response = ws.edit(patch, **kwargs) if ops else None
    assert ws.text("f.txt") == expected
    if response is not None and expected != text:
        head, *rows = response.split("\n")
        assert head == f"[f.txt#{compute_tag(expected)}]"
        new_rows = split_rows(expected)
        for row in rows:
            if row and row != "…" and row[0].isdigit():
                number, _, shown = row.partition(":")
                assert shown == clip_row(new_rows[int(number) - 1])


@SETTINGS
@given(scenarios(ANY_LINE, ANY_LINE), st.booleans())
def test_hash_edit_equals_list_edits_without_repairs(
    scenario: tuple[list[str], bool, list[Op]], compact: bool
) -> None:
    lines, final_newline, ops = scenario
    check(Workspace(), lines, final_newline, ops, compact, repairs=False)


@SETTINGS
@given(
    scenarios(st.text(alphabet="abc \t", max_size=8), st.text(alphabet="XYZ ", max_size=8)),
    st.booleans(),
)
def test_hash_edit_equals_list_edits_with_repairs_on(
    scenario: tuple[list[str], bool, list[Op]], compact: bool
) -> None:
    lines, final_newline, ops = scenario
    check(Workspace(), lines, final_newline, ops, compact)


@SETTINGS
@given(
    scenarios(st.text(alphabet="ab é\t", max_size=6), st.text(alphabet="XY ", max_size=6)),
    st.booleans(),
    st.booleans(),
)
def test_bom_and_crlf_survive_random_edits(
    scenario: tuple[list[str], bool, list[Op]], bom: bool, crlf: bool
) -> None:
    lines, final_newline, ops = scenario
    eol = "\r\n" if crlf else "\n"
    prefix = "\ufeff" if bom else ""
    ws = Workspace()
    ws.write("f.txt", prefix + eol.join(lines) + (eol if final_newline else ""))
    header = ws.read("f.txt").split("\n", 1)[0]
    if ops:
        ws.edit(header + "\n" + "\n".join(op.render(False) for op in ops))
    expected_lines = apply_to_list(lines, ops)
    body = eol.join(expected_lines) + (eol if final_newline and expected_lines else "")
    keeps_style = crlf and (
        len(lines) > 1 or final_newline
    )  # a one-line file without EOL has no style to keep
    if crlf and not keeps_style:
        body = body.replace("\r\n", "\n")
    assert ws.files["f.txt"] == (prefix + body).encode()


@SETTINGS
@given(st.lists(ANY_LINE, max_size=30), st.booleans())
def test_read_rows_reproduce_the_file(lines: list[str], final_newline: bool) -> None:
    text = "\n".join(lines) + ("\n" if final_newline and lines else "")
    section = render_section("f.txt", text)
    rows = section.content.split("\n")[1:]
    if not split_rows(text):
        assert rows == ["[The file is empty.]"]
        return
    assert [row.split(":", 1)[1] for row in rows] == [clip_row(r) for r in split_rows(text)]
    assert section.shown == tuple(range(1, len(split_rows(text)) + 1))
