"""fermix's entry point: machine calls (`fermix tool ...`) take a fast path that never imports Typer or rich."""

from __future__ import annotations

import os
import sys


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    # First of all: a fermix.pyz on a Python it was not built for (read core/pyzbuild.py's docstring).
    from .core.pyzbuild import refuse, wrong_python

    refusal = wrong_python()
    if refusal is not None and not _doctor_can_say_so(args):
        return refuse(refusal)
    from .core.startup import pause_collector, resume_collector

    pause_collector(freeze=argv is None)  # until the command's code is loaded (core/startup.py)
    try:
        return _dispatch(args)
    finally:
        resume_collector()


def _doctor_can_say_so(args: list[str]) -> bool:
    """`fermix doctor` runs on the wrong Python to fail its python check, where fermix can import at all."""
    if sys.version_info < (3, 11):  # noqa: UP036  # this module runs on any Python (a pyz on an old one)
        return False
    from .cli.globalopts import split_globals

    try:
        return split_globals(args)[1][:1] == ["doctor"]
    except Exception:  # a malformed global option: the refusal is the better answer
        return False


def _dispatch(args: list[str]) -> int:
    # fermix uses no pydantic plugins; skipping their discovery saves a scan of every installed package.
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    from .cli.globalopts import split_globals
    from .cli.toolcall import internal_error, main_tool, report_error
    from .core.errors import ToolError

    try:
        opts, rest = split_globals(args)
        if rest == ["--version"]:  # a line to print: no Typer
            from . import __version__

            sys.stdout.write(f"fermix {__version__}\n")
            return 0
        if rest in (["--help"], ["-h"]) and _help_width_is_default():  # the generated copy: no Typer
            from .cli.roothelp import ROOT_HELP

            sys.stdout.write(ROOT_HELP)
            return 0
        if rest and rest[0] == "tool" and not (len(rest) > 1 and rest[1] in ("-h", "--help")):
            return main_tool(rest[1:], opts)
        if len(rest) > 1 and rest[0] == "jobs" and rest[1] in ("run", "worker"):
            # What cron calls every minute: no Typer, no rich.
            from .cli.jobs_run import main_jobs_fast

            return main_jobs_fast(rest[1:], opts)
    except ToolError as e:
        return report_error(e)
    except KeyboardInterrupt:
        return 130
    except Exception as e:  # a bug: one line for the user, the traceback in the log
        from .core.logs import setup_logging
        from .core.paths import resolve_paths

        setup_logging(resolve_paths().log_file)
        return internal_error(e)
    from .cli.app import run_app

    return run_app(args, rest[0] if rest else None)


def _help_width_is_default() -> bool:
    """True when Click would lay help out at its 80-column maximum (so the generated copy is exact)."""
    try:
        columns = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        columns = 0
    if columns <= 0:  # as shutil.get_terminal_size decides, without importing shutil
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 80
    return columns >= 80


if __name__ == "__main__":
    sys.exit(main())
