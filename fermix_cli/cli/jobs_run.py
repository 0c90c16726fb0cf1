"""`fermix jobs run` and `fermix jobs worker`: the commands cron (and the runner) call, without Typer.

cron starts `fermix jobs run` every minute, so its start-up is paid sixty times an hour; like
`fermix tool`, it takes the fast path in `__main__` and imports only what a tick needs.
"""

from __future__ import annotations

import json
import os
import sys
from typing import TYPE_CHECKING

from ..core.errors import ToolError
from .globalopts import GlobalOptions

if TYPE_CHECKING:
    from ..jobs.duework import Report

RUN_USAGE = """\
Usage: fermix jobs run [--json | --quiet]

Run every scheduled job that is due, then exit; cron calls this every minute (see `fermix jobs install`).
Each slot runs at most once, however many of these processes overlap: a slot is claimed in the
database before it runs. A second invocation while one is claiming exits 0 at once.

  --json    always print the JSON summary (default: only when something happened, or on a terminal)
  --quiet   print nothing

Exit codes: 0 done (failed runs are recorded in the run history, not in the exit code), 1 fermix could
not read its state or config, 130/143/129 stopped by SIGINT/SIGTERM/SIGHUP (a closed terminal; runs in
flight are recorded as interrupted).
"""


def _flag_value(argv: list[str], i: int, name: str) -> str:
    if i + 1 >= len(argv):
        raise ToolError("usage", f"{name} needs a value", {"flag": name})
    return argv[i + 1]


def main_run(argv: list[str], g: GlobalOptions) -> int:
    mode = "auto"
    manual: dict[str, str] = {}
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg in ("-h", "--help"):
            sys.stdout.write(RUN_USAGE)
            return 0
        if arg in ("--json", "--quiet"):
            mode = arg[2:]
        elif arg in ("--run", "--claimant", "--lock-fd"):  # the background half of run_job_now
            manual[arg[2:]] = _flag_value(argv, i, arg)
            i += 1
        else:
            raise ToolError("usage", f"unknown argument {arg!r} for jobs run; see fermix jobs run --help", {})
        i += 1
    from ..core.context import ToolContext

    ctx = ToolContext.for_cli(home=g.home, cwd=g.cwd, session=g.session, trust=g.trust)  # type: ignore[arg-type]
    summary: Report  # the scheduled jobs' Summary, or every due-work source's output
    try:
        if manual:
            if set(manual) != {"run", "claimant", "lock-fd"} or not manual["lock-fd"].isdigit():
                raise ToolError(
                    "usage", "--run, --claimant and --lock-fd go together (run_job_now uses them)", {}
                )
            from ..jobs.runner import adopt_and_run

            code, summary = adopt_and_run(ctx, manual["run"], manual["claimant"], int(manual["lock-fd"]))
        else:
            use_lock = os.environ.get("FERMIX_JOBS_SCHEDULER_LOCK", "1") != "0"
            from ..jobs.duework import run_due_work

            code, summary = run_due_work(ctx, use_lock=use_lock)
    finally:
        ctx.close()
    show = mode == "json" or (mode == "auto" and (not summary.quiet or sys.stdout.isatty()))
    if show:
        sys.stdout.write(json.dumps(summary.as_dict(), ensure_ascii=False, separators=(",", ":")) + "\n")
        sys.stdout.flush()
    return code


def main_jobs_fast(argv: list[str], g: GlobalOptions) -> int:
    """argv starts after `jobs`: `run ...` or `worker ...`."""
    from ..core.startup import resume_collector
    from .toolcall import report_error

    resume_collector()  # a tick or a worker runs for a while: collect its garbage as usual
    try:
        if argv[0] == "worker":
            from ..jobs.worker import main as worker_main

            return worker_main(argv[1:], g.home)
        return main_run(argv[1:], g)
    except ToolError as e:
        return report_error(e)
    except KeyboardInterrupt:
        return 130
    except Exception as e:  # the disk or a bug: one line for the user, the traceback in the log
        from ..core.logs import setup_logging
        from ..core.paths import resolve_paths
        from .toolcall import internal_error

        setup_logging(resolve_paths(g.home).log_file)
        return internal_error(e)
