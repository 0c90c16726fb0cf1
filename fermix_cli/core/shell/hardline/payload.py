"""What a command prints for a shell to run: literal text from `echo`/`printf`, or a decoded blob."""

from __future__ import annotations

import re
from collections.abc import Sequence

from fermix_cli.core.shell.expand import decode_ansi_c

_BASE_DECODERS = frozenset({"base64", "base32", "basenc", "gbase64", "gbase32"})
_ECHO_OPTIONS = re.compile(r"^-[neE]+$")
_XXD_REVERT = re.compile(r"^-[a-z]{0,2}r[a-z]{0,2}$")
_PRINTF_DIRECTIVE = re.compile(r"%(?:%|[-+ #0]*(?:\d+|\*)?(?:\.(?:\d+|\*))?[a-zA-Z])")
_MAX_PRINTF_ROUNDS = 16


def is_decoder(name: str | None, args: Sequence[str]) -> bool:
    """True for `base64 -d`, `xxd -r`, `openssl ... -d` and the like: output nobody can read in advance."""
    if name in _BASE_DECODERS:
        for arg in args:
            if arg in ("-d", "-D") or (arg.startswith("--d") and "--decode".startswith(arg)):
                return True
            if arg.startswith("-") and not arg.startswith("--") and "d" in arg[1:]:
                return True
        return False
    if name == "xxd":
        return any(a in ("-r", "-revert") or _XXD_REVERT.match(a) for a in args)
    if name == "openssl":
        return "-d" in args or "-decrypt" in args
    return name == "uudecode"


def literal_output(name: str | None, args: Sequence[str], stdin: Sequence[str]) -> list[str] | None:
    """The candidate texts a command prints when its arguments alone decide them, else None.

    `stdin` holds the here-documents and here-strings the command reads (used for a bare `cat`).
    """
    if name == "echo":
        i = 0
        escapes_forced = False
        while i < len(args) and _ECHO_OPTIONS.match(args[i]):
            escapes_forced = escapes_forced or "e" in args[i]
            i += 1
        text = " ".join(args[i:])
        # Without -e, bash prints backslashes as written but dash interprets them; consider both.
        return _unique([unescape(text)] if escapes_forced else [text, unescape(text)])
    if name == "printf":
        rest = list(args[1:] if args[:1] == ["--"] else args)
        if rest[:1] == ["-v"]:
            return [""]
        return [format_printf(rest[0], rest[1:])] if rest else [""]
    if name == "yes":
        return [" ".join(args) or "y"]
    if name == "cat" and not args and stdin:
        return list(stdin)
    return None


def is_passthrough(name: str | None, args: Sequence[str]) -> bool:
    """True for stages that copy stdin to stdout unchanged (`cat`, `tee FILE`)."""
    return (name == "cat" and not args) or name == "tee"


def format_printf(fmt: str, args: Sequence[str]) -> str:
    """What `printf FMT ARGS...` prints, for the directives that matter here (`%s`, `%b`, `%c`, ...)."""
    out: list[str] = []
    queue = list(args)
    for _ in range(_MAX_PRINTF_ROUNDS):
        consumed = False
        pos = 0
        for m in _PRINTF_DIRECTIVE.finditer(fmt):
            out.append(unescape(fmt[pos : m.start()]))
            pos = m.end()
            directive = m.group(0)
            if directive == "%%":
                out.append("%")
                continue
            value = queue.pop(0) if queue else ""
            consumed = consumed or bool(args)
            if directive.endswith("b"):
                value = unescape(value)
            elif directive.endswith("c"):
                value = value[:1]
            out.append(value)
        out.append(unescape(fmt[pos:]))
        if not queue or not consumed:
            break
    return "".join(out)


def unescape(text: str) -> str:
    """Backslash escapes as `echo -e` and `printf` interpret them."""
    try:
        return decode_ansi_c(text.replace("'", "\\'") + "'", 0)[0]
    except ValueError:
        return text


def _unique(texts: list[str]) -> list[str]:
    return list(dict.fromkeys(texts))
