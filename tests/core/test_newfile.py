"""New files in fermix's own folders (media, outbox, inbox): never replacing one, always a valid name."""

from __future__ import annotations

import os
from pathlib import Path

from fermix_cli.core.newfile import NAME_MAX, copy_new_file, write_new_file


def test_numbered_copies_of_a_name_at_the_limit_still_fit(tmp_path: Path) -> None:
    name = "a" * 251 + ".txt"  # 255 bytes: the longest name there is
    first = write_new_file(tmp_path, name, b"one")
    second = write_new_file(tmp_path, name, b"two")
    third = write_new_file(tmp_path, name, b"three")
    assert first.name == name
    assert second.name.endswith("-2.txt") and third.name.endswith("-3.txt")
    assert all(len(os.fsencode(p.name)) <= NAME_MAX for p in (second, third))
    assert [p.read_bytes() for p in (first, second, third)] == [b"one", b"two", b"three"]


def test_a_multibyte_name_is_cut_between_characters(tmp_path: Path) -> None:
    name = "文" * 84 + ".txt"  # 252 + 4 bytes: over the limit by itself
    source = tmp_path / "src.bin"
    source.write_bytes(b"x")
    out = tmp_path / "out"
    out.mkdir()
    first = copy_new_file(out, name, source)
    second = copy_new_file(out, name, source)
    for p in (first, second):
        assert len(os.fsencode(p.name)) <= NAME_MAX and p.name.endswith(".txt")
        p.name.encode("utf-8")  # whole characters only
    assert second.name.endswith("-2.txt") and first != second
