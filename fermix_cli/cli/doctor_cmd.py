"""`fermix doctor [--json]`: is this installation healthy? One line per check, exit 1 on any FAIL."""

from __future__ import annotations

from typing import Annotated

import typer

from .common import GLOBAL, emit_json


def doctor_cmd(as_json: Annotated[bool, typer.Option("--json", help="JSON output.")] = False) -> None:
    """Check config, home permissions, state.db, sandbox roots and the optional parts (git, providers, ripgrep).

    Each line reads `[ OK |WARN|FAIL|N/A ] NAME DETAIL`; a summary line follows. Exit 1 when any check fails.
    """
    from ..core.paths import os_home, resolve_paths
    from .doctor_checks import DoctorInput, report, run_checks, summary_line

    checks = run_checks(DoctorInput(paths=resolve_paths(GLOBAL.home), os_home=os_home()))
    if as_json:
        emit_json(report(checks))
    else:
        for c in checks:
            typer.echo(c.line())
        typer.echo(summary_line(checks))
    raise typer.Exit(1 if any(c.status == "fail" for c in checks) else 0)
