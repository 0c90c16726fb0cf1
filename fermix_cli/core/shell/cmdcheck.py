"""bash preflight: a literal command name that is not a builtin, keyword, function or PATH program.

Judged on the parsed command line (the hardline's lexer), only where the answer is certain: the
first literal word of a simple command, after `!`, `time` and assignments, in straight-line code.
Anything unclear is left to the shell: an expansion or a path as the name, a function body (it runs
only if called), and every command line with a conditional (`if`, `while`, `until`, `case`, `||`),
since `command -v rg && rg x || grep x` names a program that may rightly be missing.
"""

from __future__ import annotations

import shutil

from .lex import parse_script
from .words import ShellSyntaxError

# Words that may precede a command name in a simple command as the lexer reports it.
_LEADING = frozenset({"!", "time", "{", "(", "do"})
# Their presence makes any missing name possibly intended (a guard or a fallback).
_CONDITIONAL = frozenset({"if", "then", "else", "elif", "while", "until", "case", "select", "coproc"})
# Keywords and words that never name a program in that position.
_NOT_PROGRAMS = frozenset(
    {"case", "esac", "for", "select", "in", "fi", "done", "}", ")", "function", "[[", "]]"}
)
# POSIX special and regular builtins plus those of bash, dash and zsh that scripts commonly use.
# fmt: off
BUILTINS = frozenset({
    ".", ":", "[", "alias", "bg", "break", "builtin", "caller", "cd", "command", "compgen", "complete",
    "continue", "declare", "dirs", "disown", "echo", "enable", "eval", "exec", "exit", "export",
    "false", "fc", "fg", "getopts", "hash", "help", "history", "jobs", "kill", "let", "local",
    "logout", "mapfile", "popd", "printf", "pushd", "pwd", "read", "readarray", "readonly", "return",
    "set", "shift", "shopt", "source", "suspend", "test", "times", "trap", "true", "type", "typeset",
    "ulimit", "umask", "unalias", "unset", "wait",
})
# fmt: on


def missing_commands(command: str, path: str) -> list[str]:
    """Literal command names in `command` that `sh` could not find on `path`, in order."""
    if "||" in command:
        return []
    try:
        script = parse_script(command)
    except ShellSyntaxError:
        return []
    firsts: list[str | None] = []
    for cmd in script.commands:
        words = [w.literal for w in cmd.words]
        if words and words[0] in _CONDITIONAL:
            return []
        if cmd.functions:
            continue
        i = 0
        while i < len(words) and words[i] in _LEADING:
            i += 1
        while i < len(words) and words[i] is not None and _is_assignment(words[i] or ""):
            i += 1
        firsts.append(words[i] if i < len(words) else None)
    functions = {f for cmd in script.commands for f in cmd.functions}
    out: list[str] = []
    for word in firsts:
        if not word or word in out or "/" in word or word in BUILTINS or word in _NOT_PROGRAMS:
            continue
        if word in functions or any(c in word for c in "*?[="):
            continue
        if shutil.which(word, path=path) is None:
            out.append(word)
    return out


def _is_assignment(word: str) -> bool:
    name, eq, _ = word.partition("=")
    return bool(eq) and name.replace("_", "a").isalnum() and not name[:1].isdigit()
