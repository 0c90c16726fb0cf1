"""canonicalize_many agrees with canonicalize path by path, on a tree full of symlink traps."""

from __future__ import annotations

import itertools
import os
from pathlib import Path

from fermix_cli.core.errors import ToolError
from fermix_cli.core.pathcanon import canonicalize, canonicalize_many


def _one(path: str) -> str | None:
    try:
        return canonicalize(path)
    except (ToolError, ValueError):
        return None


def test_agrees_with_canonicalize_on_every_kind_of_component(tmp_path: Path) -> None:
    root = tmp_path / "t"
    (root / "real" / "deep").mkdir(parents=True)
    (root / "real" / "file.txt").write_text("x")
    (root / "abs").symlink_to(root / "real")  # absolute target
    (root / "rel").symlink_to("real/deep")  # relative target
    (root / "dangling").symlink_to("nowhere/else")
    (root / "loop_a").symlink_to("loop_b")
    (root / "loop_b").symlink_to("loop_a")
    (root / "real" / "up").symlink_to("..")  # a link back to its parent's parent
    (root / "chain").symlink_to("abs/up/rel")
    names = ["real", "abs", "rel", "dangling", "loop_a", "chain", "missing", "file.txt", "deep", "up"]
    paths = [str(root)]
    for depth in (1, 2, 3):
        paths += [os.path.join(str(root), *combo) for combo in itertools.product(names, repeat=depth)]
    paths += [str(root / "real" / "file.txt" / "below"), "/", "/etc/passwd", str(root / "real" / "..")]
    expected = [_one(p) for p in paths]
    assert canonicalize_many(paths) == expected
    assert None in expected  # the loops are among them, and fail in both
    # Order and repeats do not matter: each answer is the path's own.
    shuffled = list(reversed(paths)) + paths[:50]
    assert canonicalize_many(shuffled) == [_one(p) for p in shuffled]
