"""`Sandbox.is_protected` against its definition: a path is protected when it equals an entry or
continues it with `/`, `.` or `-`, case-insensitively. The implementation looks prefixes up in a set;
the definition below scans every entry."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fermix_cli.core.paths import resolve_paths
from fermix_cli.core.sandbox import Sandbox


def by_definition(entries: tuple[str, ...], path: str) -> bool:
    low = path.lower()
    return any(low == e or (low.startswith(e) and low[len(e)] in "/.-") for e in entries)


def sandbox(tmp_path: Path) -> Sandbox:
    home = tmp_path / "home"
    (home / ".fermix").mkdir(parents=True)
    return Sandbox(
        mode="standard", paths=resolve_paths(str(home / ".fermix")), home=str(home), launch_cwd=str(home)
    )


PIECES = st.sampled_from(["", "/", ".", "-", "a", "A", "ssh", ".ssh", "env", "x.y", "-wal", "é", "İ"])


def test_every_entry_and_its_continuations(tmp_path: Path) -> None:
    sb = sandbox(tmp_path)
    entries = sb.protected_lower
    assert len(entries) > 50
    for e in sb.protected:
        for tail in ("", "/k", ".bak", "-old", "x", "_x", "/", " "):
            for form in (e + tail, (e + tail).upper()):
                assert sb.is_protected(form) == by_definition(entries, form), form
    assert sb.is_protected(str(Path(sb.home) / ".ssh" / "id_rsa"))
    assert not sb.is_protected(str(Path(sb.home) / ".sshx" / "id_rsa"))


@settings(max_examples=400, deadline=None)
@given(pick=st.integers(min_value=0), tail=st.lists(PIECES, max_size=6), cut=st.integers(0, 4))
def test_matches_the_definition_on_generated_paths(
    tmp_path_factory: pytest.TempPathFactory, pick: int, tail: list[str], cut: int
) -> None:
    sb = SHARED.get("sb")
    if sb is None:
        sb = SHARED["sb"] = sandbox(tmp_path_factory.mktemp("prot"))
    entry = sb.protected[pick % len(sb.protected)]
    base = entry[: max(1, len(entry) - cut)]  # the entry, or a shorter prefix of it
    path = base + "".join(tail)
    assert sb.is_protected(path) == by_definition(sb.protected_lower, path)


SHARED: dict[str, Sandbox] = {}
