"""The desktop tests on a Python without tkinter (Debian's python3 without python3-tk): skipped, saying why."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from tests.computer.desktop import missing_programs
from tests.conftest import REPO

NO_TKINTER = """
import sys
sys.modules["tkinter"] = None  # what `import tkinter` finds on a Python built without it: ImportError
import pytest
sys.exit(pytest.main(sys.argv[1:]))
"""


def test_the_x11_tests_are_skipped_with_the_reason_where_tkinter_is_missing() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "FERMIX_"))}
    args = ["-q", "-rs", "-n", "0", "-p", "no:cacheprovider", "tests/computer/test_x11_desktop.py"]
    proc = subprocess.run(
        [sys.executable, "-c", NO_TKINTER, *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    tail = proc.stdout[-3000:]
    assert proc.returncode == 0, tail  # collected: no error importing the test module
    summary = tail.strip().splitlines()[-1]
    assert re.fullmatch(r"\d+ skipped in [\d.]+s( \(.*\))?", summary), summary
    if not missing_programs():  # with Xvfb and xdotool here, tkinter is what is missing
        assert "this Python has no tkinter" in tail and "python3-tk" in tail
