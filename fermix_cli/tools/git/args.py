"""The git tools' argument rules: pure functions, judged before git runs, failing closed.

An argument list is read the way git reads it (long options with `=` or a separate value, short
clusters such as `-aF x` or `-mFixed`), so each rule sees every spelling. Where this parser is not
sure an option takes a value, the next argument is judged as a positional, which is the stricter
reading; every argument that looks like a long option is checked against the denylist, values
included.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal

from ...core.errors import ToolError
from ...core.records import Record

READ_COMMANDS = ("status", "log", "diff", "branch", "show")
WRITE_COMMANDS = ("add", "commit", "checkout", "pull")

# Refused in every git tool when an argument's name (before `=`) is a prefix of one of these,
# which also covers git's own unambiguous abbreviations (`--upload-pac=x`, `--output-d=x`).
DENIED_LONG = (
    "--no-index",
    "--git-dir",
    "--work-tree",
    "--exec-path",
    "--output",
    "--output-directory",
    "--upload-pack",
    "--receive-pack",
    "--man-path",
    "--info-path",
)
# git_write: flags that make git read a file the caller chooses into the repository.
FILE_READING_LONG = ("--file", "--pathspec-from-file")
COMMIT_TEMPLATE_LONG = "--template"
# diff/log/show: re-enabling what the fixed command line switches off. These commands take no
# abbreviations, so the exact spellings are enough.
DIFF_REENABLE = frozenset({"--ext-diff", "--textconv"})
# `git branch` in git_read lists only.
BRANCH_MUTATING_LONG = (
    "--delete",
    "--move",
    "--copy",
    "--force",
    "--set-upstream",
    "--set-upstream-to",
    "--unset-upstream",
    "--edit-description",
    "--track",
    "--no-track",
    "--create-reflog",
    "--recurse-submodules",
)
BRANCH_MUTATING_SHORT = frozenset("dDmMcCfut")
BRANCH_MESSAGE = (
    "branch is listing-only in git_read: create/delete/rename/copy/force/retarget arguments and bare "
    "branch names are refused; pass flag values as --flag=value"
)
# Options that send git into submodules, whose own configs can run programs (the repository checks
# cover those configs too; these keep git out in the first place). `--ignore-submodules` is fine
# bare or `=all`; `--submodule` on diff, log and show is fine except `=diff`.
RECURSE_SUBMODULES_LONG = "--recurse-submodules"
IGNORE_SUBMODULES_LONG = "--ignore-submodules"
NO_IGNORE_SUBMODULES_LONG = "--no-ignore-submodules"
SUBMODULE_FORMAT_LONG = "--submodule"
PULL_STRATEGIES = frozenset({"ort", "recursive", "resolve", "octopus", "ours", "subtree"})
ALLOWED_SCHEMES = frozenset({"https", "ssh", "git", "git+ssh", "ssh+git"})


class Grammar(Record, frozen=True):
    """Which options of one subcommand take a value, as far as this parser is sure."""

    short_required: frozenset[str] = frozenset()  # `-X value` or `-Xvalue`
    short_optional: frozenset[str] = frozenset()  # only `-Xvalue`
    long_required: tuple[str, ...] = ()  # `--name value` or `--name=value`


_REV_LONG = (
    "--max-count",
    "--skip",
    "--since",
    "--after",
    "--until",
    "--before",
    "--author",
    "--committer",
    "--grep",
)

GRAMMARS: dict[str, Grammar] = {
    "status": Grammar(short_optional=frozenset("u")),
    "log": Grammar(short_required=frozenset("nO"), long_required=(*_REV_LONG, "--orderfile")),
    "show": Grammar(short_required=frozenset("nO"), long_required=(*_REV_LONG, "--orderfile")),
    "diff": Grammar(short_required=frozenset("O"), long_required=("--orderfile",)),
    "branch": Grammar(),
    "add": Grammar(long_required=("--chmod", "--pathspec-from-file")),
    "commit": Grammar(
        short_required=frozenset("mcCFt"),
        short_optional=frozenset("Su"),
        long_required=(
            "--message",
            "--file",
            "--template",
            "--reuse-message",
            "--reedit-message",
            "--fixup",
            "--squash",
            "--author",
            "--date",
            "--cleanup",
            "--trailer",
            "--pathspec-from-file",
        ),
    ),
    "checkout": Grammar(
        short_required=frozenset("bB"), long_required=("--orphan", "--conflict", "--pathspec-from-file")
    ),
    "pull": Grammar(
        short_required=frozenset("sXj"),
        long_required=(
            "--strategy",
            "--strategy-option",
            "--depth",
            "--deepen",
            "--shallow-since",
            "--shallow-exclude",
            "--upload-pack",
            "--jobs",
            "--negotiation-tip",
            "--server-option",
        ),
    ),
}


class Arg(Record, frozen=True):
    """One argument as git will read it."""

    kind: Literal["long", "short", "positional", "value", "separator"]
    text: str
    option: str = ""  # for a value: the option (long name or short letter) it belongs to


def tokenize(command: str, args: Sequence[str]) -> list[Arg]:
    """Classify each argument: option, the value of an option, positional, or the `--` separator."""
    grammar = GRAMMARS.get(command, Grammar())
    out: list[Arg] = []
    i = 0
    after_separator = False
    while i < len(args):
        a = args[i]
        i += 1
        if after_separator:
            out.append(Arg("positional", a))
        elif a == "--":
            out.append(Arg("separator", a))
            after_separator = True
        elif a.startswith("--"):
            out.append(Arg("long", a))
            name = a.split("=", 1)[0]
            full = _unique_match(name, grammar.long_required)
            if "=" not in a and full is not None and i < len(args):
                out.append(Arg("value", args[i], full))
                i += 1
        elif a.startswith("-") and len(a) > 1:
            out.append(Arg("short", a))
            for pos, letter in enumerate(a[1:], start=1):
                if letter in grammar.short_required:
                    if pos == len(a) - 1 and i < len(args):
                        out.append(Arg("value", args[i], letter))
                        i += 1
                    break
                if letter in grammar.short_optional:
                    break
        else:
            out.append(Arg("positional", a))
    return out


def _unique_match(name: str, options: Sequence[str]) -> str | None:
    """The one option `name` spells (exactly, or as an unambiguous prefix), else None."""
    if name in options:
        return name
    hits = [o for o in options if o.startswith(name)]
    return hits[0] if len(hits) == 1 and len(name) > 2 else None


def short_letters(arg: str, command: str) -> str:
    """The option letters of a short cluster, stopping where a value starts (`-mFixed` is `m`)."""
    grammar = GRAMMARS.get(command, Grammar())
    letters = ""
    for letter in arg[1:]:
        letters += letter
        if letter in grammar.short_required or letter in grammar.short_optional:
            break
    return letters


# ----- refusals --------------------------------------------------------------------------------


def denied(arg: str, message: str, rule: str) -> ToolError:
    return ToolError("denied_arg", message, {"arg": arg, "rule": rule})


def check_command(tool: Literal["git_read", "git_write"], command: str) -> None:
    """`push_deferred` for push, `unknown_command` for anything the tool does not run."""
    allowed = READ_COMMANDS if tool == "git_read" else WRITE_COMMANDS
    if command in allowed:
        return
    if command == "push":
        raise ToolError("push_deferred", "this tool cannot push.", {"command": command})
    raise ToolError(
        "unknown_command",
        f"{command} (this tool runs: {', '.join(allowed)})",
        {"command": command, "allowed": list(allowed)},
    )


def check_args(tool: Literal["git_read", "git_write"], command: str, args: Sequence[str]) -> list[Arg]:
    """Raise `denied_arg` for the first argument a rule refuses; return the classified arguments."""
    for a in args:
        if "\x00" in a:
            raise denied(a.replace("\x00", "\\0"), "git arguments must not contain NUL bytes", "nul_byte")
    tokens = tokenize(command, args)
    for t in tokens:
        if t.text.startswith("--") and t.text != "--":
            name = t.text.split("=", 1)[0]
            if any(d.startswith(name) for d in DENIED_LONG):
                raise denied(
                    t.text, f'git arg "{t.text}" is rejected; it can escape sandbox containment', "denylist"
                )
    for t in tokens:
        if t.text.startswith("--") and t.text != "--" and command != "branch":  # branch: listing only
            _check_submodule_option(command, t.text)
    for t in tokens:
        if t.kind == "positional":
            _check_positional(t.text)
    if command in ("diff", "log", "show"):
        for t in tokens:
            # `-O FILE`/`--orderfile=FILE` make git read a file of the caller's choosing.
            if (
                t.kind == "long" and "--orderfile".startswith(t.text.split("=", 1)[0]) and len(t.text) > 4
            ) or (t.kind == "short" and "O" in short_letters(t.text, command)):
                raise denied(
                    t.text, f'git arg "{t.text}" makes git read a file of the caller\'s choosing', "orderfile"
                )
            if t.kind == "long" and t.text.split("=", 1)[0] in DIFF_REENABLE:
                raise denied(
                    t.text,
                    f'git arg "{t.text}" is rejected; external diff drivers and textconv stay off in git tools',
                    "diff_drivers",
                )
    if tool == "git_read" and command == "branch":
        _check_branch(tokens)
    if tool == "git_write":
        _check_file_reading(command, tokens)
        if command == "pull":
            _check_pull(tokens)
    return tokens


def _check_submodule_option(command: str, arg: str) -> None:
    """Refuse the spellings (git's abbreviations included) that make git look into submodules."""
    name, eq, value = arg.partition("=")
    if len(name) <= 2:
        return
    why = ""
    if RECURSE_SUBMODULES_LONG.startswith(name):
        why = "makes git recurse into submodules"
    elif NO_IGNORE_SUBMODULES_LONG.startswith(name) and len(name) > len("--no-i"):
        why = "makes git look into submodules"
    elif IGNORE_SUBMODULES_LONG.startswith(name) and eq and value != "all":
        why = "makes git look into submodules (only --ignore-submodules=all is accepted)"
    elif command in ("diff", "log", "show") and SUBMODULE_FORMAT_LONG.startswith(name) and value == "diff":
        why = "runs git diff inside each changed submodule"
    if why:
        raise denied(
            arg,
            f'git arg "{arg}" {why}; a submodule has a config of its own that can run programs, so git '
            "tools keep out of submodules",
            "submodules",
        )


def _check_positional(arg: str) -> None:
    if arg.startswith("/"):
        raise denied(
            arg, f'git arg "{arg}" is an absolute path; pass repo-relative paths only', "absolute_path"
        )
    if arg.startswith("~"):
        raise denied(arg, f'git arg "{arg}" starts with ~; pass repo-relative paths only', "home_path")
    if ".." in arg.split("/"):
        raise denied(arg, f'git arg "{arg}" resolves outside the repo via ..', "dotdot")


def _check_branch(tokens: Sequence[Arg]) -> None:
    for t in tokens:
        if t.kind == "long":
            name = t.text.split("=", 1)[0]
            if any(m.startswith(name) for m in BRANCH_MUTATING_LONG):
                raise ToolError("denied_arg", BRANCH_MESSAGE, {"rule": "branch_listing_only"})
        elif t.kind == "short":
            if BRANCH_MUTATING_SHORT & set(t.text[1:]):
                raise ToolError("denied_arg", BRANCH_MESSAGE, {"rule": "branch_listing_only"})
        elif t.kind in ("positional", "value", "separator"):
            raise ToolError("denied_arg", BRANCH_MESSAGE, {"rule": "branch_listing_only"})


def _file_reading_error(arg: str) -> ToolError:
    return denied(
        arg,
        f'git arg "{arg}" makes git read a file of the caller\'s choosing; '
        "pass the commit message inline with -m",
        "file_reading_flag",
    )


def _check_file_reading(command: str, tokens: Sequence[Arg]) -> None:
    for t in tokens:
        if t.text.startswith("--") and t.text != "--":
            name = t.text.split("=", 1)[0]
            if any(f.startswith(name) for f in FILE_READING_LONG):
                raise _file_reading_error(t.text)
            if command == "commit" and COMMIT_TEMPLATE_LONG.startswith(name):
                raise _file_reading_error(t.text)
        if command == "commit" and t.kind == "short":
            letters = short_letters(t.text, command)
            if "F" in letters or "t" in letters:
                raise _file_reading_error(t.text)


_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
_TRANSPORT = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)::")


def remote_host(url: str) -> tuple[str | None, str | None]:
    """(scheme or None, host part or None) of a git URL, scp-like `host:path` included."""
    m = _TRANSPORT.match(url)
    if m:
        return m.group(1).lower(), None
    m = _SCHEME.match(url)
    if m:
        rest = url[m.end() :]
        authority = rest.split("/", 1)[0]
        return m.group(1).lower(), authority.rsplit("@", 1)[-1] if authority else ""
    colon = url.find(":")
    slash = url.find("/")
    if colon > 0 and (slash < 0 or colon < slash):
        return "ssh", url[:colon].rsplit("@", 1)[-1]
    return None, None


def check_remote_url(url: str, arg_name: str = "") -> None:
    """Refuse transports other than https/ssh/git, and hosts or users that start with `-`."""
    scheme, host = remote_host(url)
    label = arg_name or url
    if scheme is not None and scheme not in ALLOWED_SCHEMES:
        raise denied(
            label,
            f'git arg "{label}" uses the {scheme} transport; git tools allow only https, ssh and git '
            "(GIT_ALLOW_PROTOCOL=https:ssh:git)",
            "protocol",
        )
    user = ""
    if scheme is not None and "://" in url:
        authority = url.split("://", 1)[1].split("/", 1)[0]
        user = authority.rsplit("@", 1)[0] if "@" in authority else ""
    elif scheme == "ssh" and "@" in url.split(":", 1)[0]:
        user = url.split(":", 1)[0].rsplit("@", 1)[0]
    if (host or "").startswith("-") or user.startswith("-") or (host or "").startswith("[-"):
        raise denied(label, f'git arg "{label}" names a host that starts with "-"', "dash_host")


def _check_pull(tokens: Sequence[Arg]) -> None:
    positionals = [t for t in tokens if t.kind == "positional"]
    if positionals:
        repository = positionals[0].text
        if repository.startswith("-"):
            raise denied(
                repository, f'git arg "{repository}" names a remote that starts with "-"', "dash_host"
            )
        check_remote_url(repository)
    for t in tokens:
        if t.kind == "value" and t.option in ("s", "--strategy"):
            _check_strategy(t.text)
        elif t.kind == "long" and "=" in t.text and _unique_match(t.text.split("=", 1)[0], ("--strategy",)):
            _check_strategy(t.text.split("=", 1)[1])
        elif t.kind == "short":
            letters = short_letters(t.text, "pull")
            glued = t.text[len(letters) + 1 :]
            if letters.endswith("s") and glued:
                _check_strategy(glued)


def _check_strategy(name: str) -> None:
    if name not in PULL_STRATEGIES:
        raise denied(
            name,
            f'git arg "{name}" is not a built-in merge strategy; a custom strategy runs a program '
            f"(allowed: {', '.join(sorted(PULL_STRATEGIES))})",
            "merge_strategy",
        )
