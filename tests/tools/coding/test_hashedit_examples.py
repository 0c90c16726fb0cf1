"""hashline.md §4.9's worked examples, end to end through read → hash_edit → files on disk."""

from __future__ import annotations

import pytest
from hashline_workspace import Workspace

from fermix_cli.core.errors import ToolError

SVC = 'import os\n\ndef load(key):\n    path = os.path.join("data", key)\n    return open(path).read()\n\nprint(load("a"))\n'


def test_example_1_swap_and_ins_post_use_original_numbers(ws: Workspace) -> None:
    ws.write("greet.py", 'def greet(name):\n    msg = "Hello, " + name\n    print(msg)\ngreet("world")\n')
    assert ws.read("greet.py").startswith("[greet.py#C918]\n")
    response = ws.edit(
        '[greet.py#C918]\nSWAP 2.=2:\n+    greeting = "Hi"\n+    msg = f"{greeting}, {name}"\n'
        "INS.POST 3:\n+    return msg"
    )
    assert response == (
        '[greet.py#3716]\n1:def greet(name):\n2:    greeting = "Hi"\n3:    msg = f"{greeting}, {name}"\n'
        '4:    print(msg)\n5:    return msg\n6:greet("world")'
    )
    assert ws.text("greet.py") == (
        'def greet(name):\n    greeting = "Hi"\n    msg = f"{greeting}, {name}"\n    print(msg)\n'
        '    return msg\ngreet("world")\n'
    )


@pytest.fixture
def todo(ws: Workspace) -> Workspace:
    ws.write("todo.txt", "alpha\nbeta\ngamma\ndelta\nepsilon\n")
    assert ws.read("todo.txt").startswith("[todo.txt#FEEF]\n")
    response = ws.edit("[todo.txt#FEEF]\nDEL 2.=3\nINS.PRE 5:\n+DELTA-2\nINS.TAIL:\n+zeta")
    assert response == "[todo.txt#E0C3]\n1:alpha\n2:delta\n3:DELTA-2\n4:epsilon\n5:zeta"
    assert ws.text("todo.txt") == "alpha\ndelta\nDELTA-2\nepsilon\nzeta\n"
    return ws


def test_example_2_del_ins_pre_ins_tail(todo: Workspace) -> None:
    assert todo.text("todo.txt").endswith("zeta\n")


def test_example_2_stale_retry_is_rejected_with_context(todo: Workspace) -> None:
    with pytest.raises(ToolError) as caught:
        todo.edit("[todo.txt#FEEF]\nSWAP 2.=2:\n+BETA")
    assert caught.value.code == "stale_tag"
    assert caught.value.message == (
        "Edit rejected for todo.txt: file changed between read and edit.\n"
        "Section is bound to #FEEF, but the current file hashes to #E0C3. If a prior edit in this session "
        "modified this file, copy the [path#newhash] header from that edit's response; otherwise re-read "
        "the file with `read` to refresh the tag before retrying.\n\n"
        " 1:alpha\n*2:delta\n 3:DELTA-2\n 4:epsilon"
    )
    assert todo.text("todo.txt") == "alpha\ndelta\nDELTA-2\nepsilon\nzeta\n"


def test_example_2_stale_ins_tail_applies_with_drift_warning(todo: Workspace) -> None:
    response = todo.edit("[todo.txt#FEEF]\nINS.TAIL:\n+eta")
    assert todo.text("todo.txt") == "alpha\ndelta\nDELTA-2\nepsilon\nzeta\neta\n"
    assert response.endswith(
        "\n\nWarnings:\nApplied the `INS.HEAD:`/`INS.TAIL:` edit despite a stale snapshot tag (file changed "
        "since your read) — head/tail position is content-independent. Re-read if the drift was unexpected."
    )


def test_example_3_recovery_by_remapping(ws: Workspace) -> None:
    ws.write("a.txt", "one\ntwo\nthree\n")
    assert ws.read("a.txt") == "[a.txt#2543]\n1:one\n2:two\n3:three"
    ws.write("a.txt", "zero\none\ntwo\nthree\n")  # another process prepends a line
    response = ws.edit("[a.txt#2543]\nSWAP 3.=3:\n+THREE")
    assert ws.text("a.txt") == "zero\none\ntwo\nTHREE\n"
    assert response.startswith("[a.txt#08C5]\n")
    assert response.endswith(
        "\n\nWarnings:\nRecovered by remapping stale line anchors to unchanged current lines (file changed "
        "since the tagged read). Verify the diff matches your intent."
    )


def test_example_4_swap_blk_and_mv(ws: Workspace) -> None:
    ws.write("svc.py", SVC)
    assert ws.read("svc.py").startswith("[svc.py#F796]\n")
    response = ws.edit(
        "[svc.py#F796]\nSWAP.BLK 3:\n+def load(key):\n"
        '+    with open(os.path.join("data", key)) as fh:\n+        return fh.read()\nMV lib/svc.py'
    )
    assert response == (
        "[lib/svc.py#64F2]\nSWAP.BLK 3 → resolved lines 3-5 (3 lines)\nMoved to lib/svc.py\n"
        '1:import os\n2:\n3:def load(key):\n4:    with open(os.path.join("data", key)) as fh:\n'
        '5:        return fh.read()\n6:\n7:print(load("a"))'
    )
    assert "svc.py" not in ws.files
    assert ws.files["lib/svc.py"].decode().count("\n") == 7
    # the new tag is valid at the destination at once
    ws.edit("[lib/svc.py#64F2]\nSWAP 7.=7:\n+print(load('b'))")
    assert ws.text("lib/svc.py").endswith("print(load('b'))\n")


def test_example_4_single_line_and_blank_line_block_anchors(ws: Workspace) -> None:
    ws.write("svc.py", SVC)
    ws.read("svc.py")
    with pytest.raises(ToolError) as single:
        ws.edit("[svc.py#F796]\nSWAP.BLK 7:\n+x")
    assert single.value.message == (
        "SWAP.BLK 7: `SWAP.BLK 7` resolved a single-line block — line 7 is a bare statement, not the "
        "opening line of a multi-line construct. For that one line use `SWAP 7.=7:`."
    )
    with pytest.raises(ToolError) as blank:
        ws.edit("[svc.py#F796]\nSWAP.BLK 2:\n+x")
    assert blank.value.message == (
        "SWAP.BLK 2: `SWAP.BLK 2:` could not resolve a syntactic block beginning on line 2 (unsupported "
        "language, blank/closer line, or parse error). Use `SWAP N.=M:` with explicit lines.\n\n"
        ' 1:import os\n*2:\n 3:def load(key):\n 4:    path = os.path.join("data", key)'
    )
    assert ws.text("svc.py") == SVC


def test_example_5_crlf_and_bom_round_trip(ws: Workspace) -> None:
    ws.write("f.txt", b"\xef\xbb\xbfone\r\ntwo\r\n")
    assert ws.read("f.txt") == "[f.txt#0127]\n1:one\n2:two"
    response = ws.edit("[f.txt#0127]\nSWAP 2.=2:\n+TWO")
    assert ws.files["f.txt"] == b"\xef\xbb\xbfone\r\nTWO\r\n"
    assert response.startswith("[f.txt#8E53]\n")
