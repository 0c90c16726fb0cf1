"""The log file: logging is imported only on demand, and the handler is attached in either order."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

SETUP_FIRST = """
import sys
from pathlib import Path
from fermix_cli.core import logs
logs.setup_logging(Path(sys.argv[1]))
assert "logging" not in sys.modules, "setup_logging imported logging"
logs.logger("fermix.test").warning("setup first")
"""

LOGGER_FIRST = """
import sys
from pathlib import Path
from fermix_cli.core import logs
log = logs.logger("fermix.test")  # a module-level logger, made before the CLI configures the file
log.warning("too early: no file yet")
logs.setup_logging(Path(sys.argv[1]))
log.warning("logger first")
"""


@pytest.mark.parametrize(
    ("script", "expected"), [(SETUP_FIRST, "setup first"), (LOGGER_FIRST, "logger first")]
)
def test_warnings_reach_the_file_and_never_stderr_after_setup(
    tmp_path: Path, script: str, expected: str
) -> None:
    log_file = tmp_path / "logs" / "fermix.log"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run(
        [sys.executable, "-c", script, str(log_file)], capture_output=True, text=True, env=env, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    text = log_file.read_text()
    assert "WARNING fermix.test pid=" in text
    assert expected in text and "too early" not in text
    assert expected not in proc.stderr
    assert (log_file.stat().st_mode & 0o777) == 0o600
    assert (log_file.parent.stat().st_mode & 0o777) == 0o700


def test_nothing_logged_creates_no_file(tmp_path: Path) -> None:
    log_file = tmp_path / "logs" / "fermix.log"
    script = "import sys; from pathlib import Path; from fermix_cli.core import logs; logs.setup_logging(Path(sys.argv[1])); logs.logger('fermix.x').info('below the level')"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run(
        [sys.executable, "-c", script, str(log_file)], capture_output=True, text=True, env=env
    )
    assert proc.returncode == 0, proc.stderr
    assert not log_file.exists()


FULL_DISK = """
import resource, signal, sys
from pathlib import Path
from fermix_cli.core import logs
log_file = Path(sys.argv[1])
logs.setup_logging(log_file)
log = logs.logger("fermix.test")
log.error("fits")
# The file may not grow any more: every further write fails (EFBIG), as on a full disk (ENOSPC).
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
size = log_file.stat().st_size
resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))
for n in range(3):
    try:
        raise ValueError("boom")
    except ValueError:
        log.exception("does not fit %d", n)
print("answer")
"""


def test_a_log_that_cannot_be_written_is_dropped_without_a_word_on_stderr(tmp_path: Path) -> None:
    """A full disk must not turn every logged error into a "--- Logging error ---" traceback on stderr:
    stderr belongs to the command's own answer."""
    log_file = tmp_path / "logs" / "fermix.log"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run(
        [sys.executable, "-c", FULL_DISK, str(log_file)], capture_output=True, text=True, env=env, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "answer\n"
    assert proc.stderr == ""
    assert "fits" in log_file.read_text() and "does not fit" not in log_file.read_text()
