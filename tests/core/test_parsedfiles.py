"""Files parsed once per version (`core/parsedfiles.py`), as skills, agent files and mock scripts use it:
unchanged, one parse is shared; edited to the same size with its mtime put back, it is parsed again."""

from __future__ import annotations

import os
from pathlib import Path

from fermix_cli.core.skillfile import load_skill


def skill_md(description: str) -> str:
    return f"---\nname: demo\ndescription: {description}\n---\nDo the thing.\n"


def test_a_skill_edited_to_the_same_size_with_its_mtime_put_back_is_parsed_again(tmp_path: Path) -> None:
    directory = tmp_path / "demo"
    directory.mkdir()
    path = directory / "SKILL.md"
    path.write_text(skill_md("first"))
    before = load_skill(str(path), str(directory))
    assert load_skill(str(path), str(directory)) is before  # unchanged: the same parse
    st = os.stat(path)
    path.write_text(skill_md("other"))  # the same length
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    after = load_skill(str(path), str(directory))
    assert (before.description, after.description) == ("first", "other")
