"""Hypothesis strategies for hash_edit properties: random SWAP/DEL/INS ops and their list semantics."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import strategies as st


@dataclass(frozen=True)
class Op:
    kind: str  # SWAP, DEL, INS.PRE, INS.POST, INS.HEAD, INS.TAIL
    start: int
    end: int
    body: tuple[str, ...]

    def render(self, compact: bool) -> str:
        rows = "".join(f"\n+{row}" for row in self.body)
        if self.kind in ("INS.HEAD", "INS.TAIL"):
            return f"{self.kind}:{rows}"
        if self.kind == "DEL":
            return (
                f"DEL {self.start}" if compact and self.start == self.end else f"DEL {self.start}.={self.end}"
            )
        if self.kind == "SWAP":
            return f"SWAP {self.start}.={self.end}:{rows}"
        return f"{self.kind} {self.start}:{rows}"


def apply_to_list(lines: list[str], ops: list[Op]) -> list[str]:
    """The reference semantics, written as directly as possible over a list of lines."""
    pre: dict[int, list[str]] = {}
    post: dict[int, list[str]] = {}
    bodies: dict[int, tuple[str, ...]] = {}
    deleted: set[int] = set()
    head: list[str] = []
    tail: list[str] = []
    for op in ops:
        if op.kind == "INS.HEAD":
            head += op.body
        elif op.kind == "INS.TAIL":
            tail += op.body
        elif op.kind == "INS.PRE":
            pre.setdefault(op.start, []).extend(op.body)
        elif op.kind == "INS.POST":
            post.setdefault(op.start, []).extend(op.body)
        else:
            bodies[op.start] = op.body
            deleted.update(range(op.start, op.end + 1))
    out = list(head)
    for number, line in enumerate(lines, start=1):
        out += pre.get(number, [])
        out += bodies.get(number, ())
        if number not in deleted:
            out.append(line)
        out += post.get(number, [])
    return out + tail


@st.composite
def scenarios(
    draw: st.DrawFn, line: st.SearchStrategy[str], row: st.SearchStrategy[str]
) -> tuple[list[str], bool, list[Op]]:
    lines = draw(st.lists(line, min_size=1, max_size=25))
    final_newline = draw(st.booleans()) or lines[-1] == ""
    bodies = st.lists(row, min_size=1, max_size=4).map(tuple)
    ops: list[Op] = []
    number = 1
    while number <= len(lines):  # disjoint SWAP/DEL ranges
        action = draw(st.sampled_from(["keep", "keep", "swap", "del"]))
        if action == "keep":
            number += 1
            continue
        end = draw(st.integers(number, min(len(lines), number + 3)))
        if action == "swap":
            ops.append(Op("SWAP", number, end, draw(st.lists(row, max_size=4).map(tuple))))
        else:
            ops.append(Op("DEL", number, end, ()))
        number = end + 1
    for _ in range(draw(st.integers(0, 5))):
        kind = draw(st.sampled_from(["INS.PRE", "INS.POST", "INS.HEAD", "INS.TAIL"]))
        anchor = 0 if kind in ("INS.HEAD", "INS.TAIL") else draw(st.integers(1, len(lines)))
        ops.append(Op(kind, anchor, anchor, draw(bodies)))
    return lines, final_newline, draw(st.permutations(ops))


ANY_LINE = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\n\r\ufeff"), max_size=12
)
