"""Which Python a fermix.pyz was built for, where it extracted itself, and the refusal to run elsewhere.

`python -m fermix_cli.build pyz` sets `BUILT_FOR` in the copy of this file it bundles; in every other
install it stays None. A pyz carries compiled extension modules (pydantic-core, regex, ast-grep-py ...)
for one CPython minor version only: on another minor it would half-work, on a Python older than 3.11
it could not even import. The entry point reads this module before anything else of fermix, so it must
run on any Python 3: no `X | Y` or `match` at run time, nothing imported but the standard library.
"""

from __future__ import annotations

import os
import sys
from typing import IO, Any

# (implementation, major, minor) of the Python that built this fermix.pyz; the build rewrites this line.
BUILT_FOR: tuple[str, int, int] | None = None

CODE = "wrong_python"
EXIT_CODE = 1  # the environment is wrong, not the input and not fermix (docs/cli.md: exit 1)


def running_from_pyz() -> bool:
    return BUILT_FOR is not None


def extraction_dir() -> str | None:
    """The directory a fermix.pyz extracted itself into (`$SHIV_ROOT/fermix.pyz_<hash>`), or None.

    Removing it makes the next run extract the archive again."""
    if BUILT_FOR is None:
        return None
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # .../site-packages/fermix_cli
    return os.path.dirname(os.path.dirname(package))


def wrong_python(
    built_for: tuple[str, int, int] | None = BUILT_FOR,
    implementation: str | None = None,
    version: tuple[int, int, int] | None = None,
    executable: str | None = None,
    archive: str | None = None,
) -> str | None:
    """Why this Python cannot run this fermix.pyz (one line naming the one that can), or None when it can.

    The arguments default to the running interpreter and the pyz it runs (`sys.argv[0]`)."""
    if built_for is None:
        return None
    impl = implementation or sys.implementation.name
    running = version or (sys.version_info[0], sys.version_info[1], sys.version_info[2])
    want_impl, major, minor = built_for
    if (impl, running[0], running[1]) == (want_impl, major, minor):
        return None
    exe = executable or sys.executable or "python3"
    pyz = archive or (sys.argv[0] if sys.argv and sys.argv[0] else "fermix.pyz")
    want = f"python{major}.{minor}"
    shown = "Python" if want_impl == "cpython" else want_impl
    here = "Python" if impl == "cpython" else impl
    return (
        f"this fermix.pyz was built for {shown} {major}.{minor}, whose compiled modules it carries, and cannot "
        f"run on {here} {'.'.join(map(str, running))} ({exe}): run it with {want} ({want} {pyz} ...), or "
        f"build one for this Python from a fermix checkout: {exe} -m fermix_cli.build pyz"
    )


def refuse(message: str, stream: IO[str] | None = None) -> int:
    """Report `message` as fermix reports every error (the JSON envelope, or a line on a terminal)."""
    import json

    stream = stream if stream is not None else sys.stderr
    details: dict[str, Any] = {"python": sys.executable, "version": sys.version.split()[0]}
    if BUILT_FOR is not None:
        details["built_for"] = f"{BUILT_FOR[1]}.{BUILT_FOR[2]}"
    try:
        if stream.isatty():
            stream.write(f"fermix: {CODE}: {message}\n")
        else:
            envelope = {"error": {"code": CODE, "message": message, "details": details}}
            stream.write(json.dumps(envelope, ensure_ascii=False, separators=(",", ":")) + "\n")
        stream.flush()
    except (OSError, ValueError, AttributeError):
        pass  # nowhere left to say it; the exit code still does
    return EXIT_CODE
