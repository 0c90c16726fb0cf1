"""Trace copies of a command or an error: secrets masked before they reach the disk (reference 3.4)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fermix_cli.core.paths import resolve_paths
from fermix_cli.core.traces import append_trace, mask_secrets

ROWS = [
    (
        'curl -H "Authorization: Bearer ghp_SECRET1234" https://x',
        'curl -H "Authorization: [REDACTED]" https://x',
    ),
    ("curl -H 'authorization:Basic dXNlcjpwYXNz' u", "curl -H 'authorization:[REDACTED]' u"),
    ('curl -H "X-Auth: Bearer abc.def-ghi" u', 'curl -H "X-Auth: Bearer [REDACTED]" u'),
    ("GITHUB_TOKEN=ghp_abc make release", "GITHUB_TOKEN=[REDACTED] make release"),
    ("tool --api-key=sk-live-1 --verbose", "tool --api-key=[REDACTED] --verbose"),
    ("export OPENAI_API_KEY=sk-proj-xyz; run", "export OPENAI_API_KEY=[REDACTED]; run"),
    ('curl "https://x/?access_token=abc&page=2"', 'curl "https://x/?access_token=[REDACTED]&page=2"'),
    ("mysql --password=hunter2 -u bob", "mysql --password=[REDACTED] -u bob"),
    (
        """curl -d '{"client_secret": "s3cr3t", "n": 1}' u""",
        """curl -d '{"client_secret": [REDACTED], "n": 1}' u""",
    ),
    ('secret: "two words" then', "secret: [REDACTED] then"),
    ("echo token=abc|grep x", "echo token=[REDACTED]|grep x"),
    # nothing named a secret: unchanged
    ("echo tokens are fine; ls secret_dir", "echo tokens are fine; ls secret_dir"),
    ("rm -rf /", "rm -rf /"),
]


@pytest.mark.parametrize(("text", "masked"), ROWS)
def test_mask_secrets(text: str, masked: str) -> None:
    assert mask_secrets(text) == masked


def test_a_trace_record_masks_and_caps_its_command_and_error(tmp_path: Path) -> None:
    paths = resolve_paths(home=str(tmp_path / "fermix"))
    command = 'curl -H "Authorization: Bearer ghp_SECRETVALUE" u; ' + "x" * 400
    error = "password=hunter2 " + "y" * 600
    append_trace(paths, "sandbox_event", {"command": command, "error": error, "path": "/p/token=kept"})
    (trace,) = (tmp_path / "fermix").rglob("sandbox_event.jsonl")
    text = trace.read_text()
    assert "ghp_SECRET" not in text and "hunter2" not in text
    record = json.loads(text)
    assert record["command"].startswith('curl -H "Authorization: [REDACTED]" u; ')
    assert len(record["command"]) == 300 and len(record["error"]) == 500
    assert record["path"] == "/p/token=kept"  # only the fields that copy a command or an error
