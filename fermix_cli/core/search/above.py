"""Ignore rules of the directories above a walk's root, restated relative to the root for rg.

rg reads the ignore files of the directories above the root of its walk, but matches their rules
with a `/` inside against the wrong path: walking `src/`, the repository top's `src/gen/*.py` hides
nothing, and walking `src/gen/`, it also hides `deep/x.py` (Git hides `src/gen/out.py` and only it,
wherever a command runs). And Perforce rule files (`.p4ignore`) are fermix's to apply, in the
directories above the root as below it. So rg reads no ignore file above the root
(`--no-ignore-parent`), and fermix gives it their rules restated relative to the root
(`src/gen/*.py` seen from `src/` is `/gen/*.py`) in an ignore file of its own (`--ignore-file`),
which weighs less than every ignore file inside the walk, as a directory above weighs less in Git.

The files read are rg's: `.gitignore` (within the repository the root lies in, or all of them outside
any repository, as fermix has it), `.ignore` and `.rgignore`, the repository's `.git/info/exclude`
and, from a directory below the repository's top, Git's global excludes file (rg reads that one
relative to where its walk starts: `--no-ignore-global` there), and the Perforce rule files. A rule without an inner `/` means the same below the root and is kept as
it is; one with a `/` is restated where its leading components match the root's path (a `**` may
take any part of it), and dropped where it is about another directory, the root or one above it.
"""

from __future__ import annotations

import os
import re
from typing import NamedTuple

from .globpat import component_regex
from .p4ignore import MAX_RULE_BYTES, P4Rules, read_bounded, translate_rules

GIT_RULE_FILES = (".gitignore", ".ignore", ".rgignore")


def git_top(path: str) -> str | None:
    """The nearest directory at or above `path` (canonical) that holds `.git`, as rg tells a repository
    (a directory, or the file of a linked work tree or submodule); None outside any repository."""
    while True:
        if os.path.exists(os.path.join(path, ".git")):
            return path
        parent = os.path.dirname(path)
        if parent == path:
            return None
        path = parent


def rules_above(root: str, p4: P4Rules | None, top: str | None) -> list[Rule]:
    """The rules of the ignore files above `root` (canonical), as gitignore lines relative to it, the
    shallower files first, each with the file and line it comes from. `top`: the repository `root`
    lies in (`git_top`), above which `.gitignore` files do not count, or None (then every `.gitignore`
    above counts, as fermix has it outside a repository)."""
    lines: list[Rule] = []
    above = _ancestors(root)
    if top is not None and top != root:
        # Git weighs the global excludes file least, then the repository's exclude file, then the
        # `.gitignore` files: first in the file, so least. Both are about paths below the top.
        below_top = root[len(top) :].strip("/")
        excludes = global_excludes_file()
        if excludes is not None:
            lines += _restated(excludes, below_top, git=True)
        lines += _restated(os.path.join(top, ".git", "info", "exclude"), below_top, git=True)
    for directory in above:
        rel = root[len(directory) :].strip("/")
        for name in GIT_RULE_FILES:
            if name == ".gitignore" and top is not None and not _at_or_below(directory, top):
                continue
            lines += _restated(os.path.join(directory, name), rel, git=True)
        for name in p4.ignore_names if p4 is not None else ():
            lines += _restated(os.path.join(directory, name), rel, git=False)
    return lines


def global_excludes_file() -> str | None:
    """Git's global excludes file, found as rg finds it: `core.excludesFile` in `$XDG_CONFIG_HOME/git/
    config` or `~/.gitconfig` (the latter wins), else `$XDG_CONFIG_HOME/git/ignore`
    (`~/.config/git/ignore`). None without a home."""
    home = os.environ.get("HOME")
    if not home:
        return None
    config_home = os.environ.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
    found = None
    for config in (os.path.join(config_home, "git", "config"), os.path.join(home, ".gitconfig")):
        value = _core_excludes(read_bounded(config, MAX_RULE_BYTES) or "")
        if value:
            found = os.path.join(home, value[2:]) if value.startswith("~/") else value
    return found or os.path.join(config_home, "git", "ignore")


def _core_excludes(text: str) -> str | None:
    """`excludesFile` of the `[core]` section of a Git config file's text (the last one), or None."""
    section, value = "", None
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].split(";", 1)[0].strip()
        if line.startswith("["):
            section = line.strip("[]").strip().lower()
        elif section == "core" and "=" in line:
            key, _, val = line.partition("=")
            if key.strip().lower() == "excludesfile":
                value = val.strip().strip('"')
    return value


def _ancestors(root: str) -> list[str]:
    """The directories above `root`, the filesystem's root first."""
    out: list[str] = []
    at = os.path.dirname(root)
    while True:
        out.append(at)
        parent = os.path.dirname(at)
        if parent == at:
            return out[::-1]
        at = parent


def _at_or_below(directory: str, top: str) -> bool:
    return directory == top or directory.startswith(top.rstrip("/") + "/")


class Rule(NamedTuple):
    text: str  # the gitignore line, relative to the root
    path: str  # the ignore file it comes from
    line: int  # its line there, 1-based


def _restated(path: str, rel: str, *, git: bool) -> list[Rule]:
    text = read_bounded(path, MAX_RULE_BYTES)
    if not text:
        return []
    out: list[Rule] = []
    for n, line in enumerate(text.splitlines() if git else translate_rules(text), 1):
        out += [Rule(r, path, n) for r in restate(line, rel)]
    return out


def restate(line: str, rel: str) -> list[str]:
    """One gitignore line of a file in a directory above the root, as the lines that say the same
    relative to the root (`rel`: the root's path below that directory): none when the rule is about
    another directory, the root itself or one above it."""
    rule = _without_trailing_spaces(line)
    if not rule or rule.startswith("#"):
        return []
    negated = rule.startswith("!")
    pattern = rule[1:] if negated else rule
    directory_only = pattern.endswith("/")
    body = pattern.rstrip("/")
    if "/" not in body:  # a name at any depth: the same below the root
        return [rule]
    sign, tail = ("!" if negated else ""), ("/" if directory_only else "")
    rests = _below(body.lstrip("/").split("/"), rel.split("/"))
    return [sign + "/" + "/".join(rest) + tail for rest in dict.fromkeys(tuple(r) for r in rests)]


def _without_trailing_spaces(line: str) -> str:
    """A gitignore line without its trailing spaces, except one escaped with a backslash (`a\\ `)."""
    rule = line.rstrip("\r\n").rstrip(" \t")
    backslashes = len(rule) - len(rule.rstrip("\\"))
    if backslashes % 2 and len(rule) < len(line.rstrip("\r\n")):  # the last one escapes a space
        rule += " "
    return rule


def _below(comps: list[str], names: list[str]) -> list[list[str]]:
    """What is left of the pattern `comps` once its leading components have matched the root's path
    `names` (every way a `**` can take part of it), at most `_MAX_RESTATED` ways."""
    if not names:
        return [comps] if comps else []
    if not comps:
        return []
    if comps[0] == "**":  # takes the root's next directory (and perhaps more), or none of it
        return (_below(comps, names[1:]) + _below(comps[1:], names))[:_MAX_RESTATED]
    return _below(comps[1:], names[1:]) if _component_matches(comps[0], names[0]) else []


_MAX_RESTATED = 16


def _component_matches(comp: str, name: str) -> bool:
    try:
        return re.fullmatch(component_regex(comp), name, re.DOTALL) is not None
    except (re.error, ValueError):
        return False
