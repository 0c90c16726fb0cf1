"""git_read and git_write on real repositories: happy paths, refusals, and every hardening item.

A logging wrapper named `git` goes first on PATH, so each test can see which git processes fermix
started. Payloads in hostile repository configs would create a marker file if git ran them.
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import Env, needs_git
from tests.tools.git.gitworld import IDENTITY, ISOLATED, REAL_GIT, Git, payload, plain

pytestmark = needs_git

# ----- happy paths -----------------------------------------------------------------------------


def test_read_commands(world: Env, git: Git, repo: Path) -> None:
    (repo / "app.py").write_text("print('v2')\n")
    r = git.tool("git_read", {"command": "status", "args": ["--short"]})
    assert r.code == 0, r.stderr
    out = r.json()
    assert out["output"] == " M app.py\n" and out["repo"] == str(repo) and out["exit_code"] == 0
    diff = git.tool("git_read", {"command": "diff"}).json()["output"]
    assert "-print('v1')" in diff and "+print('v2')" in diff
    log = git.tool("git_read", {"command": "log", "args": ["--format=%s", "-n", "1"]}).json()["output"]
    assert log == "first\n"
    show = git.tool("git_read", {"command": "show", "args": ["HEAD:app.py"]}).json()["output"]
    assert show == "print('v1')\n"
    branch = git.tool("git_read", {"command": "branch", "args": ["--format=%(refname:short)"]}).json()
    assert branch["output"] == "main\n"
    assert git.run("tool", "git_read", "--command", "log", "--args", "--oneline", "--text").stdout.endswith(
        "first\n"
    )


def test_write_commands(world: Env, git: Git, repo: Path) -> None:
    (repo / "new.txt").write_text("hello\n")
    assert git.tool("git_write", {"command": "add", "args": ["new.txt"]}).code == 0
    r = git.tool("git_write", {"command": "commit", "args": ["-mFixed the crash"]})
    assert r.code == 0, r.stderr
    assert (
        plain(repo, "log", "-1", "--format=%s|%an|%ae") == "Fixed the crash|Fermix Test|fermix@example.com\n"
    )
    r = git.tool("git_write", {"command": "checkout", "args": ["-b", "feature"]})
    assert r.code == 0, r.stderr
    assert plain(repo, "branch", "--show-current") == "feature\n"
    (repo / "app.py").write_text("changed\n")
    assert git.tool("git_write", {"command": "checkout", "args": ["--", "app.py"]}).code == 0
    assert (repo / "app.py").read_text() == "print('v1')\n"
    assert git.tool("git_write", {"command": "checkout", "args": ["main"]}).code == 0
    assert plain(repo, "branch", "--show-current") == "main\n"


def test_git_failure_is_git_failed(git: Git, repo: Path) -> None:
    r = git.tool("git_write", {"command": "checkout", "args": ["no-such-branch"]})
    assert r.code == 1
    err = r.error()
    assert err["code"] == "git_failed" and err["message"].startswith("git checkout failed (exit 1):\n")


def test_fixed_command_line_and_environment(world: Env, git: Git, repo: Path) -> None:
    (repo / "app.py").write_text("print('v2')\n")
    assert git.tool("git_read", {"command": "diff"}).code == 0
    line = git.log.read_text().splitlines()[-1].replace("\t", " ")
    for part in (
        "--no-pager",
        "-c core.fsmonitor=false",
        "-c core.hooksPath=/dev/null",
        "-c protocol.ext.allow=never",
        "-c protocol.file.allow=never",
        "diff --no-ext-diff --no-textconv",
    ):
        assert part in line, line
    env_line = git.envlog.read_text().splitlines()[-1].split()
    names = {e.split("=", 1)[0] for e in env_line}
    assert names == {
        "GIT_ALLOW_PROTOCOL",
        "GIT_CONFIG_GLOBAL",
        "GIT_CONFIG_NOSYSTEM",
        "GIT_OPTIONAL_LOCKS",
        "GIT_PAGER",
        "GIT_TERMINAL_PROMPT",
    }
    assert "GIT_ALLOW_PROTOCOL=https:ssh:git" in env_line and "GIT_CONFIG_GLOBAL=/dev/null" in env_line


# ----- refused before git runs -----------------------------------------------------------------


def test_subcommands_refused_before_git_runs(git: Git, repo: Path) -> None:
    r = git.tool("git_write", {"command": "push", "args": ["origin", "main"]})
    assert r.code == 3 and r.error() == {
        "code": "push_deferred",
        "message": "this tool cannot push.",
        "details": {"command": "push"},
    }
    for tool, command in (("git_write", "rebase"), ("git_read", "config"), ("git_write", "branch")):
        r = git.tool(tool, {"command": command})
        assert r.code == 2 and r.error()["code"] == "unknown_command"
    assert git.subcommands() == []


def test_denied_arguments_start_no_git_and_change_nothing(world: Env, git: Git, repo: Path) -> None:
    secret = world.root / "secret.txt"
    secret.write_text("TOP-SECRET-CONTENT\n")
    plain(repo, "branch", "old")
    marker = world.root / "upload-pack-ran"
    head = plain(repo, "rev-parse", "HEAD")
    reads = [
        {"command": "diff", "args": ["--no-index", str(secret), "app.py"]},
        {"command": "diff", "args": ["--no-ind", "a", "b"]},
        {"command": "log", "args": [f"--output={world.root}/out.txt"]},
        {"command": "show", "args": ["--out", f"{world.root}/out.txt"]},
        {"command": "diff", "args": [str(secret)]},
        {"command": "diff", "args": ["../secret.txt"]},
        {"command": "log", "args": ["~/x"]},
        {"command": "branch", "args": ["-qD", "old"]},
        {"command": "branch", "args": ["--dele=old"]},
        {"command": "branch", "args": ["evil"]},
        {"command": "log", "args": ["-p", "--textconv"]},
    ]
    writes = [
        {"command": "pull", "args": [f"--upload-pack=touch {marker}", "origin"]},
        {"command": "pull", "args": ["--upload-pac", f"touch {marker}"]},
        {"command": "commit", "args": ["-F", str(secret)]},
        {"command": "commit", "args": [f"-F{secret}"]},
        {"command": "commit", "args": ["-aF", str(secret)]},
        {"command": "commit", "args": [f"--file={secret}"]},
        {"command": "commit", "args": [f"--fil={secret}"]},
        {"command": "commit", "args": ["-t", str(secret)]},
        {"command": "add", "args": [f"--pathspec-from-file={secret}"]},
        {"command": "add", "args": ["../secret.txt"]},
        {"command": "pull", "args": [f"file://{world.root}/bare.git"]},
        {"command": "pull", "args": [f"{world.root}/bare.git"]},
        {"command": "pull", "args": ["ssh://-oProxyCommand=touch%20m/x"]},
        {"command": "pull", "args": ["-s", "evil"]},
    ]
    for name, rows in (("git_read", reads), ("git_write", writes)):
        r = git.run("tool", name, "--jsonl", input="".join(json.dumps(x) + "\n" for x in rows))
        envelopes = [json.loads(x) for x in r.stdout.splitlines()]
        assert len(envelopes) == len(rows)
        for row, env in zip(rows, envelopes, strict=True):
            assert env["ok"] is False and env["error"]["code"] == "denied_arg", (row, env)
        assert r.code == 3
    assert git.subcommands() == []
    assert not marker.exists() and not (world.root / "out.txt").exists()
    assert plain(repo, "rev-parse", "HEAD") == head
    assert "old" in plain(repo, "branch", "--format=%(refname:short)").split()
    assert "evil" not in plain(repo, "branch", "--format=%(refname:short)").split()
    assert "TOP-SECRET" not in plain(repo, "log", "--format=%B")


def test_branch_listing_flags_work(git: Git, repo: Path) -> None:
    plain(repo, "branch", "merged-one")
    r = git.tool("git_read", {"command": "branch", "args": ["--merged=main", "--format=%(refname:short)"]})
    assert r.code == 0 and r.json()["output"].split() == ["main", "merged-one"]
    r = git.tool("git_read", {"command": "branch", "args": ["--contains", "HEAD"]})
    assert r.code == 3 and "pass flag values as --flag=value" in r.error()["message"]


def test_commit_message_starting_with_f_is_a_value(git: Git, repo: Path) -> None:
    (repo / "app.py").write_text("v3\n")
    r = git.tool("git_write", {"command": "commit", "args": ["-amFixed"]})
    assert r.code == 0, r.stderr
    assert plain(repo, "log", "-1", "--format=%s") == "Fixed\n"


# ----- repository checks -----------------------------------------------------------------------


def test_not_a_work_tree(world: Env, git: Git) -> None:
    (world.project / "a.txt").write_text("a\n")
    (world.project / "b.txt").write_text("b\n")
    r = git.tool("git_read", {"command": "diff", "args": ["a.txt", "b.txt"]})
    assert r.code == 1
    err = r.error()
    assert err["code"] == "invalid_repo" and err["message"].startswith(
        f"not a git work tree: {world.project}"
    )
    assert git.subcommands() == ["rev-parse"]


def test_git_dir_and_bare_repos_are_not_work_trees(world: Env, git: Git, repo: Path) -> None:
    plain(repo, "init", "-q", "--bare", "bare.git")
    for target in (".git", "bare.git", ".git/refs"):
        r = git.tool("git_read", {"command": "log", "repo": target})
        assert r.code == 1 and r.error()["code"] == "invalid_repo", target
    assert set(git.subcommands()) == {"rev-parse"}


def test_repo_found_above_the_roots_is_refused(world: Env, git: Git) -> None:
    """A repository at the OS home (dotfiles) is found from inside the project: its top level is outside."""
    plain(world.home, "init", "-q")
    r = git.tool("git_read", {"command": "status"})
    assert r.code == 3 and r.error()["code"] == "outside_root"
    assert "repo root outside roots" in r.error()["message"]
    assert git.subcommands() == ["rev-parse"]


def test_missing_repo_dir(git: Git, repo: Path) -> None:
    r = git.tool("git_read", {"command": "status", "repo": "nope"})
    assert r.code == 1 and r.error()["code"] == "invalid_repo"
    assert r.error()["message"].startswith("repo does not exist: ")
    assert git.subcommands() == []


def test_git_file_pointing_outside_the_roots(world: Env, git: Git) -> None:
    outside = world.root / "elsewhere"
    outside.mkdir()
    plain(world.project, "init", "-q", "-b", "main", f"--separate-git-dir={outside / 'real.git'}")
    assert (world.project / ".git").is_file()
    _script, marker = payload(world)
    for tool, command in (("git_read", "status"), ("git_write", "add")):
        r = git.tool(tool, {"command": command, "args": ["."] if command == "add" else []})
        assert r.code == 3, r.stderr
        err = r.error()
        assert err["code"] == "outside_root" and "a .git file can point anywhere" in err["message"]
    assert set(git.subcommands()) == {"rev-parse"}
    assert not marker.exists()


def test_git_write_needs_the_top_level_in_a_write_root(world: Env, git: Git) -> None:
    outer = world.root / "outer"
    (outer / "sub").mkdir(parents=True)
    plain(outer, "init", "-q", "-b", "main")
    (outer / "sub" / "f.txt").write_text("x\n")
    world.fermix_home.mkdir(parents=True, exist_ok=True)
    (world.fermix_home / "config.toml").write_text(
        f'[sandbox]\nallowed_roots = ["{outer / "sub"}"]\n' + IDENTITY
    )
    r = git.tool("git_write", {"command": "add", "repo": str(outer / "sub"), "args": ["f.txt"]})
    assert r.code == 3
    err = r.error()
    assert err["code"] == "outside_root"
    assert err["message"].startswith(
        f"Sandbox denied git_write repo root outside roots: {outer} (resolved from input"
    )
    r = git.tool("git_read", {"command": "log", "repo": str(outer / "sub")})
    assert r.code == 3 and "git_read repo root outside roots" in r.error()["message"]
    assert set(git.subcommands()) == {"rev-parse"}
    assert plain(outer, "status", "--short") == "?? sub/\n"


# ----- repository configs that run programs ----------------------------------------------------

# (config entries, .gitattributes, tool, command, args); each value's "@P" becomes the payload path.
HOSTILE = [
    ([("core.fsmonitor", "@P")], "", "git_read", "status", []),
    ([("core.hooksPath", "@H")], "", "git_write", "commit", ["--allow-empty", "-m", "x"]),
    ([("core.sshCommand", "@P")], "", "git_write", "pull", ["ssh://example.invalid/r.git"]),
    ([("filter.x.clean", "@P")], "* filter=x\n", "git_write", "add", ["app.py"]),
    ([("filter.x.smudge", "@P")], "* filter=x\n", "git_write", "checkout", ["--", "app.py"]),
    ([("filter.x.process", "@P")], "* filter=x\n", "git_write", "add", ["app.py"]),
    ([("filter.x.required", "true")], "", "git_read", "status", []),
    ([("diff.x.textconv", "@P")], "*.py diff=x\n", "git_read", "log", ["-p"]),
    ([("diff.x.textconv", "@P")], "*.py diff=x\n", "git_read", "show", ["HEAD"]),
    ([("diff.x.command", "@P")], "*.py diff=x\n", "git_read", "diff", []),
    ([("diff.external", "@P")], "", "git_read", "diff", []),
    ([("merge.x.driver", "@P %A %B")], "* merge=x\n", "git_write", "pull", []),
    ([("core.pager", "@P")], "", "git_read", "log", []),
    ([("pager.log", "@P")], "", "git_read", "log", []),
    ([("core.editor", "@P")], "", "git_write", "commit", ["--allow-empty", "-m", "x"]),
    ([("sequence.editor", "@P")], "", "git_write", "pull", ["--rebase"]),
    ([("credential.helper", "!@P")], "", "git_write", "pull", []),
    ([("credential.https://example.com.helper", "@P")], "", "git_write", "pull", []),
    ([("gpg.program", "@P")], "", "git_write", "commit", ["-S", "-m", "x"]),
    (
        [("commit.gpgSign", "true"), ("gpg.format", "ssh"), ("gpg.ssh.defaultKeyCommand", "@P")],
        "",
        "git_write",
        "commit",
        ["--allow-empty", "-m", "x"],
    ),
    ([("interactive.diffFilter", "@P")], "", "git_write", "add", ["-p"]),
    (
        [("trailer.x.command", "@P")],
        "",
        "git_write",
        "commit",
        ["--allow-empty", "--trailer", "x=y", "-m", "x"],
    ),
    ([("submodule.x.update", "!@P")], "", "git_write", "pull", []),
    ([("remote.origin.uploadpack", "@P")], "", "git_write", "pull", ["origin"]),
    ([("remote.origin.receivepack", "@P")], "", "git_read", "status", []),
    ([("core.alternateRefsCommand", "@P")], "", "git_read", "status", []),
    ([("core.gitProxy", "@P")], "", "git_write", "pull", []),
    ([("include.path", "@I")], "", "git_read", "status", []),
    ([("includeIf.gitdir:/.path", "@I")], "", "git_read", "status", []),
    ([("diff.submodule", "diff")], "", "git_read", "log", ["-p"]),
    ([("remote.evil.url", "ssh://-oProxyCommand=@P/x")], "", "git_read", "status", []),
    ([("url.ssh://-oProxyCommand=x/.insteadOf", "https://example.com/")], "", "git_read", "status", []),
]


@pytest.mark.parametrize(
    ("entries", "attributes", "tool", "command", "args"),
    HOSTILE,
    ids=[f"{e[0][0]}-{c}" for e, _a, _t, c, _x in HOSTILE],
)
def test_repository_config_that_runs_programs_is_refused(
    world: Env, git: Git, repo: Path, entries, attributes, tool, command, args
) -> None:
    script, marker = payload(world)
    hooks = world.root / "hooks"
    hooks.mkdir()
    (hooks / "pre-commit").write_text(f"#!/bin/sh\ntouch '{marker}'\n")
    (hooks / "pre-commit").chmod(0o755)
    included = world.root / "included.cfg"
    included.write_text(f"[core]\n\tfsmonitor = {script}\n")
    if attributes:
        (repo / ".gitattributes").write_text(attributes)
    for key, value in entries:
        value = value.replace("@P", str(script)).replace("@H", str(hooks)).replace("@I", str(included))
        plain(repo, "config", key, value)
    head = plain(repo, "rev-parse", "HEAD")
    r = git.tool(tool, {"command": command, "args": args})
    assert r.code == 1, r.stderr
    err = r.error()
    assert err["code"] == "invalid_repo"
    assert "git tools refuse this repository" in err["message"]
    assert command not in git.subcommands(), git.subcommands()
    assert set(git.subcommands()) <= {"rev-parse", "config"}
    assert not marker.exists()
    assert plain(repo, "rev-parse", "HEAD") == head


@pytest.mark.parametrize(
    ("entries", "attributes", "args", "command"),
    [
        ([("core.fsmonitor", "@P")], "", ["status"], "status"),
        ([("filter.x.clean", "@P")], "* filter=x\n", ["add", "app.py"], "add"),
        ([("diff.x.textconv", "@P")], "*.py diff=x\n", ["log", "-p"], "log"),
        ([("diff.external", "@P")], "", ["diff"], "diff"),
        ([("remote.origin.uploadpack", "@P")], "", ["pull", "origin"], "pull"),
    ],
)
def test_the_payloads_do_run_under_plain_git(
    world: Env, repo: Path, entries, attributes, args, command
) -> None:
    """The control for the table above: the same configs make plain git run the payload."""
    script, marker = payload(world, then="exit 1" if command == "pull" else "cat")
    if attributes:
        (repo / ".gitattributes").write_text(attributes)
    plain(repo, "config", "remote.origin.url", str(repo))
    for key, value in entries:
        plain(repo, "config", key, value.replace("@P", str(script)))
    (repo / "app.py").write_text("print('v2')\n")
    plain(repo, *args, check=False)
    assert marker.exists()


def test_fsmonitor_false_is_fine(git: Git, repo: Path) -> None:
    plain(repo, "config", "core.fsmonitor", "false")
    assert git.tool("git_read", {"command": "status"}).code == 0


def test_hooks_are_off_unless_allowed(world: Env, git: Git, repo: Path) -> None:
    _script, marker = payload(world)
    hook = repo / ".git" / "hooks" / "pre-commit"
    hook.write_text(f"#!/bin/sh\ntouch '{marker}'\n")
    hook.chmod(0o755)
    r = git.tool("git_write", {"command": "commit", "args": ["--allow-empty", "-m", "no hooks"]})
    assert r.code == 0, r.stderr
    assert not marker.exists()
    (world.fermix_home / "config.toml").write_text(IDENTITY + "allow_hooks = true\n")
    r = git.tool("git_write", {"command": "commit", "args": ["--allow-empty", "-m", "hooks on"]})
    assert r.code == 0, r.stderr
    assert marker.exists()


def test_git_environment_is_scrubbed(world: Env, git: Git, repo: Path) -> None:
    script, marker = payload(world)
    other = world.root / "other"
    other.mkdir()
    plain(other, "init", "-q")
    (repo / "app.py").write_text("print('v2')\n")
    hostile = {
        "GIT_DIR": str(other / ".git"),
        "GIT_WORK_TREE": str(other),
        "GIT_INDEX_FILE": str(world.root / "index"),
        "GIT_CONFIG_PARAMETERS": f"'core.fsmonitor'='{script}' 'diff.external'='{script}'",
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": "core.pager",
        "GIT_CONFIG_VALUE_0": str(script),
        "GIT_EXTERNAL_DIFF": str(script),
        "GIT_PAGER": str(script),
        "GIT_SSH_COMMAND": str(script),
        "GIT_EXEC_PATH": str(world.root),
        "GIT_ASKPASS": str(script),
        "GIT_EDITOR": str(script),
    }
    r = git.tool("git_read", {"command": "diff"}, env=hostile)
    assert r.code == 0, r.stderr
    assert "+print('v2')" in r.json()["output"]
    r = git.tool("git_write", {"command": "commit", "args": ["-am", "scrubbed"]}, env=hostile)
    assert r.code == 0, r.stderr
    assert plain(repo, "log", "-1", "--format=%s") == "scrubbed\n"
    assert not marker.exists() and not (world.root / "index").exists()
    for line in git.envlog.read_text().splitlines():
        assert (
            "GIT_DIR" not in line and "GIT_CONFIG_PARAMETERS" not in line and "GIT_EXTERNAL_DIFF" not in line
        )


def test_global_config_is_ignored_except_the_identity(world: Env, git: Git, repo: Path) -> None:
    script, marker = payload(world)
    (world.fermix_home / "config.toml").write_text("")
    (world.home / ".gitconfig").write_text(
        f"[user]\n\tname = Global Person\n\temail = global@example.com\n[core]\n\tfsmonitor = {script}\n"
        f"[diff]\n\texternal = {script}\n"
    )
    (repo / "app.py").write_text("v2\n")
    r = git.tool("git_write", {"command": "commit", "args": ["-am", "from global identity"]})
    assert r.code == 0, r.stderr
    assert plain(repo, "log", "-1", "--format=%an <%ae>") == "Global Person <global@example.com>\n"
    assert git.tool("git_read", {"command": "diff", "args": ["HEAD~1"]}).code == 0
    assert not marker.exists()


# ----- pull ------------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def git_daemon(world: Env) -> Iterator[tuple[Path, int]]:
    """`git daemon` serving a directory over git:// on 127.0.0.1 (an allowed protocol, offline)."""
    base = world.root / "served"
    base.mkdir()
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")} | ISOLATED
    proc = subprocess.Popen(
        [
            REAL_GIT,
            "daemon",
            "--reuseaddr",
            "--export-all",
            f"--base-path={base}",
            "--listen=127.0.0.1",
            f"--port={port}",
            str(base),
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    pytest.fail("git daemon did not start")
                time.sleep(0.05)
        yield base, port
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(10)


def test_pull_over_the_git_protocol(world: Env, git: Git, repo: Path, git_daemon) -> None:
    base, port = git_daemon
    bare = base / "r.git"
    plain(world.root, "init", "-q", "--bare", "-b", "main", str(bare))
    plain(repo, "push", "-q", str(bare), "main")
    plain(repo, "remote", "add", "origin", f"git://127.0.0.1:{port}/r.git")
    other = world.root / "other-clone"
    plain(world.root, "clone", "-q", str(bare), str(other))
    (other / "app.py").write_text("print('from upstream')\n")
    plain(other, "commit", "-q", "-am", "upstream change")
    plain(other, "push", "-q", "origin", "main")
    r = git.tool("git_write", {"command": "pull", "args": ["--ff-only", "origin", "main"]})
    assert r.code == 0, r.stderr
    assert plain(repo, "log", "-1", "--format=%s") == "upstream change\n"
    assert (repo / "app.py").read_text() == "print('from upstream')\n"
    assert "pull" in git.subcommands()


def test_file_transport_is_refused(world: Env, git: Git, repo: Path) -> None:
    bare = world.root / "bare.git"
    plain(world.root, "init", "-q", "--bare", str(bare))
    plain(repo, "push", "-q", str(bare), "main")
    r = git.tool("git_write", {"command": "pull", "args": [f"file://{bare}", "main"]})
    assert r.code == 3 and r.error()["details"]["rule"] == "protocol"
    r = git.tool("git_write", {"command": "pull", "args": [str(bare), "main"]})
    assert r.code == 3 and r.error()["details"]["rule"] == "absolute_path"
    assert git.subcommands() == []
    # A configured remote that is a local path reaches git, which refuses the file transport itself.
    plain(repo, "remote", "add", "local", str(bare))
    r = git.tool("git_write", {"command": "pull", "args": ["local", "main"]})
    assert r.code == 1
    err = r.error()
    assert err["code"] == "git_failed" and "transport 'file' not allowed" in err["message"]


# ----- limits ----------------------------------------------------------------------------------


def test_git_timeout(world: Env, repo: Path, monkeypatch: pytest.MonkeyPatch, invoke) -> None:
    from fermix_cli.core.errors import ToolError
    from fermix_cli.tools.git import run as gitrun

    wrap = world.root / "slowgit"
    wrap.mkdir()
    (wrap / "git").write_text(
        f'#!/bin/sh\ncase "$*" in *" status"*) sleep 20;; esac\nexec "{REAL_GIT}" "$@"\n'
    )
    (wrap / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{wrap}:{os.environ['PATH']}")
    monkeypatch.setattr(gitrun, "GIT_TIMEOUT_S", 0.5)
    t0 = time.monotonic()
    with pytest.raises(ToolError) as e:
        invoke("git_read", {"command": "status"})
    assert e.value.code == "timeout" and e.value.message == "git status timed out after 0.5s"
    assert time.monotonic() - t0 < 10


def test_git_read_is_owner_only(world: Env, git: Git, repo: Path) -> None:
    r = git.run("--trust", "guest", "tool", "git_read", "--json", '{"command":"status"}')
    assert r.code == 3 and r.error()["code"] == "policy_denied"
    assert git.subcommands() == []


def test_objects_borrowed_from_outside_the_roots_are_refused(world: Env, git: Git, repo: Path) -> None:
    """An `objects/info/alternates` entry lets git read another repository's objects: one outside the
    roots is refused like a git dir outside them."""
    outside = world.root / "outside-secret"
    outside.mkdir()
    plain(outside, "init", "-q", "-b", "main")
    (outside / "s.txt").write_text("TOPSECRET\n")
    plain(outside, "add", ".")
    plain(outside, "commit", "-q", "-m", "s")
    blob = plain(outside, "rev-parse", "HEAD:s.txt").strip()
    (repo / ".git" / "objects" / "info" / "alternates").write_text(f"{outside / '.git' / 'objects'}\n")
    r = git.tool("git_read", {"command": "show", "args": [blob]})
    assert r.code != 0 and "TOPSECRET" not in r.stdout
    assert r.error()["code"] == "outside_root" and "object store" in r.error()["message"]


@pytest.mark.parametrize("args", [["-O/etc/hostname", "--stat"], ["--orderfile=/etc/hostname"], ["-pO", "x"]])
def test_an_orderfile_is_refused(world: Env, git: Git, repo: Path, args: list[str]) -> None:
    r = git.tool("git_read", {"command": "show", "args": args})
    assert r.code != 0 and r.error()["code"] == "denied_arg" and r.error()["details"]["rule"] == "orderfile"


def test_more_object_stores_than_are_checked_is_refused(world: Env, git: Git, repo: Path) -> None:
    """Alternates that chain past the checked number of stores are not all checked: refused, not
    passed with the rest unchecked."""
    stores = []
    for n in range(20):
        store = repo / f"store{n}"
        (store / "info").mkdir(parents=True)
        stores.append(store)
    for here, nxt in itertools.pairwise(stores):
        (here / "info" / "alternates").write_text(f"{nxt}\n")
    (repo / ".git" / "objects" / "info" / "alternates").write_text(f"{stores[0]}\n")
    r = git.tool("git_read", {"command": "status"})
    assert r.code != 0 and r.error()["code"] == "invalid_repo" and "alternates" in r.error()["message"]
