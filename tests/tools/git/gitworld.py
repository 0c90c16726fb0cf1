"""Helpers for the git tool tests: plain git isolated from the machine's config, the CLI with a
logging git wrapper first on PATH (so a test sees which git processes fermix started), and payloads
that create a marker file if git ever runs them."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.conftest import Env, Result

REAL_GIT = shutil.which("git") or "git"
ISOLATED = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_AUTHOR_NAME": "Setup",
    "GIT_AUTHOR_EMAIL": "setup@example.com",
    "GIT_COMMITTER_NAME": "Setup",
    "GIT_COMMITTER_EMAIL": "setup@example.com",
}
WRAPPER = """#!/bin/sh
{{ printf '%s\\t' "$@"; echo; }} >> "{log}"
env | grep '^GIT_' | sort | tr '\\n' ' ' >> "{envlog}"
echo >> "{envlog}"
exec "{git}" "$@"
"""
IDENTITY = '[fermix_core.tools.git]\nuser_name = "Fermix Test"\nuser_email = "fermix@example.com"\n'


def plain(cwd: Path, *args: str, check: bool = True, env: dict[str, str] | None = None) -> str:
    """git without fermix, isolated from the machine's config."""
    full = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    full.update(ISOLATED)
    full.update(env or {})
    p = subprocess.run(
        [REAL_GIT, *args], cwd=cwd, capture_output=True, text=True, env=full, check=False, timeout=60
    )
    if check and p.returncode != 0:
        raise AssertionError(f"git {args} failed: {p.stderr}")
    return p.stdout


class Git:
    """The world's CLI with the logging git wrapper on PATH."""

    def __init__(self, world: Env) -> None:
        self.world = world
        wrap = world.root / "gitwrap"
        wrap.mkdir()
        self.log = world.root / "git-calls.log"
        self.envlog = world.root / "git-env.log"
        (wrap / "git").write_text(WRAPPER.format(log=self.log, envlog=self.envlog, git=REAL_GIT))
        (wrap / "git").chmod(0o755)
        self.env = {"PATH": f"{wrap}:{os.environ['PATH']}"}

    def run(self, *args: str, env: dict[str, str] | None = None, input: str | None = None) -> Result:
        full = {**self.world.env, **self.env, **(env or {})}
        p = subprocess.run(
            [sys.executable, "-m", "fermix_cli", *args],
            capture_output=True,
            text=True,
            cwd=self.world.project,
            env=full,
            input=input,
            timeout=120,
        )
        return Result(p.returncode, p.stdout, p.stderr)

    def tool(self, name: str, args: dict[str, Any], env: dict[str, str] | None = None) -> Result:
        return self.run("tool", name, "--json", json.dumps(args), env=env)

    def subcommands(self) -> list[str]:
        """The subcommand of every git process fermix started, in order."""
        if not self.log.exists():
            return []
        out = []
        for line in self.log.read_text().splitlines():
            words = line.rstrip("\t").split("\t")
            i = 0
            while i < len(words) and words[i].startswith("-"):
                i += 2 if words[i] == "-c" else 1
            out.append(words[i] if i < len(words) else "")
        return out

    def reset_log(self) -> None:
        self.log.unlink(missing_ok=True)
        self.envlog.unlink(missing_ok=True)


def payload(world: Env, name: str = "payload.sh", *, then: str = "cat") -> tuple[Path, Path]:
    """(an executable that creates a marker, then passes stdin through; the marker path)."""
    marker = world.root / f"marker-{name}"
    script = world.root / name
    script.write_text(f"#!/bin/sh\ntouch '{marker}'\n{then}\n")
    script.chmod(0o755)
    return script, marker
