"""The mock provider parses a script file once per version of it: unchanged, every run and worker
shares the parse; edited (even to the same size), replaced or touched, it is read again."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from fermix_cli.agent.providers.mock import MockScript
from fermix_cli.core.errors import ToolError


def script(text: str) -> str:
    return json.dumps([{"text": text}])


def test_an_unchanged_script_is_parsed_once(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text(script("one"))
    first = MockScript.load(str(path))
    assert MockScript.load(str(path)) is first


def test_an_edit_of_the_same_size_is_read_again(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text(script("one"))
    before = MockScript.load(str(path))
    st = os.stat(path)
    path.write_text(script("two"))  # same length; the same second on a coarse clock
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # even with its mtime put back
    after = MockScript.load(str(path))
    assert before.responses[0]["text"] == "one"
    assert after.responses[0]["text"] == "two"


def test_a_replaced_file_is_read_again_and_a_broken_one_still_fails(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text(script("one"))
    MockScript.load(str(path))
    other = tmp_path / "t.json"
    other.write_text(script("new"))
    os.replace(other, path)
    assert MockScript.load(str(path)).responses[0]["text"] == "new"
    path.write_text("{not json")
    with pytest.raises(ToolError) as e:
        MockScript.load(str(path))
    assert e.value.code == "invalid_script"
    path.unlink()
    with pytest.raises(ToolError) as e:
        MockScript.load(str(path))
    assert e.value.code == "invalid_script"
