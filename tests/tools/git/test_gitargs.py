"""The git argument rules, one row per spelling: what is refused, by which rule, and what passes."""

from __future__ import annotations

import pytest

from fermix_cli.core.errors import ToolError
from fermix_cli.tools.git.args import BRANCH_MESSAGE, check_args, check_command, remote_host, tokenize

# (tool, command, args, rule) — every row must be refused with `denied_arg` and that rule.
REFUSED = [
    # the shared prefix-aware denylist, every tool, every spelling
    ("git_read", "diff", ["--no-index", "a", "b"], "denylist"),
    ("git_read", "diff", ["--no-ind", "a", "b"], "denylist"),
    ("git_read", "diff", ["--no-i"], "denylist"),
    ("git_read", "diff", ["--no-"], "denylist"),
    ("git_read", "log", ["--git-dir=/tmp/x"], "denylist"),
    ("git_read", "log", ["--git-d", "/tmp/x"], "denylist"),
    ("git_read", "status", ["--work-tree=/"], "denylist"),
    ("git_read", "status", ["--work"], "denylist"),
    ("git_read", "log", ["--exec-path=/tmp"], "denylist"),
    ("git_read", "show", ["--output=/tmp/out"], "denylist"),
    ("git_read", "show", ["--out=x"], "denylist"),
    ("git_read", "show", ["--o", "x"], "denylist"),
    ("git_read", "log", ["--output-directory=x"], "denylist"),
    ("git_read", "log", ["--output-d=x"], "denylist"),
    ("git_write", "pull", ["--upload-pack=touch /tmp/m"], "denylist"),
    ("git_write", "pull", ["--upload-pac=x"], "denylist"),
    ("git_write", "pull", ["--upload-pack", "x"], "denylist"),
    ("git_write", "pull", ["--up", "x"], "denylist"),
    ("git_write", "pull", ["--receive-pack=x"], "denylist"),
    ("git_read", "log", ["--man-path"], "denylist"),
    ("git_read", "log", ["--info-path"], "denylist"),
    ("git_read", "log", ["--info"], "denylist"),
    ("git_write", "add", ["--", "--output"], "denylist"),
    ("git_write", "commit", ["-m", "--output=x"], "denylist"),
    # positional paths
    ("git_read", "diff", ["/etc/passwd"], "absolute_path"),
    ("git_read", "show", ["HEAD", "--", "/etc/passwd"], "absolute_path"),
    ("git_read", "log", ["~/notes"], "home_path"),
    ("git_read", "log", ["~"], "home_path"),
    ("git_read", "diff", ["../other"], "dotdot"),
    ("git_read", "diff", ["a/../../b"], "dotdot"),
    ("git_read", "diff", [".."], "dotdot"),
    ("git_read", "diff", ["--", "sub/.."], "dotdot"),
    ("git_write", "add", ["../outside.txt"], "dotdot"),
    ("git_write", "add", ["/tmp/outside.txt"], "absolute_path"),
    ("git_write", "checkout", ["--", "../x"], "dotdot"),
    # diff drivers stay off
    ("git_read", "diff", ["--ext-diff"], "diff_drivers"),
    ("git_read", "log", ["-p", "--textconv"], "diff_drivers"),
    ("git_read", "show", ["--textconv", "HEAD"], "diff_drivers"),
    # file-reading flags (git_write)
    ("git_write", "commit", ["-F", "/etc/passwd"], "file_reading_flag"),
    ("git_write", "commit", ["-F/etc/passwd"], "file_reading_flag"),
    ("git_write", "commit", ["-Fmsg.txt"], "file_reading_flag"),
    ("git_write", "commit", ["-aF", "x"], "file_reading_flag"),
    ("git_write", "commit", ["-qaF", "x"], "file_reading_flag"),
    ("git_write", "commit", ["--file=x"], "file_reading_flag"),
    ("git_write", "commit", ["--file", "x"], "file_reading_flag"),
    ("git_write", "commit", ["--fil=x"], "file_reading_flag"),
    ("git_write", "commit", ["--fi=x"], "file_reading_flag"),
    ("git_write", "commit", ["--f", "x"], "file_reading_flag"),
    ("git_write", "commit", ["--pathspec-from-file=x"], "file_reading_flag"),
    ("git_write", "commit", ["--pathspec-from=x"], "file_reading_flag"),
    ("git_write", "add", ["--pathspec-from-file=list.txt"], "file_reading_flag"),
    ("git_write", "add", ["--pathspec-from-file", "list.txt"], "file_reading_flag"),
    ("git_write", "checkout", ["--pathspec-from-f=list.txt"], "file_reading_flag"),
    ("git_write", "commit", ["-t", "tmpl.txt"], "file_reading_flag"),
    ("git_write", "commit", ["-at", "tmpl.txt"], "file_reading_flag"),
    ("git_write", "commit", ["--template=tmpl.txt"], "file_reading_flag"),
    ("git_write", "commit", ["--templ", "tmpl.txt"], "file_reading_flag"),
    ("git_write", "commit", ["-m", "ok", "--file", "x"], "file_reading_flag"),
    # pull: transports, hosts, strategies
    ("git_write", "pull", ["file:///tmp/bare.git"], "protocol"),
    ("git_write", "pull", ["FILE:///tmp/bare.git"], "protocol"),
    ("git_write", "pull", ["ext::sh -c touch% /tmp/m"], "protocol"),
    ("git_write", "pull", ["fd::3"], "protocol"),
    ("git_write", "pull", ["http://example.com/r.git"], "protocol"),
    ("git_write", "pull", ["ssh://-oProxyCommand=touch%20m/x"], "dash_host"),
    ("git_write", "pull", ["ssh://user@-oProxyCommand=x/r"], "dash_host"),
    ("git_write", "pull", ["ssh://-user@host/r"], "dash_host"),
    ("git_write", "pull", ["git@-oProxyCommand=x:repo"], "dash_host"),
    ("git_write", "pull", ["-"], "dash_host"),
    ("git_write", "pull", ["-s", "evil"], "merge_strategy"),
    ("git_write", "pull", ["-sevil"], "merge_strategy"),
    ("git_write", "pull", ["--strategy=evil"], "merge_strategy"),
    ("git_write", "pull", ["--strategy", "evil"], "merge_strategy"),
    ("git_write", "pull", ["--strat=evil"], "merge_strategy"),
    # submodules: git keeps out of them
    ("git_write", "checkout", ["--recurse-submodules", "main"], "submodules"),
    ("git_write", "checkout", ["--recurse-submodules=yes"], "submodules"),
    ("git_write", "checkout", ["--recurse-s", "main"], "submodules"),
    ("git_write", "checkout", ["--recu"], "submodules"),
    ("git_write", "pull", ["--recurse-submodules=on-demand"], "submodules"),
    ("git_write", "pull", ["--recurse-submodules"], "submodules"),
    ("git_read", "status", ["--ignore-submodules=none"], "submodules"),
    ("git_read", "status", ["--ignore-submodules=untracked"], "submodules"),
    ("git_read", "status", ["--ignore-submodules=dirty"], "submodules"),
    ("git_read", "status", ["--ignore-submodules=ALL"], "submodules"),
    ("git_read", "status", ["--ignore-sub=none"], "submodules"),
    ("git_read", "status", ["--ignore-=none"], "submodules"),
    ("git_read", "status", ["--no-ignore-submodules"], "submodules"),
    ("git_read", "status", ["--no-ignore-s"], "submodules"),
    ("git_read", "status", ["--no-ig"], "submodules"),
    ("git_read", "diff", ["--ignore-submodules=none"], "submodules"),
    ("git_read", "log", ["-p", "--ignore-submodules=untracked"], "submodules"),
    ("git_read", "diff", ["--submodule=diff"], "submodules"),
    ("git_read", "log", ["-p", "--submodule=diff"], "submodules"),
    ("git_read", "show", ["--submod=diff"], "submodules"),
]

BRANCH_REFUSED = [
    ["new-branch"],
    ["-d", "old"],
    ["-D", "old"],
    ["-qD", "old"],
    ["-aD"],
    ["-m", "a", "b"],
    ["-M", "b"],
    ["-c", "a", "b"],
    ["-C", "b"],
    ["-f", "x"],
    ["-uorigin/main"],
    ["-u", "origin/main"],
    ["-t"],
    ["--delete", "x"],
    ["--delete=x"],
    ["--dele=x"],
    ["--del"],
    ["--move"],
    ["--mo=x"],
    ["--copy=x"],
    ["--force"],
    ["--forc"],
    ["--set-upstream-to=origin/main"],
    ["--set-upstream"],
    ["--set-up=origin/main"],
    ["--unset-upstream"],
    ["--edit-description"],
    ["--edit"],
    ["--track"],
    ["--no-track"],
    ["--no-tr"],
    ["--create-reflog"],
    ["--recurse-submodules"],
    ["--contains", "HEAD"],  # a flag value as a separate argument is a bare operand
    ["--list", "feat*"],
    ["--"],
]

ACCEPTED = [
    ("git_read", "status", []),
    ("git_read", "status", ["--short", "--branch"]),
    ("git_read", "status", ["-uno"]),
    ("git_read", "status", ["--porcelain=v2"]),
    ("git_read", "log", ["--oneline", "-n", "5"]),
    ("git_read", "log", ["-n5", "--stat"]),
    ("git_read", "log", ["main..feature"]),
    ("git_read", "log", ["main...feature", "--", "src/app.py"]),
    ("git_read", "log", ["--author", "A/../B Person"]),  # a value, not a path
    ("git_read", "log", ["--grep=../x"]),
    ("git_read", "log", ["--name-only", "--no-merges", "--format=%H %s"]),
    ("git_read", "log", ["--max-count=3", "--graph", "--decorate"]),
    ("git_read", "log", ["HEAD~2"]),
    ("git_read", "diff", []),
    ("git_read", "diff", ["--cached", "--stat"]),
    ("git_read", "diff", ["--text", "--no-ext-diff"]),
    ("git_read", "diff", ["--name-status", "HEAD~1", "HEAD", "--", "src"]),
    ("git_read", "diff", ["--output-indicator-new=+"]),
    ("git_read", "diff", ["--word-diff", "--unified=1"]),
    ("git_read", "show", ["HEAD:src/app.py"]),
    ("git_read", "show", ["HEAD:../sibling"]),  # a tree path inside the repository, not a component
    ("git_read", "show", ["--oneline", "-s", "HEAD"]),
    ("git_read", "branch", []),
    ("git_read", "branch", ["-a", "-v"]),
    ("git_read", "branch", ["-vv", "-r"]),
    ("git_read", "branch", ["--list"]),
    ("git_read", "branch", ["--merged=main"]),
    ("git_read", "branch", ["--no-merged=main"]),
    ("git_read", "branch", ["--contains=HEAD"]),
    ("git_read", "branch", ["--points-at=HEAD", "--sort=-committerdate"]),
    ("git_read", "branch", ["--format=%(refname:short)", "--show-current"]),
    ("git_read", "branch", ["--no-color", "--column=never"]),
    ("git_write", "add", ["src/app.py", "README.md"]),
    ("git_write", "add", ["-A"]),
    ("git_write", "add", ["--", "-weird-name"]),
    ("git_write", "add", ["--chmod=+x", "run.sh"]),
    ("git_write", "add", ["--pathspec-file-nul"]),
    ("git_write", "commit", ["-m", "Fix the crash"]),
    ("git_write", "commit", ["-mFixed the crash"]),
    ("git_write", "commit", ["-am", "Fix"]),
    ("git_write", "commit", ["-amFix"]),
    ("git_write", "commit", ["-m", "see ../x and /etc"]),
    ("git_write", "commit", ["--message=Fix"]),
    ("git_write", "commit", ["--mess", "Fix"]),
    ("git_write", "commit", ["-m", "F", "--allow-empty"]),
    ("git_write", "commit", ["-C", "HEAD", "--reset-author"]),
    ("git_write", "commit", ["--fixup", "HEAD"]),
    ("git_write", "commit", ["--trailer", "Signed-off-by: A <a@b>", "-m", "x"]),
    ("git_write", "checkout", ["main"]),
    ("git_write", "checkout", ["-b", "feature"]),
    ("git_write", "checkout", ["-b", "feature", "origin/main"]),
    ("git_write", "checkout", ["-B", "feature"]),
    ("git_write", "checkout", ["--", "src/app.py"]),
    ("git_write", "checkout", ["--force", "main"]),
    ("git_write", "checkout", ["-"]),
    ("git_write", "pull", []),
    ("git_write", "pull", ["origin", "main"]),
    ("git_write", "pull", ["--ff-only"]),
    ("git_write", "pull", ["--rebase", "origin"]),
    ("git_write", "pull", ["https://example.com/r.git", "main"]),
    ("git_write", "pull", ["ssh://git@example.com/r.git"]),
    ("git_write", "pull", ["git://127.0.0.1:9418/r.git", "main:main"]),
    ("git_write", "pull", ["git@example.com:org/r.git"]),
    ("git_write", "pull", ["-s", "ours"]),
    ("git_write", "pull", ["--strategy=ort", "-X", "theirs"]),
    ("git_read", "status", ["--ignore-submodules"]),
    ("git_read", "status", ["--ignore-submodules=all"]),
    ("git_read", "status", ["--ignored"]),
    ("git_read", "status", ["--ignored=matching"]),
    ("git_read", "diff", ["--ignore-submodules=all", "--ignore-space-change"]),
    ("git_read", "diff", ["--ignore-matching-lines=^#"]),
    ("git_read", "log", ["-p", "--submodule=log"]),
    ("git_read", "diff", ["--submodule=short"]),
    ("git_read", "diff", ["--submodule"]),
    ("git_write", "checkout", ["--no-recurse-submodules", "main"]),
    ("git_write", "pull", ["--no-recurse-submodules"]),
]


@pytest.mark.parametrize(("tool", "command", "args", "rule"), REFUSED)
def test_refused(tool, command, args, rule) -> None:
    with pytest.raises(ToolError) as e:
        check_args(tool, command, args)
    assert e.value.code == "denied_arg"
    assert e.value.details["rule"] == rule, e.value.message


@pytest.mark.parametrize("args", BRANCH_REFUSED, ids=[" ".join(a) for a in BRANCH_REFUSED])
def test_branch_is_listing_only(args) -> None:
    with pytest.raises(ToolError) as e:
        check_args("git_read", "branch", args)
    assert e.value.code == "denied_arg"
    assert e.value.message == BRANCH_MESSAGE
    assert e.value.details == {"rule": "branch_listing_only"}  # the rule, not the argument


@pytest.mark.parametrize(("tool", "command", "args"), ACCEPTED)
def test_accepted(tool, command, args) -> None:
    check_args(tool, command, args)


def test_denylist_message_and_file_flag_hint() -> None:
    with pytest.raises(ToolError) as e:
        check_args("git_write", "pull", ["--upload-pac=x"])
    assert e.value.message == 'git arg "--upload-pac=x" is rejected; it can escape sandbox containment'
    with pytest.raises(ToolError) as e:
        check_args("git_write", "commit", ["-aF", "x"])
    assert "pass the commit message inline with -m" in e.value.message
    with pytest.raises(ToolError) as e:
        check_args("git_read", "diff", ["/etc/passwd"])
    assert e.value.message.endswith("is an absolute path; pass repo-relative paths only")
    with pytest.raises(ToolError) as e:
        check_args("git_read", "diff", ["../x"])
    assert e.value.message.endswith("resolves outside the repo via ..")


def test_nul_bytes_are_refused() -> None:
    with pytest.raises(ToolError) as e:
        check_args("git_read", "log", ["a\x00b"])
    assert e.value.details["rule"] == "nul_byte"


@pytest.mark.parametrize(
    ("tool", "command", "code"),
    [
        ("git_write", "push", "push_deferred"),
        ("git_read", "push", "push_deferred"),
        ("git_read", "commit", "unknown_command"),
        ("git_write", "branch", "unknown_command"),
        ("git_write", "merge", "unknown_command"),
        ("git_read", "config", "unknown_command"),
        ("git_read", "clone", "unknown_command"),
        ("git_write", "rebase", "unknown_command"),
        ("git_read", "-c", "unknown_command"),
        ("git_read", "--git-dir=/x", "unknown_command"),
    ],
)
def test_subcommands(tool, command, code) -> None:
    with pytest.raises(ToolError) as e:
        check_command(tool, command)
    assert e.value.code == code
    if code == "push_deferred":
        assert e.value.message == "this tool cannot push."


@pytest.mark.parametrize(
    ("tool", "command"),
    [("git_read", c) for c in ("status", "log", "diff", "branch", "show")]
    + [("git_write", c) for c in ("add", "commit", "checkout", "pull")],
)
def test_allowed_subcommands(tool, command) -> None:
    check_command(tool, command)


@pytest.mark.parametrize(
    ("args", "kinds"),
    [
        (["-mFixed"], ["short"]),
        (["-m", "x"], ["short", "value"]),
        (["-aF", "x"], ["short", "value"]),
        (["--message", "-F"], ["long", "value"]),
        (["--message=x", "path"], ["long", "positional"]),
        (["--", "-x"], ["separator", "positional"]),
        (["--unknown-flag", "next"], ["long", "positional"]),  # unsure: judged as positional (stricter)
    ],
)
def test_tokenize_commit(args, kinds) -> None:
    assert [t.kind for t in tokenize("commit", args)] == kinds


@pytest.mark.parametrize(
    ("url", "scheme", "host"),
    [
        ("https://github.com/a/b.git", "https", "github.com"),
        ("ssh://git@host:22/r", "ssh", "host:22"),
        ("git@github.com:a/b.git", "ssh", "github.com"),
        ("ext::sh -c x", "ext", None),
        ("origin", None, None),
        ("sub/dir", None, None),
    ],
)
def test_remote_host(url, scheme, host) -> None:
    assert remote_host(url) == (scheme, host)
