"""Strip command wrappers (`sudo`, `env`, `timeout`, `xargs`, ...) to find the command that really runs."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Sequence

from fermix_cli.core.shell.words import GLOB, UNKNOWN_MARK, Word

from ...records import Record, field

_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(?:\[[^\]]*\])?\+?=")
# Reserved words that may start a simple command in our flattened view (`if rm ...`, `then rm ...`).
_RESERVED = frozenset({"!", "if", "then", "else", "elif", "do", "while", "until", "coproc"})
_MAX_LAYERS = 32


class WrapperSpec(Record, frozen=True):
    """How a wrapper's own arguments look: options taking a value, then fixed operands, then the command."""

    short_arg: str = ""
    long_arg: frozenset[str] = frozenset()
    operands: int = 0


WRAPPERS: dict[str, WrapperSpec] = {
    "sudo": WrapperSpec(
        "CDgpRrTtUu",
        frozenset(
            {"chdir", "chroot", "close-from", "command-timeout", "group", "host", "other-user", "prompt"}
            | {"role", "type", "user"}
        ),
    ),
    "doas": WrapperSpec("uC"),
    "env": WrapperSpec("uCPS", frozenset({"unset", "chdir", "split-string"})),
    "nice": WrapperSpec("n", frozenset({"adjustment"})),
    "ionice": WrapperSpec("cnpPu", frozenset({"class", "classdata", "pid", "pgid", "uid"})),
    "timeout": WrapperSpec("sk", frozenset({"signal", "kill-after"}), operands=1),
    "nohup": WrapperSpec(),
    "stdbuf": WrapperSpec("ioe", frozenset({"input", "output", "error"})),
    "time": WrapperSpec("fo", frozenset({"format", "output"})),
    "setsid": WrapperSpec(),
    "chrt": WrapperSpec("TPD", frozenset({"sched-runtime", "sched-period", "sched-deadline"}), operands=1),
    "taskset": WrapperSpec(operands=1),
    "flock": WrapperSpec("wEc", frozenset({"timeout", "conflict-exit-code", "command"}), operands=1),
    "command": WrapperSpec(),
    "builtin": WrapperSpec(),
    "exec": WrapperSpec("a"),
    "busybox": WrapperSpec(),
    "xargs": WrapperSpec(
        "adEILnPs",
        frozenset(
            {"arg-file", "delimiter", "max-lines", "max-args", "max-procs", "max-chars", "process-slot-var"}
        ),
    ),
    "nocorrect": WrapperSpec(),
    "noglob": WrapperSpec(),
    "unbuffer": WrapperSpec(),
    "watch": WrapperSpec("n", frozenset({"interval"})),
    "pkexec": WrapperSpec(long_arg=frozenset({"user"})),
    "run0": WrapperSpec(
        "ugD", frozenset({"user", "group", "chdir", "setenv", "property", "unit", "slice", "nice"})
    ),
    "systemd-run": WrapperSpec(
        "upEMH",
        frozenset({"unit", "property", "setenv", "machine", "host", "description", "slice", "uid", "gid"})
        | frozenset({"nice", "working-directory", "service-type", "on-active", "on-boot", "on-calendar"}),
    ),
    "strace": WrapperSpec("abeEIoOpPsSuUX"),
    "ltrace": WrapperSpec("aeEFlnopsuw"),
    "chroot": WrapperSpec(long_arg=frozenset({"userspec", "groups"}), operands=1),
    "unshare": WrapperSpec("SGRw", frozenset({"setuid", "setgid", "root", "wd"})),
    "gosu": WrapperSpec(operands=1),
    "su-exec": WrapperSpec(operands=1),
    "setpriv": WrapperSpec(),
    "caffeinate": WrapperSpec("tw"),
}


class Option(Record, frozen=True):
    """One option a wrapper was given: a short letter or `--name`, and its value if it takes one."""

    name: str
    value: Word | None = None


class Invocation(Record, frozen=True):
    """A simple command with its wrappers stripped.

    `extra_targets` are words that reach the command through `xargs`; `sudo_options` holds the options
    of every `sudo` layer, for the `sudo -S` rule.
    """

    words: tuple[Word, ...]
    extra_targets: tuple[Word, ...] = ()
    sudo_options: tuple[tuple[Option, ...], ...] = field(default=())

    @property
    def name(self) -> str | None:
        return command_name(self.words[0]) if self.words else None

    @property
    def args(self) -> tuple[Word, ...]:
        return self.words[1:]


def command_name(word: Word) -> str | None:
    """The basename of a command word, or None when an expansion or a glob makes it unknowable."""
    text = word.literal
    if text is None:
        if word.has_unknown:
            return None
        text = word.render("/home")
    if GLOB.search(text):
        return None
    return posixpath.basename(text.rstrip("/")) or text


def is_assignment(word: Word) -> bool:
    head = word.parts[0] if word.parts else None
    return head is not None and head.kind == "lit" and bool(_ASSIGNMENT.match(head.text))


def parse_options(args: Sequence[Word], spec: WrapperSpec) -> tuple[int, list[Option]]:
    """Read a wrapper's options and fixed operands; return where the wrapped command starts."""
    options: list[Option] = []
    i = 0
    while i < len(args):
        text = args[i].literal
        if text is None or not text.startswith("-") or text == "-":
            break
        i += 1
        if text == "--":
            break
        if text.startswith("--"):
            name, eq, value = text[2:].partition("=")
            if eq:
                options.append(Option("--" + name, Word.of(value)))
            elif name in spec.long_arg and i < len(args):
                options.append(Option("--" + name, args[i]))
                i += 1
            else:
                options.append(Option("--" + name))
            continue
        for j, letter in enumerate(text[1:], start=2):
            if letter not in spec.short_arg:
                options.append(Option(letter))
                continue
            if j < len(text):
                options.append(Option(letter, Word.of(text[j:])))
            elif i < len(args):
                options.append(Option(letter, args[i]))
                i += 1
            else:
                options.append(Option(letter))
            break
    return min(i + spec.operands, len(args)), options


def unwrap(
    words: Sequence[Word],
    relex: Callable[[str], tuple[Word, ...]],
    piped_words: Callable[[], Sequence[Word]] = tuple,
) -> Invocation:
    """Strip assignments, reserved words and wrappers, repeatedly, before the command is judged.

    `relex` splits the string given to `env -S`; `piped_words` gives the literal words of earlier
    pipeline stages, which `xargs` turns into arguments (called only when there is an `xargs`).
    """
    rest = list(words)
    extra: list[Word] = []
    sudo: list[tuple[Option, ...]] = []
    for _ in range(_MAX_LAYERS):
        while rest and (is_assignment(rest[0]) or rest[0].literal in _RESERVED):
            rest.pop(0)
        name = command_name(rest[0]) if rest else None
        spec = WRAPPERS.get(name or "")
        if name is None or spec is None:
            break
        args = rest[1:]
        start, options = parse_options(args, spec)
        if name == "sudo":
            sudo.append(tuple(options))
        if name == "env":
            split = [
                relex(_text_of(o.value)) for o in options if o.name in ("S", "--split-string") and o.value
            ]
            rest = [w for words in split for w in words] + args[start:]
            continue
        if name == "flock":
            command = _flock_command(options, args[start:])
            if command is not None:
                rest = [Word.of("sh"), Word.of("-c"), command]
                break
        if name == "watch" and not any(o.name in ("x", "--exec") for o in options):
            rest = [Word.of("eval"), *args[start:]]
            break
        if name == "xargs":
            extra.extend(piped_words())
            rest = args[start:] or [Word.of("echo")]
            continue
        rest = args[start:]
    return Invocation(tuple(rest), tuple(extra), tuple(sudo))


def _flock_command(options: list[Option], rest: list[Word]) -> Word | None:
    for option in options:
        if option.name in ("c", "--command") and option.value is not None:
            return option.value
    if len(rest) >= 2 and rest[0].literal in ("-c", "--command"):
        return rest[1]
    return None


def _text_of(word: Word) -> str:
    # An unknown part of an `env -S` string stays unknown when the string is split again.
    return word.render("$HOME", UNKNOWN_MARK)


def shell_command_string(args: Sequence[Word]) -> tuple[bool, Word | None]:
    """Whether a shell got `-c` (alone or clustered, as in `-lc`), and the command string if so."""
    has_c = False
    i = 0
    while i < len(args):
        text = args[i].literal
        if text is None:
            break
        if text in ("-", "--"):
            i += 1
            break
        if text.startswith("--"):
            i += 2 if text in ("--rcfile", "--init-file") else 1
            continue
        if text[:1] in ("-", "+") and len(text) > 1:
            has_c = has_c or (text[0] == "-" and "c" in text[1:])
            i += 2 if ("o" in text[1:] or "O" in text[1:]) else 1
            continue
        break
    return has_c, (args[i] if has_c and i < len(args) else None)


def dash_c_value(args: Sequence[Word]) -> Word | None:
    """The value of `-c`/`--command` for `su`, `runuser` and `script`, wherever it appears."""
    for i, word in enumerate(args):
        text = word.literal or ""
        for prefix in ("--command=", "--session-command="):
            if text.startswith(prefix):
                return Word.of(text[len(prefix) :])
        clustered = text.startswith("-") and not text.startswith("--") and text.endswith("c")
        if (text in ("--command", "--session-command") or clustered) and i + 1 < len(args):
            return args[i + 1]
    return None
