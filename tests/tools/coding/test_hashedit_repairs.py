"""The automatic repairs R1–R4 and their warnings and rejections."""

from __future__ import annotations

import pytest
from hashline_workspace import Workspace

from fermix_cli.core.errors import ToolError
from fermix_cli.tools.coding.hashline import compute_tag
from fermix_cli.tools.coding.repairs import balance

JS = "function f() {\n  if (x) {\n    go();\n  }\n}\n"
NESTED = "function f() {\n  if (x) {\n    if (y) {\n      b();\n    }\n  }\n}\n"
PY = "def f():\n    a = 1\n    b = 2\n    c = 3\n"


def run(ws: Workspace, path: str, text: str, ops: str, **kwargs: object) -> str:
    ws.write(path, text)
    ws.read(path)
    return ws.edit(f"[{path}#{compute_tag(text)}]\n{ops}", **kwargs)


def test_r1_boundary_echo_drops_both_rows(ws: Workspace) -> None:
    response = run(ws, "a.py", PY, "SWAP 3.=3:\n+    a = 1\n+    B = 2\n+    c = 3")
    assert ws.text("a.py") == "def f():\n    a = 1\n    B = 2\n    c = 3\n"
    assert response.endswith(
        "Warnings:\nSWAP 3.=3: dropped body rows that repeated kept lines 2 and 4 (lines outside the range "
        "are not replaced)."
    )


def test_repairs_can_be_turned_off(ws: Workspace) -> None:
    response = run(ws, "a.py", PY, "SWAP 3.=3:\n+    a = 1\n+    B = 2\n+    c = 3", repairs=False)
    assert ws.text("a.py") == "def f():\n    a = 1\n    a = 1\n    B = 2\n    c = 3\n    c = 3\n"
    assert "Warnings" not in response


def test_r1_needs_the_echoed_lines_untargeted(ws: Workspace) -> None:
    run(ws, "a.py", PY, "SWAP 3.=3:\n+    a = 1\n+    B = 2\n+    c = 3\nSWAP 4.=4:\n+    C = 3")
    # line 4 is targeted, so only row 1 echoes; balances match, so the echo is kept as written
    assert ws.text("a.py") == "def f():\n    a = 1\n    a = 1\n    B = 2\n    c = 3\n    C = 3\n"


def test_r2_one_sided_echo_of_a_closer_is_dropped(ws: Workspace) -> None:
    response = run(ws, "a.js", JS, "SWAP 3.=3:\n+    stop();\n+  }")
    assert ws.text("a.js") == "function f() {\n  if (x) {\n    stop();\n  }\n}\n"
    assert response.endswith(
        "Warnings:\nSWAP 3.=3: dropped body row 2, which repeated kept line 4 outside the range."
    )


def test_r2_echo_kept_when_balances_already_match(ws: Workspace) -> None:
    response = run(ws, "a.js", JS, "SWAP 3.=3:\n+  if (x) {\n+    stop(); }")
    assert ws.text("a.js") == "function f() {\n  if (x) {\n  if (x) {\n    stop(); }\n  }\n}\n"
    assert "Warnings" not in response


def test_r2_unfixable_echo_is_rejected(ws: Workspace) -> None:
    with pytest.raises(ToolError) as caught:
        run(ws, "a.js", JS, "SWAP 3.=3:\n+  if (x) {\n+    stop((")
    assert caught.value.message == (
        "SWAP 3.=3: rejected: body row 1 repeats line 2, which is outside the range, but dropping it does not "
        "make the edit consistent. Widen the range to cover line 2 and restate its final content, or remove "
        "the repeated row."
    )
    assert ws.text("a.js") == JS


def test_r3_keeps_closing_lines_the_body_did_not_restate(ws: Workspace) -> None:
    response = run(ws, "a.js", JS, "SWAP 2.=4:\n+  if (y) {\n+    go2();")
    assert ws.text("a.js") == "function f() {\n  if (y) {\n    go2();\n  }\n}\n"
    assert response.endswith(
        "Warnings:\nSWAP 2.=4: kept closing line(s) 4-4 that the body did not restate; replaced 2-3 only."
    )


def test_r2_and_r3_together_are_ambiguous(ws: Workspace) -> None:
    with pytest.raises(ToolError) as caught:
        run(ws, "a.js", NESTED, "SWAP 3.=5:\n+  if (x) {\n+    c();")
    assert caught.value.message == (
        "SWAP 3.=5: rejected: ambiguous closing lines — the body could drop its repeated closer or keep the "
        "range's closer. Resend the range with the body as exactly its final content."
    )


def test_r4_ins_post_moves_below_closing_lines(ws: Workspace) -> None:
    response = run(ws, "a.js", JS, "INS.POST 3:\n+  after();")
    assert ws.text("a.js") == "function f() {\n  if (x) {\n    go();\n  }\n  after();\n}\n"
    assert response.endswith(
        "Warnings:\nINS.POST 3: body indented shallower than line 3; moved it below the closing line(s) to line 4."
    )


def test_r4_never_crosses_a_targeted_line(ws: Workspace) -> None:
    run(ws, "a.js", JS, "INS.POST 3:\n+  after();\nSWAP 4.=4:\n+  } // end")
    assert ws.text("a.js") == "function f() {\n  if (x) {\n    go();\n  after();\n  } // end\n}\n"


def test_r4_ins_blk_post_lands_inside_the_block(ws: Workspace) -> None:
    response = run(ws, "a.js", JS, "INS.BLK.POST 2:\n+    more();")
    assert ws.text("a.js") == "function f() {\n  if (x) {\n    go();\n    more();\n  }\n}\n"
    assert response.endswith(
        "Warnings:\nINS.BLK.POST 2: body indented deeper than the block's closing line; placed it inside the "
        "block before line 4."
    )


@pytest.mark.parametrize(
    ("lines", "path", "expected"),
    [
        (["f(a, [b], {c})"], "a.js", 0),
        (["if (x) {"], "a.js", 1),
        (["s = \"(\" + ')'"], "a.py", 0),
        (["x = 1  # ((("], "a.py", 0),
        (["x = f(  // ((("], "a.ts", 1),
        (["a /* (( */ b(", "c /* ) */"], "a.rs", 1),
        (["/* start", "(( still comment */ )"], "a.c", -1),
        (["fn f<'a>(x: &'a str) {"], "a.rs", 1),
        (["let c = '(';"], "a.rs", 0),
        (["select (1) -- ((", "x"], "q.sql", 0),
        (["`${(}`"], "a.ts", 0),
        (["# no comments in txt ("], "a.txt", 1),
    ],
)
def test_balance_ignores_literals_and_comments(lines: list[str], path: str, expected: int) -> None:
    assert balance(lines, path) == expected
