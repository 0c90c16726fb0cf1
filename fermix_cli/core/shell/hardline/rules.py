"""The hardline rule families, each judging one unwrapped simple command."""

from __future__ import annotations

import re
from collections.abc import Sequence

from fermix_cli.core.shell.hardline.targets import Roots, Verdict, judge_target, worst
from fermix_cli.core.shell.hardline.unwrap import Option, unwrap
from fermix_cli.core.shell.lex import Command, Redirect, Script
from fermix_cli.core.shell.words import Word

from ...records import Record

RM_PROTECTED = "recursive delete of a protected root"
RM_MAY_EXPAND = "recursive delete may expand to a protected root"
MKFS = "filesystem formatting command"
PARTITION = "disk partitioning or wiping command"
DD = "block-device write through dd"
DISK_WRITE = "block-device write"
FORK_BOMB = "fork bomb pattern"
KILL_ALL = "kill-all process pattern"
SHUTDOWN = "shutdown or reboot command"
SUDO_STDIN = "sudo password read from stdin"
CHMOD_PROTECTED = "recursive permission change of a protected root"
CHMOD_MAY_EXPAND = "recursive permission change may reach a protected root"
UNPARSEABLE = "command could not be parsed for safety checks"
OPAQUE = "opaque payload piped into a shell"
REMOTE = "downloaded script run by a shell"

_PARTITIONERS = frozenset({"wipefs", "fdisk", "sfdisk", "cfdisk", "parted", "sgdisk", "gdisk", "blkdiscard"})
_FORMATTERS = frozenset({"mke2fs", "mkswap", "mkdosfs", "mkntfs", "newfs"})
_BLOCK_DEVICE = re.compile(r"^/dev/+(sd|nvme|disk|rdisk|hd|vd|xvd|mmcblk|mapper/|dm-|md|mem$|kmem$|port$)")
_WRITE_REDIRECTS = frozenset({">", ">>", ">|", "&>", "&>>", "<>"})
_SHUTDOWN_NAMES = frozenset({"shutdown", "reboot", "poweroff", "halt"})
_SYSTEMCTL_VERBS = frozenset({"reboot", "halt", "kexec", "poweroff", "soft-reboot"})
_SHUTDOWN_UNITS = frozenset({"reboot.target", "halt.target", "kexec.target", "poweroff.target"})
_KILL_SIGNALS = frozenset({"9", "KILL", "SIGKILL"})
_USER_SELECTORS = ("-u", "-U", "--euid", "--uid", "--user")


class Finding(Record, frozen=True):
    """Why a command is refused: the reference's reason text and a short rule id."""

    reason: str
    rule: str


class Options(Record, frozen=True):
    """Option words and operands of a command, split the GNU way (options may follow operands)."""

    flags: tuple[str, ...]
    operands: tuple[Word, ...]

    @classmethod
    def split(cls, args: Sequence[Word], home: str) -> Options:
        flags: list[str] = []
        operands: list[Word] = []
        ended = False
        for word in args:
            text = word.render(home, "?")
            if not ended and text == "--":
                ended = True
            elif not ended and text.startswith("-") and text != "-" and not word.starts_unknown:
                flags.append(text)
            else:
                operands.append(word)
        return cls(tuple(flags), tuple(operands))

    def has_short(self, letters: str) -> bool:
        return any(not f.startswith("--") and any(ch in f[1:] for ch in letters) for f in self.flags)

    def has_long(self, full: str, shortest: int) -> bool:
        """True when some `--name` is an abbreviation of `full` at least `shortest` characters long."""
        for flag in self.flags:
            name = flag[2:].split("=", 1)[0] if flag.startswith("--") else ""
            if len(name) >= shortest and full.startswith(name):
                return True
        return False


def judge_rm(args: Sequence[Word], extra: Sequence[Word], roots: Roots, cwd: str | None) -> Finding | None:
    opts = Options.split(args, roots.home)
    if opts.has_long("no-preserve-root", 1):
        return Finding(RM_PROTECTED, "rm_no_preserve_root")
    unknown_flag = any(w.has_unknown and w.render(roots.home, "?").startswith("-") for w in args)
    if not (opts.has_short("rR") or opts.has_long("recursive", 1) or unknown_flag):
        # A wholly unknown argument (`rm $FLAGS /`) may itself be `-r`.
        maybe_flag = any(w.starts_unknown for w in args)
        literal = (w for w in opts.operands if not w.has_unknown)
        if maybe_flag and any(judge_target(w, roots, cwd) is Verdict.PROTECTED for w in literal):
            return Finding(RM_PROTECTED, "rm_protected_root")
        return None
    verdict = worst(judge_target(w, roots, cwd) for w in (*opts.operands, *extra))
    return _verdict_finding(verdict, RM_PROTECTED, RM_MAY_EXPAND, "rm")


def judge_recursive_delete(paths: Sequence[Word], roots: Roots, cwd: str | None, rule: str) -> Finding | None:
    """For `find PATH... -delete` and friends: the start paths are the targets."""
    verdict = worst(judge_target(w, roots, cwd) for w in paths)
    return _verdict_finding(verdict, RM_PROTECTED, RM_MAY_EXPAND, rule)


def judge_permissions(
    args: Sequence[Word], extra: Sequence[Word], roots: Roots, cwd: str | None
) -> Finding | None:
    """`chmod -R`, `chown -R`, `chgrp -R` on a protected target."""
    opts = Options.split(args, roots.home)
    if not (opts.has_short("R") or opts.has_long("recursive", 3)):
        return None
    verdict = worst(judge_target(w, roots, cwd) for w in (*_permission_targets(opts, roots.home), *extra))
    return _verdict_finding(verdict, CHMOD_PROTECTED, CHMOD_MAY_EXPAND, "chmod_recursive")


def _permission_targets(opts: Options, home: str) -> tuple[Word, ...]:
    """The files of `chmod MODE FILE...` / `chown OWNER FILE...`: the first operand is no file.

    With `--reference=RFILE`, or a single operand (the mode given as a flag, `chmod -R -w DIR`),
    every operand is a file; a first operand that looks like a path is judged all the same.
    """
    operands = opts.operands
    if len(operands) < 2 or any(f.startswith("--ref") for f in opts.flags):
        return operands
    first = operands[0]
    looks_like_path = "/" in first.render(home, "") or any(p.kind == "home" for p in first.parts)
    return operands if looks_like_path else operands[1:]


def judge_disk(name: str, args: Sequence[Word], home: str) -> Finding | None:
    """Formatting, partitioning, `dd`, `shred`, `tee` and copies onto block devices."""
    texts = [w.render(home, "") for w in args]
    if name.startswith("mkfs") or name in _FORMATTERS or name in _PARTITIONERS:
        operands = Options.split(args, home).operands
        if any(w.render(home, "").startswith("/dev/") or w.starts_unknown for w in operands):
            return Finding(MKFS, "mkfs") if name not in _PARTITIONERS else Finding(PARTITION, "disk_wipe")
    if name == "dd" and any(
        t.startswith("of=") and _SLASH_RUN.sub("/", t[3:]).startswith("/dev/") for t in texts
    ):
        return Finding(DD, "dd_block_device")
    if name == "shred" and any(t.startswith("/dev/") for t in texts):
        return Finding(DISK_WRITE, "disk_write")
    if name == "tee" and any(_BLOCK_DEVICE.match(t) for t in texts):
        return Finding(DISK_WRITE, "disk_write")
    if name in ("cp", "mv", "install") and texts and _BLOCK_DEVICE.match(texts[-1]):
        return Finding(DISK_WRITE, "disk_write")
    return None


_SLASH_RUN = re.compile(r"/+")


def judge_redirects(redirects: Sequence[Redirect], home: str) -> Finding | None:
    for redirect in redirects:
        if redirect.op in _WRITE_REDIRECTS and _BLOCK_DEVICE.match(redirect.target.render(home, "")):
            return Finding(DISK_WRITE, "disk_write")
    return None


def judge_kill(name: str, args: Sequence[Word], home: str) -> Finding | None:
    texts = [w.render(home, "$?") for w in args]
    if name == "killall5":
        return Finding(KILL_ALL, "kill_all")
    if name == "kill":
        return _judge_kill_args(texts)
    if name in ("pkill", "killall"):
        return _judge_pkill_args(name, args, texts)
    return None


def _judge_kill_args(texts: list[str]) -> Finding | None:
    operands: list[str] = []
    signal: str | None = None
    ended = False
    i = 0
    while i < len(texts):
        text = texts[i]
        if not ended and text == "--":
            ended = True
        elif not ended and text in ("-s", "-n"):
            signal = texts[i + 1] if i + 1 < len(texts) else ""
            i += 1
        elif not ended and text in ("-l", "-L", "--list", "--table"):
            return None
        elif not ended and signal is None and text.startswith("-") and len(text) > 1:
            signal = text
        else:
            operands.append(text)
        i += 1
    # `kill -1` alone is read as "signal everything" by the original rule; keep that.
    if "-1" in operands or (not operands and signal == "-1"):
        return Finding(KILL_ALL, "kill_all")
    return None


def _judge_pkill_args(name: str, args: Sequence[Word], texts: list[str]) -> Finding | None:
    user_value: Word | None = None
    selected = False
    for i, text in enumerate(texts):
        for selector in _USER_SELECTORS:
            if text == selector:
                selected = True
                user_value = args[i + 1] if i + 1 < len(args) else None
            elif text.startswith(selector + ("=" if selector.startswith("--") else "")) and text != selector:
                selected = True
    if not selected:
        return None
    kill_signal = any(t.lstrip("-").removeprefix("signal=").upper() in _KILL_SIGNALS for t in texts)
    patterns = [
        t for t in texts if not t.startswith("-") and (user_value is None or t != user_value.render("", "$?"))
    ]
    unknown_user = user_value is None or user_value.has_unknown
    if kill_signal or unknown_user or not patterns:
        return Finding(KILL_ALL, "kill_all")
    return None


def judge_shutdown(name: str, args: Sequence[Word], home: str) -> Finding | None:
    texts = [w.render(home, "") for w in args]
    operands = [t for t in texts if not t.startswith("-")]
    if name in _SHUTDOWN_NAMES:
        return Finding(SHUTDOWN, "shutdown")
    if name == "systemctl" and any(t in _SYSTEMCTL_VERBS or t in _SHUTDOWN_UNITS for t in operands):
        return Finding(SHUTDOWN, "shutdown")
    if name in ("init", "telinit") and operands[:1] in (["0"], ["6"]):
        return Finding(SHUTDOWN, "shutdown")
    return None


def judge_sudo(options: Sequence[Option]) -> Finding | None:
    for option in options:
        long_name = option.name[2:] if option.name.startswith("--") else ""
        if option.name == "S" or (len(long_name) >= 2 and "stdin".startswith(long_name)):
            return Finding(SUDO_STDIN, "sudo_stdin")
    return None


def judge_fork_bomb(script: Script) -> Finding | None:
    """A function that calls itself at least twice, through a pipe or in the background."""
    calls: dict[str, list[Command]] = {}
    for command in script.commands:
        name = unwrap(command.words, _no_relex).name
        if name is not None and name in command.functions:
            calls.setdefault(name, []).append(command)
    for own in calls.values():
        if len(own) >= 2 and any(c.background or c.stage > 0 for c in own):
            return Finding(FORK_BOMB, "fork_bomb")
    return None


def substitute_braces(action: Sequence[Word], paths: Sequence[Word], home: str) -> list[Word]:
    """A `find -exec` command with `{}` replaced by each start path."""
    out: list[Word] = []
    for word in action:
        text = word.literal
        if text == "{}":
            out.extend(paths)
        elif text is not None and "{}" in text:
            out.extend(Word.of(text.replace("{}", p.render(home, ""))) for p in paths)
        else:
            out.append(word)
    return out


def _no_relex(text: str) -> tuple[Word, ...]:
    return ()


def _verdict_finding(verdict: Verdict, protected: str, may_expand: str, rule: str) -> Finding | None:
    if verdict is Verdict.PROTECTED:
        return Finding(protected, rule + "_protected_root")
    if verdict is Verdict.MAY_EXPAND:
        return Finding(may_expand, rule + "_may_expand")
    return None
