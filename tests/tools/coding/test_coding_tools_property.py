"""Property, through the real tools and the SQLite store: read, then hash_edit with random SWAP/DEL/INS ops,
equals the same ops applied to a list of lines; the new snapshot is stored and usable at once."""

from __future__ import annotations

import itertools
import sqlite3

from coding_world import config
from hashline_strategies import ANY_LINE, apply_to_list, scenarios
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fermix_cli.tools.coding.hashline import compute_tag, normalise_eol

SETTINGS = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
_sessions = itertools.count()


def newest_snapshot(world, session: str) -> tuple[str, str]:
    conn = sqlite3.connect(world.fermix_home / "state.db")
    try:
        return conn.execute(
            "SELECT tag, text FROM hashline_snapshots WHERE session_id = ? ORDER BY seq DESC LIMIT 1",
            (session,),
        ).fetchone()
    finally:
        conn.close()


@SETTINGS
@given(scenarios(ANY_LINE, ANY_LINE), st.booleans())
def test_read_then_hash_edit_equals_list_edits(world, invoke, scenario, compact: bool) -> None:
    lines, final_newline, ops = scenario
    config(world, "[capabilities.tools.hash_edit]\nrepairs = false\n")
    session = f"prop-{next(_sessions)}"  # a fresh session: no no-op streak carries over between examples
    path = world.project / "f.txt"
    text = "\n".join(lines) + ("\n" if final_newline else "")
    path.write_bytes(text.encode("utf-8"))
    head = invoke("read", {"paths": ["f.txt"]}, session_id=session)["content"].split("\n", 1)[0]
    assert head == f"[f.txt#{compute_tag(text)}]"
    expected_lines = apply_to_list(lines, ops)
    expected = "\n".join(expected_lines) + ("\n" if final_newline and expected_lines else "")
    if not ops:
        return
    patch = head + "\n" + "\n".join(op.render(compact) for op in ops)
    result = invoke("hash_edit", {"input": patch}, session_id=session)
    assert path.read_bytes().decode("utf-8") == expected
    assert result["changed"] is (expected != text)
    if expected == text:
        return
    new_tag = compute_tag(expected)
    assert result["content"].split("\n", 1)[0] == f"[f.txt#{new_tag}]"
    assert newest_snapshot(world, session) == (new_tag, normalise_eol(expected))
    # The stored snapshot anchors the next edit without another read.
    invoke("hash_edit", {"input": f"[f.txt#{new_tag}]\nINS.HEAD:\n+again"}, session_id=session)
    assert path.read_bytes().decode("utf-8") == ("again\n" + expected if expected else "again")


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    scenarios(st.text(alphabet="ab é\t", max_size=6), st.text(alphabet="XY ", max_size=6)),
    st.booleans(),
    st.booleans(),
)
def test_bom_and_crlf_survive_edits_through_the_tools(world, invoke, scenario, bom: bool, crlf: bool) -> None:
    lines, final_newline, ops = scenario
    session = f"bom-{next(_sessions)}"
    eol = "\r\n" if crlf else "\n"
    prefix = "\ufeff" if bom else ""
    path = world.project / "g.txt"
    path.write_bytes((prefix + eol.join(lines) + (eol if final_newline else "")).encode("utf-8"))
    head = invoke("read", {"paths": ["g.txt"]}, session_id=session)["content"].split("\n", 1)[0]
    if ops:
        invoke(
            "hash_edit",
            {"input": head + "\n" + "\n".join(op.render(False) for op in ops)},
            session_id=session,
        )
    expected_lines = apply_to_list(lines, ops)
    keeps_style = crlf and (len(lines) > 1 or final_newline)
    body = (eol if keeps_style or not crlf else "\n").join(expected_lines)
    body += (eol if keeps_style or not crlf else "\n") if final_newline and expected_lines else ""
    assert path.read_bytes() == (prefix + body).encode("utf-8")
