"""Running git for the git tools, hardened: known environment, fixed command line, repository checks.

Before the requested subcommand runs, the repository must be a work tree whose top level and git
directories lie inside the sandbox roots, whose work tree holds no protected path, and neither its
config nor any of its submodules' configs may set a key that makes git run a program. Every git
process (including the inspection ones) gets the same scrubbed environment and the same fixed `-c`
options.
"""

from __future__ import annotations

import os
import posixpath
import shutil
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

from ...core.errors import ToolError
from ...core.pathcanon import canonicalize, is_inside
from ...core.records import Record
from ...core.shell.childenv import base_env
from ...core.shell.procgroup import ProcessOutcome, run_captured
from .repoconfig import RUNS_PROGRAMS, config_refusal, parse_config_entries, parse_config_list
from .submodules import GitlinkListing, checked_out_git_dir, common_dir, module_git_dirs

if TYPE_CHECKING:
    from ...core.context import ToolContext

GIT_TIMEOUT_S = 120
INSPECT_TIMEOUT_S = 30
Tool = Literal["git_read", "git_write"]

# Always set for git children; every other GIT_* variable is dropped.
KNOWN_GIT_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_ALLOW_PROTOCOL": "https:ssh:git",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_PAGER": "cat",
    "PAGER": "cat",
}
FIXED_OPTIONS = (
    "--no-pager",
    "-c", "core.fsmonitor=false",
    "-c", "protocol.ext.allow=never",
    "-c", "protocol.file.allow=never",
    "-c", "core.editor=:",
    "-c", "sequence.editor=:",
    # Keep out of submodules where a command allows it (their configs are checked as well, for the
    # commands that go in anyway).
    "-c", "diff.ignoreSubmodules=all",
    "-c", "submodule.recurse=false",
    "-c", "fetch.recurseSubmodules=false",
    # Config that makes git read a file of the config's choosing into a commit or an ordering: the
    # twins of the refused -t/--template and -O/--orderfile.
    "-c", "commit.template=/dev/null",
    "-c", "diff.orderFile=/dev/null",
)  # fmt: skip
HOOKS_OFF = ("-c", "core.hooksPath=/dev/null")
NO_DRIVERS = ("--no-ext-diff", "--no-textconv")
DRIVER_COMMANDS = frozenset({"diff", "log", "show"})
# On the command line, so neither .gitmodules nor the repository config (`submodule.<name>.ignore`)
# can lower it for status and diff.
SUBMODULES_OFF = ("--ignore-submodules=all",)
SUBMODULES_OFF_COMMANDS = frozenset({"status", "diff"})
# More submodule git directories than this are not all checked: the repository is refused.
MAX_SUBMODULE_GIT_DIRS = 256
MAX_SUBMODULE_DEPTH = 8


def _object_stores(common_dir: str, limit: int = 16) -> list[str] | None:
    """Where git reads objects from besides `common_dir/objects`: that directory itself when it is a
    link, and every `objects/info/alternates` entry, followed to their own alternates. Each must lie
    inside the roots, as the git dir must. None when there are more than `limit` stores, or an
    alternates file is too long to read whole: they are not all checked, so the repository is refused."""
    found: list[str] = []
    todo = [os.path.join(common_dir, "objects")]
    while todo:
        real = os.path.realpath(todo.pop())
        if real in found:
            continue
        if len(found) == limit:
            return None
        found.append(real)
        try:
            with open(os.path.join(real, "info", "alternates"), encoding="utf-8", errors="replace") as f:
                text = f.read((1 << 16) + 1)
        except OSError:
            continue
        if len(text) > 1 << 16:
            return None
        for line in text.splitlines():
            entry = line.strip()
            if entry and not entry.startswith("#"):
                todo.append(entry if entry.startswith("/") else os.path.join(real, entry))
    return found


class Repo(Record, frozen=True):
    workdir: str  # where the command runs (the canonical `repo` argument)
    toplevel: str
    git_dir: str
    common_dir: str


class GitRunner:
    """One git tool call: the environment, the command line, the checks and the run."""

    def __init__(self, ctx: ToolContext, tool: Tool) -> None:
        self.ctx = ctx
        self.tool = tool
        self.cfg = ctx.config.fermix_core.tools.git
        self.env = hardened_env(base_env(os.environ), read=tool == "git_read")
        found = shutil.which("git", path=self.env.get("PATH", os.defpath))
        if not found:
            raise ToolError("executable_not_found", "git executable not found", {})
        self.git = found

    def argv(self, command: str, args: Sequence[str], *, identity: Sequence[str] = ()) -> list[str]:
        out = [self.git, *FIXED_OPTIONS]
        if not self.cfg.allow_hooks:
            out += HOOKS_OFF
        out += ["-c", "credential.helper="]
        for helper in self.cfg.credential_helpers:
            out += ["-c", f"credential.helper={helper}"]
        out += identity
        out.append(command)
        if command in DRIVER_COMMANDS:
            out += NO_DRIVERS
        if command in SUBMODULES_OFF_COMMANDS:
            out += SUBMODULES_OFF
        return [*out, *args]

    def _inspect_run(self, args: Sequence[str], cwd: str, **kw: Any) -> ProcessOutcome:
        try:
            return run_captured(
                self.argv(args[0], args[1:]), cwd=cwd, env=self.env, timeout_s=INSPECT_TIMEOUT_S, **kw
            )
        except OSError as e:
            raise ToolError("executable_not_found", f"git executable not found ({e.strerror})", {}) from None

    # ----- repository checks -------------------------------------------------------------------

    def open_repo(self, raw: str | None) -> Repo:
        """The checked repository for `raw` (default: the working directory)."""
        sandbox = self.ctx.sandbox
        try:
            workdir = sandbox.working_dir(raw, tool=self.tool)
        except ToolError as e:
            if e.code == "missing_working_dir":
                raise ToolError(
                    "invalid_repo", f"repo does not exist: {e.details.get('path', raw)}", e.details
                ) from None
            raise
        out = self._inspect_run(
            [
                "rev-parse",
                "--is-inside-work-tree",
                "--show-toplevel",
                "--absolute-git-dir",
                "--git-common-dir",
            ],
            workdir,
        )
        lines = out.text().splitlines()
        if out.exit_code != 0 or len(lines) != 4 or lines[0].strip() != "true":
            raise ToolError(
                "invalid_repo",
                f"not a git work tree: {workdir}. git tools run only inside a repository's work tree "
                "(outside one, git diff silently compares arbitrary files)",
                {"path": workdir},
            )
        toplevel = canonicalize(lines[1])
        git_dir = canonicalize(lines[2])
        common = lines[3] if lines[3].startswith("/") else posixpath.join(workdir, lines[3])
        common_dir = canonicalize(posixpath.normpath(common))
        repo = Repo(workdir, toplevel, git_dir, common_dir)
        self._check_locations(repo, raw)
        self._check_config(repo)
        self._check_submodules(repo)
        return repo

    def _check_locations(self, repo: Repo, raw: str | None) -> None:
        sandbox = self.ctx.sandbox
        top = sandbox.decide(repo.toplevel)
        if not top.allowed:
            verb = "git_write" if self.tool == "git_write" else "git_read"
            raise ToolError(
                top.code or "outside_root",
                f"Sandbox denied {verb} repo root outside roots: {repo.toplevel} (resolved from input "
                f"{raw or repo.workdir}). To allow it, run: fermix grant path {repo.toplevel}, "
                "or call the request_directory_access tool",
                {"path": repo.toplevel, "input": raw or repo.workdir},
            )
        inside = sandbox.denied_inside(repo.toplevel)
        if inside is not None:
            what = "protected path" if inside.code == "protected_path" else "blocked root"
            raise ToolError(
                inside.code or "protected_path",
                f"the repository {repo.toplevel} holds the {what} {inside.path} in its work tree: git "
                "could read it (show, diff) or overwrite it (checkout, pull), which file tools refuse, so "
                "git tools refuse this repository. Use git from your own terminal for it, or keep the "
                "path out of the repository's work tree (a dotfiles repository at your home holds ~/.ssh "
                "and ~/.bashrc). Run: fermix sandbox explain",
                {"path": inside.path, "toplevel": repo.toplevel},
            )
        stores = _object_stores(repo.common_dir)
        if stores is None:
            raise ToolError(
                "invalid_repo",
                f"the repository {repo.toplevel} borrows objects from more places (objects/info/alternates) "
                "than git tools check; git tools refuse this repository",
                {"path": repo.toplevel},
            )
        for label, path in (
            ("git dir", repo.git_dir),
            ("git common dir", repo.common_dir),
            *(("object store", d) for d in stores),
        ):
            d = sandbox.decide(path)
            if not d.allowed:
                raise ToolError(
                    d.code or "outside_root",
                    f"the repository's {label} {path} is outside the sandbox roots or protected "
                    "(a .git file can point anywhere); git tools refuse this repository",
                    {"path": path, "toplevel": repo.toplevel},
                )

    def _check_config(self, repo: Repo) -> None:
        out = self._inspect_run(["config", "--list", "--null", "--show-scope", "--no-includes"], repo.workdir)
        if out.exit_code != 0 or out.truncated:
            raise ToolError(
                "invalid_repo",
                f"cannot read the repository config of {repo.toplevel}; git tools refuse this repository",
                {"path": repo.toplevel, "output": out.text()[-2000:]},
            )
        entries = [(key, value) for scope, key, value in parse_config_list(out.output) if scope != "command"]
        self._judge_config(repo, entries)

    def _judge_config(
        self, repo: Repo, entries: Sequence[tuple[str, str | None]], submodule_config: str | None = None
    ) -> None:
        """Refuse the repository when one of a config's entries makes git run a program."""
        where = "repository config" if submodule_config is None else f"submodule config {submodule_config}"
        for key, value in entries:
            why = config_refusal(key, value)
            if why is None:
                continue
            hint = (
                f" (if you trust it, remove it: git config --file {submodule_config} --unset {key})"
                if submodule_config is not None and why == RUNS_PROGRAMS
                else ""
            )
            raise ToolError(
                "invalid_repo",
                f"{where} sets {key}{why}; git tools refuse this repository{hint}",
                {
                    "path": repo.toplevel,
                    "key": key,
                    **({"config": submodule_config} if submodule_config else {}),
                },
            )

    def _check_submodules(self, repo: Repo) -> None:
        """Give every submodule git directory the repository's checks: inside the roots, and no config
        key that runs a program. git runs a child git inside a submodule for `add` of a directory,
        for `checkout` and `commit` listing local changes, and wherever `.gitmodules` lowers
        `ignore`; that child reads the submodule's own config."""
        checked: set[str] = {repo.git_dir, repo.common_dir}
        modules = module_git_dirs(sorted(checked), limit=MAX_SUBMODULE_GIT_DIRS)
        if modules is None:
            raise self._too_many_submodules(repo)
        for git_dir in modules:
            self._check_submodule_git_dir(repo, git_dir, checked)
        # Checked-out submodules, found from the gitlinks of each index, nested ones too.
        todo = [(repo.toplevel, 0)]
        while todo:
            worktree, depth = todo.pop()
            if depth > MAX_SUBMODULE_DEPTH:
                raise self._too_many_submodules(repo)
            paths = self._gitlinks(repo, worktree, nested=depth > 0)
            for path in paths:
                sub_worktree = posixpath.join(worktree, path)
                sub_git_dir = checked_out_git_dir(sub_worktree)
                if sub_git_dir is None:
                    continue  # not checked out: git does not go into it
                if sub_git_dir not in checked:
                    self._check_submodule_git_dir(repo, sub_git_dir, checked)
                todo.append((sub_worktree, depth + 1))

    def _too_many_submodules(self, repo: Repo) -> ToolError:
        return ToolError(
            "invalid_repo",
            f"the repository {repo.toplevel} has more submodule git directories than git tools check "
            f"({MAX_SUBMODULE_GIT_DIRS}, nested at most {MAX_SUBMODULE_DEPTH} deep); git tools refuse "
            "this repository",
            {"path": repo.toplevel},
        )

    def _gitlinks(self, repo: Repo, worktree: str, *, nested: bool) -> list[str]:
        """The gitlink paths in the index of the repository whose work tree is `worktree`.

        A submodule git cannot open (its `.git` names no repository) has none: a child git that
        git starts there cannot open it either, so nothing of it runs.
        """
        listing = GitlinkListing()
        out = self._inspect_run(
            ["ls-files", "--stage", "-z"],
            worktree,
            cap=1 << 16,
            overflow="discard",
            on_output=listing.feed,
        )
        if nested and out.exit_code != 0 and not out.timed_out:
            return []
        if out.exit_code != 0 or out.timed_out:
            raise ToolError(
                "invalid_repo",
                f"cannot list the submodules of {worktree} (git ls-files failed); git tools refuse this "
                "repository",
                {"path": repo.toplevel, "output": out.text()[-2000:]},
            )
        return list(listing.paths)

    def _check_submodule_git_dir(self, repo: Repo, git_dir: str, checked: set[str]) -> None:
        if len(checked) > MAX_SUBMODULE_GIT_DIRS + 2:
            raise self._too_many_submodules(repo)
        checked.add(git_dir)
        common = common_dir(git_dir)
        for label, path in (("submodule git dir", git_dir), ("submodule git common dir", common)):
            d = self.ctx.sandbox.decide(canonicalize(path))
            if not d.allowed:
                raise ToolError(
                    d.code or "outside_root",
                    f"the repository's {label} {path} is outside the sandbox roots or protected "
                    "(a .git file can point anywhere); git tools refuse this repository",
                    {"path": path, "toplevel": repo.toplevel},
                )
        for config in dict.fromkeys(
            (posixpath.join(common, "config"), posixpath.join(git_dir, "config.worktree"))
        ):
            if not os.path.lexists(config):
                continue
            out = self._inspect_run(
                ["config", "--file", config, "--list", "--null", "--no-includes"], repo.workdir
            )
            if out.exit_code != 0 or out.truncated:
                raise ToolError(
                    "invalid_repo",
                    f"cannot read the submodule config {config}; git tools refuse this repository",
                    {"path": repo.toplevel, "config": config, "output": out.text()[-2000:]},
                )
            entries = parse_config_entries(out.output)
            for key, value in entries:
                if key.lower() == "core.worktree":
                    self._check_submodule_worktree(repo, git_dir, config, value or "")
            self._judge_config(repo, [e for e in entries if e[0].lower() != "core.worktree"], config)

    def _check_submodule_worktree(self, repo: Repo, git_dir: str, config: str, value: str) -> None:
        """An absorbed submodule's config names its work tree (`core.worktree`); it must lie in the
        repository's own work tree, which the sandbox checks covered."""
        where = posixpath.normpath(value if value.startswith("/") else posixpath.join(git_dir, value))
        if not is_inside(canonicalize(where), repo.toplevel):
            raise ToolError(
                "invalid_repo",
                f"submodule config {config} sets core.worktree to {value}, outside the repository's work "
                f"tree {repo.toplevel}; git tools refuse this repository",
                {"path": repo.toplevel, "key": "core.worktree", "config": config},
            )

    # ----- running -----------------------------------------------------------------------------

    def identity(self) -> list[str]:
        """`-c user.name=… -c user.email=…` from fermix config, else from the global git config."""
        name, email = self.cfg.user_name, self.cfg.user_email
        if name is None or email is None:
            g_name, g_email = self._global_identity()
            name = name if name is not None else g_name
            email = email if email is not None else g_email
        out: list[str] = []
        if name:
            out += ["-c", f"user.name={name}"]
        if email:
            out += ["-c", f"user.email={email}"]
        return out

    def _global_identity(self) -> tuple[str | None, str | None]:
        home = self.ctx.os_home
        xdg = os.environ.get("XDG_CONFIG_HOME") or posixpath.join(home, ".config")
        found: dict[str, str] = {}
        for path in (posixpath.join(xdg, "git", "config"), posixpath.join(home, ".gitconfig")):
            if not os.path.isfile(path):
                continue
            out = run_captured(
                [self.git, "config", "--file", path, "--null", "--get-regexp", r"^user\.(name|email)$"],
                cwd="/",
                env=self.env,
                timeout_s=INSPECT_TIMEOUT_S,
            )
            for chunk in out.output.split(b"\0"):
                key, _, value = chunk.decode("utf-8", "replace").partition("\n")
                if key in ("user.name", "user.email") and value:
                    found[key] = value
        return found.get("user.name"), found.get("user.email")

    def run(self, repo: Repo, command: str, args: Sequence[str]) -> dict[str, Any]:
        """Run the checked command. A write is never stopped for its output volume: what passes the cap
        is read and dropped while git runs to its end. A read is stopped at the cap (nothing is left
        half done) and stays a success that says so. A stopped git (timeout, cancel) is an error."""
        from ...core.shell.engine import child_env

        resolved = child_env(self.ctx, repo.workdir, tool=self.tool)
        env = hardened_env(resolved.env, read=self.tool == "git_read")
        identity = self.identity() if self.tool == "git_write" and command in ("commit", "pull") else []
        try:
            outcome = run_captured(
                self.argv(command, args, identity=identity),
                cwd=repo.workdir,
                env=env,
                timeout_s=GIT_TIMEOUT_S,
                redact=resolved.secrets,
                cancel=self.ctx.cancel,
                overflow="discard" if self.tool == "git_write" else "stop",
            )
        except OSError as e:
            raise ToolError("executable_not_found", f"git executable not found ({e.strerror})", {}) from None
        notes: list[str] = []
        if outcome.stopped_at_cap:
            notes.append(
                "output cut at 1 MiB: git was stopped there; narrow the command, e.g. with -n or a path"
            )
        elif outcome.truncated:
            notes.append("output cut at 1 MiB: git ran to its end and the rest of its output was discarded")
        result: dict[str, Any] = {
            "command": command,
            "args": list(args),
            "repo": repo.toplevel,
            "exit_code": outcome.exit_code,
            "output": outcome.text(),
            "truncated": outcome.truncated,
            "duration_ms": outcome.duration_ms,
            "env_missing": resolved.missing_names,
            "notes": notes,
        }
        so_far = f"; output so far:\n{result['output']}" if result["output"] else "; it printed nothing"
        if outcome.cancelled:
            why = self.ctx.cancel.reason if self.ctx.cancel is not None else "the call was cancelled"
            message = f"git {command} stopped: {why}"
            raise ToolError("cancelled", message, result, model_message=message + so_far)
        if outcome.timed_out:
            message = f"git {command} timed out after {GIT_TIMEOUT_S}s"
            raise ToolError("timeout", message, result, model_message=message + so_far)
        if outcome.exit_code != 0 and not outcome.stopped_at_cap:
            cut = " (output cut at 1 MiB)" if outcome.truncated else ""
            raise ToolError(
                "git_failed",
                f"git {command} failed (exit {outcome.exit_code}){cut}:\n{result['output']}",
                result,
            )
        return result


def hardened_env(env: dict[str, str], *, read: bool) -> dict[str, str]:
    """`env` without any GIT_* variable, plus the known git settings (and SSH_AUTH_SOCK for ssh pulls)."""
    out = {k: v for k, v in env.items() if not k.startswith("GIT_")}
    out.update(KNOWN_GIT_ENV)
    if read:
        out["GIT_OPTIONAL_LOCKS"] = "0"
    sock = os.environ.get("SSH_AUTH_SOCK")
    if sock and "SSH_AUTH_SOCK" not in out:
        out["SSH_AUTH_SOCK"] = sock
    return out
