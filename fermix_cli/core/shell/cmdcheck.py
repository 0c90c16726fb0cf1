"""bash preflight: a literal command name that is not a builtin, keyword, function or PATH program.

Judged on the parsed command line (the hardline's lexer), only where the answer is certain: the
first literal word of a simple command, after `!`, `time` and assignments, in straight-line code.
Anything unclear is left to the shell:
- an expansion or a path as the name, a function body (it runs only if called);
- every command line with a conditional (`if`, `while`, `until`, `case`, `||`), since
  `command -v rg && rg x || grep x` names a program that may rightly be missing;
- a name that a guard looks up (`command -v X >/dev/null && X`, `type X`, `which X`);
- every name from the first command that may change what PATH finds: a PATH assignment or
  `export PATH=...`, `.`/`source` (a virtualenv's `activate`), `eval`, `alias`, `hash`, an install
  (`pip install X && X`, `npm i -g X`, `make install`) or a copy into a PATH directory, a function
  whose body does one of these; from then on nothing is judged;
- everything when PATH has a relative entry (`.`, an empty one, `bin`): the shell resolves it against
  the command's working directory, which changes with every `cd`.
"""

from __future__ import annotations

import os
import re
import shutil

from .lex import parse_script
from .script import Command
from .words import ShellSyntaxError, Word

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
# Programs that install commands, and the words that make one of their calls an install
# (`pip install`, `npm i -g`, `go get`, `pacman -S`, `nix-env -iA`, `make install`).
_INSTALLERS = frozenset({
    "pip", "pipx", "python", "uv", "poetry", "pdm", "conda", "mamba", "micromamba", "npm", "pnpm", "yarn",
    "bun", "deno", "volta", "corepack", "cargo", "rustup", "go", "gem", "bundle", "apt", "apt-get",
    "aptitude", "dpkg", "rpm", "dnf", "yum", "zypper", "apk", "pacman", "yay", "brew", "port", "nix-env",
    "nix", "snap", "flatpak", "make", "cmake", "ninja", "meson", "dotnet", "opam", "cabal", "stack",
    "luarocks", "composer", "asdf", "mise", "nvm", "fnm", "pyenv", "rbenv", "sdk",
})
_INSTALL_VERBS = frozenset({
    "install", "reinstall", "upgrade", "i", "in", "add", "get", "link", "ln", "use", "require", "global",
    "sync", "enable",
})
# fmt: on
# Programs that put a file into a directory, or make one there executable.
_COPIERS = frozenset({"cp", "mv", "ln", "install", "rsync", "chmod"})
# Builtins that change what a later name resolves to: PATH's hash table, aliases, sourced code.
_REBINDERS = frozenset({".", "source", "eval", "alias", "hash"})
# Builtins whose arguments are names being looked up, not run.
_LOOKUPS = frozenset({"type", "which"})
_DECLARATIONS = frozenset({"export", "declare", "typeset", "readonly", "local"})
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\[[^\]]*\])?\+?=", re.S)
_PATH_ASSIGNMENT = re.compile(r"PATH\+?=")


def missing_commands(command: str, path: str) -> list[str]:
    """Literal command names in `command` that `sh` could not find on `path`, in order."""
    entries = path.split(os.pathsep)
    if "||" in command or not all(e.startswith("/") for e in entries):
        return []
    try:
        script = parse_script(command)
    except ShellSyntaxError:
        return []
    if any(cmd.words and cmd.words[0].literal in _CONDITIONAL for cmd in script.commands):
        return []
    functions = {f for cmd in script.commands for f in cmd.functions}
    # A function that may change PATH does so where it is called.
    rebinding = {f for cmd in script.commands if _may_change_path(cmd, entries) for f in cmd.functions}
    guarded = _guarded_names(script.commands)
    out: list[str] = []
    for cmd in script.commands:
        if cmd.functions:
            continue
        if any(_assigns_path(w) for w in _prefix_assignments(cmd)):
            break  # `PATH=dir tool` looks `tool` up in the new PATH
        name, _ = _program(cmd)
        if _judged(name, out, functions, guarded) and shutil.which(name or "", path=path) is None:
            out.append(name or "")
        if name in rebinding or _may_change_path(cmd, entries):
            break
    return out


def _judged(word: str | None, out: list[str], functions: set[str], guarded: set[str]) -> bool:
    if not word or word in out or "/" in word or word in BUILTINS or word in _NOT_PROGRAMS:
        return False
    return word not in functions and word not in guarded and not any(c in word for c in "*?[=")


def _prefix_assignments(cmd: Command) -> tuple[Word, ...]:
    """The `NAME=value` words before the command's name (past `!`, `time`, `{`)."""
    words = cmd.words
    i = 0
    while i < len(words) and words[i].literal in _LEADING:
        i += 1
    start = i
    while i < len(words) and _is_assignment(words[i]):
        i += 1
    return words[start:i]


def _program(cmd: Command) -> tuple[str | None, tuple[Word, ...]]:
    """The command's name (None when not literal) and its arguments, past `!`, `time` and assignments."""
    words = cmd.words
    i = 0
    while i < len(words) and words[i].literal in _LEADING:
        i += 1
    while i < len(words) and _is_assignment(words[i]):
        i += 1
    if i >= len(words):
        return None, ()
    return words[i].literal, words[i + 1 :]


def _guarded_names(commands: tuple[Command, ...]) -> set[str]:
    """Names a guard looks up: `command -v X`, `command -V X`, `type X`, `which X`."""
    names: set[str] = set()
    for cmd in commands:
        name, args = _program(cmd)
        literals = [a.literal for a in args]
        if name in _LOOKUPS or (name == "command" and any(a in ("-v", "-V") for a in literals)):
            names.update(a for a in literals if a and not a.startswith("-"))
    return names


def _may_change_path(cmd: Command, entries: list[str]) -> bool:
    """Whether this command may change what a later name resolves to."""
    name, args = _program(cmd)
    if any(_assigns_path(w) for w in _prefix_assignments(cmd)) or name in _REBINDERS:
        return True
    if name in _DECLARATIONS and any(_assigns_path(w) for w in args):
        return True  # `export PATH=...`, `declare -x PATH=...`
    literals = [w.literal for w in cmd.words]
    programs = {_base(w) for w in literals if w}
    if programs & _INSTALLERS and any(
        w is not None and (w in _INSTALL_VERBS or w.startswith(("-S", "-i"))) for w in literals
    ):
        return True
    if name is not None and _base(name) in _COPIERS:
        return any(_into_path_dir(a, entries) for a in args)
    return False


def _assigns_path(word: Word) -> bool:
    head = word.parts[0] if word.parts else None
    return head is not None and head.kind == "lit" and _PATH_ASSIGNMENT.match(head.text) is not None


def _is_assignment(word: Word) -> bool:
    head = word.parts[0] if word.parts else None
    return head is not None and head.kind == "lit" and _ASSIGNMENT.match(head.text) is not None


def _base(word: str) -> str:
    """A program's name without its directory or version (`/usr/bin/pip3.12` -> `pip`)."""
    return re.sub(r"[0-9.]+$", "", word.rpartition("/")[2]) or word


def _into_path_dir(word: Word, entries: list[str]) -> bool:
    """Whether an argument may name a PATH directory or a file in one (an unknown value may)."""
    if word.has_unknown:
        return True
    text = word.render(os.environ.get("HOME", "/"))
    if not text.startswith("/"):
        return False
    target = os.path.normpath(text)
    return any(
        target == os.path.normpath(e) or target.startswith(os.path.normpath(e).rstrip("/") + "/")
        for e in entries
    )
