"""Content search and file listing on ripgrep: `rg --json` for matches, `rg --files` for candidates.

fermix keeps what is its own and lets rg do the walking and matching:
- the sandbox: rg runs in the (already checked, canonical) search root, protected entries and blocked
  roots that lie inside it are excluded with `--iglob '!…'` before rg reads anything, and every path
  rg returns is checked again by the caller (`Scope.allows`), hard links to protected files included;
- ignore rules: rg's own `.gitignore`/`.ignore`/`.rgignore` handling inside the walk, as Git has it
  inside a repository, and outside any repository with `--no-require-git` (a `.gitignore` counts there
  too); the rules of the ignore files above the root restated relative to it (above.py: rg matches
  them against the wrong path); plus Perforce rule files, which rg does not know: the search finds
  those below the root, and when it finds any, their rules are translated to root-relative gitignore
  lines and the search runs again with them (`--ignore-file`);
- symlinks are not followed; hidden files are included only when the caller asks.

A run has a wall-clock deadline: rg is killed (its process group) when it passes, and the run says so.
Nothing is read through a size cap: rg reads every file to its end.
"""

from __future__ import annotations

import contextlib
import fcntl
import itertools
import json
import os
import re
import select
import signal
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import ToolError
from ..procid import pidfd_open
from ..records import Record, field
from . import engines
from .above import GIT_RULE_FILES, Rule, git_top, rules_above
from .p4ignore import MAX_RULE_BYTES, P4Rules, read_bounded, translate_rules
from .report import BadIgnoreRule

if TYPE_CHECKING:
    from ..sandbox import Sandbox

BASE_ARGS = ("--no-config",)


class PatternError(Exception):
    """rg rejected a regular expression."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class Scope(Record, frozen=True):
    """Which files below a root a run sees."""

    root: str  # canonical directory, already allowed by the sandbox
    hidden: bool = False
    respect_ignore: bool = True
    # Never listed nor descended, at any depth ("NAME/": directories only).
    exclude_names: tuple[str, ...] = (".git",)
    p4: P4Rules | None = None
    max_depth: int | None = None
    globs: tuple[str, ...] = ()  # the caller's rg globs (`-g`)
    types: tuple[str, ...] = ()  # rg file types (`-t`)
    type_defs: tuple[str, ...] = ()  # rg file type definitions (`--type-add NAME:GLOB`)


class RunStats(Record):
    timed_out: bool = False
    stopped_early: bool = False  # the caller had enough and ended the run
    errors: list[str] = field(default_factory=list)  # per-path errors rg reported (unreadable, …)
    # Ignore-file lines rg could not parse: it warned and went on without them (nothing left out).
    bad_rules: list[BadIgnoreRule] = field(default_factory=list)
    p4_files: int = 0
    # With `--debug` (searches): the files rg met binary data in (a NUL byte), relative to the root,
    # whether it stopped before its first match (not searched at all) or after; and the Perforce rule
    # files the walk passed (excluded by an override glob, so rg logs them).
    binary: list[str] = field(default_factory=list)
    # With `--debug` (searches): the entries rg's walk met that are neither a regular file, a directory
    # nor a symlink (FIFOs, sockets, devices), which it passes over without reading, relative to the root.
    special: list[str] = field(default_factory=list)
    p4_seen: list[str] = field(default_factory=list)
    log_cut: bool = False  # rg's log passed its cap: `binary` holds only the files it named before that
    returncode: int | None = None


def sandbox_globs(root: str, sandbox: Sandbox | None) -> list[str]:
    """`--iglob` exclusions for protected entries and blocked roots strictly inside `root`.

    The sandbox's protected test is case-insensitive and also covers `NAME.x` and `NAME-x` siblings,
    so each entry excludes `/REL`, `/REL.*` and `/REL-*` (anchored at the root, case-insensitively).
    """
    if sandbox is None or not sandbox.needs_checks_below(root):
        return []
    prefix = root.rstrip("/") + "/"
    out: list[str] = []
    for entry in [*sandbox.protected, *sandbox.blocked_roots]:
        if not entry.lower().startswith(prefix.lower()):
            continue
        rel = _glob_escape(entry[len(prefix) :].strip("/"))
        if rel:
            out += ["--iglob", f"!/{rel}", "--iglob", f"!/{rel}.*", "--iglob", f"!/{rel}-*"]
    return out


def allowed_below(
    sandbox: Sandbox, root: str, paths: list[str], *, link_check: bool = True
) -> tuple[list[str], int]:
    """The canonical `paths` below `root` (canonical, already allowed) that the sandbox allows, and
    how many it refused.

    Below an allowed root only a protected entry or blocked root lying inside it can deny a path
    (`Sandbox.needs_checks_below`), so the full decision runs only for paths that start with one of
    those (most trees have none: no check at all); hard links to protected files are looked for only
    when some protected file has a second link (`link_check=False` for directories).
    """
    check = sandbox.needs_checks_below(root)
    links = link_check and bool(paths) and sandbox.may_have_protected_links()
    if not check and not links:
        return paths, 0
    low_prefix = root.rstrip("/").lower() + "/"
    inside = tuple(
        e.lower() for e in (*sandbox.protected, *sandbox.blocked_roots) if e.lower().startswith(low_prefix)
    )
    out: list[str] = []
    for p in paths:
        if inside and p.lower().startswith(inside) and not sandbox.allows(p):
            continue
        if links and sandbox.is_link_to_protected(p):
            continue
        out.append(p)
    return out, len(paths) - len(out)


def _glob_escape(text: str) -> str:
    """`text` as a glob (and gitignore) pattern that matches it literally: each special character
    backslash-escaped. (Not `[c]`: `[!]` opens a negated class that never closes.)"""
    return "".join("\\" + c if c in "*?[]{}\\!" else c for c in text)


def literal_glob(name: str) -> str:
    """An rg `-g` glob that matches exactly the entry `name` directly below the search root."""
    return "/" + _glob_escape(name)


def base_args(top: str | None) -> list[str]:
    """rg's arguments for any walk in the repository whose top is `top` (`git_top`; None: in none): no
    config file, and `.gitignore` files read as Git reads them. In a repository that is rg's default,
    which stops at the repository's top: a `.gitignore` above it (say `*` in a home directory's)
    hides nothing inside, as in Git. Outside any repository rg would read no `.gitignore` at all, so
    there fermix asks it to (`--no-require-git`)."""
    return [*BASE_ARGS] if top is not None else [*BASE_ARGS, "--no-require-git"]


def _scope_args(scope: Scope, sandbox: Sandbox | None, top: str | None) -> list[str]:
    args = base_args(top)
    if scope.hidden:
        args.append("--hidden")
    if not scope.respect_ignore:
        args.append("--no-ignore")
    if scope.max_depth is not None:
        args += ["--max-depth", str(scope.max_depth)]
    # rg's override globs (`-g`) win over its hidden and ignore filters, and the last glob that matches
    # a path decides. So the caller's globs come first: one that matches everything (`*`, `**`) brings
    # ignored files in, as in rg, but the exclusions after it keep `.git` and the scope's other names
    # out, and hidden files too unless the scope includes them or a glob names one (`.env`, `**/.*rc`).
    for g in scope.globs:
        args += ["-g", g]
    # rg's file types (`-t`) bring hidden files in as a glob does: both are followed by `!.*`.
    if not scope.hidden and (scope.types or any(not g.startswith("!") for g in scope.globs)):
        args += ["-g", "!.*"]
        for g in scope.globs:  # again, in order: those naming hidden paths, and every exclusion
            if g.startswith("!") or _names_hidden(g):
                args += ["-g", g]
    for name in scope.exclude_names:  # "NAME/": directories only
        args += ["-g", f"!{_glob_escape(name.rstrip('/'))}{'/' if name.endswith('/') else ''}"]
    if scope.p4 is not None:
        for name in sorted(scope.p4.excluded_names):
            args += ["-g", f"!{_glob_escape(name)}"]
    for d in scope.type_defs:
        args += ["--type-add", d]
    for t in scope.types:
        args += ["-t", t]
    args += sandbox_globs(scope.root, sandbox)
    return args


def _names_hidden(glob: str) -> bool:
    """Whether an rg glob names a hidden path itself: a component that starts with a literal dot."""
    return any(part.startswith(".") and part not in (".", "..") for part in glob.split("/"))


def _p4_prepass_args(scope: Scope, sandbox: Sandbox | None) -> list[str]:
    assert scope.p4 is not None
    # (--no-ignore-parent as the search has it: a rule above the root is not read, nor reported, twice)
    args = [*base_args(git_top(scope.root)), "--files", "--null", "--hidden", "--no-ignore-parent"]
    if not scope.hidden:
        args += ["-g", "!.*/"]  # hidden directories are not walked by the search either
    if scope.max_depth is not None:
        args += ["--max-depth", str(scope.max_depth)]
    for name in scope.exclude_names:
        args += ["-g", f"!{_glob_escape(name.rstrip('/'))}/"]
    for name in scope.p4.ignore_names:
        args += ["-g", _glob_escape(name)]
    return args + sandbox_globs(scope.root, sandbox)


def p4_rules_text(root: str, p4: P4Rules, rule_files: list[str]) -> str:
    """Perforce rule files as one gitignore file whose patterns are relative to `root`.

    A rule file in directory D speaks about paths below D: an unanchored rule becomes `/D/**/rule`,
    an anchored one `/D/rule`. Shallower files come first, so deeper ones win, as in Git.
    """
    lines: list[str] = []
    for path in p4.global_files:
        text = read_bounded(path, MAX_RULE_BYTES)
        lines += translate_rules(text) if text else []
    for rel in sorted(rule_files, key=lambda r: (r.count("/"), r)):
        text = read_bounded(os.path.join(root, rel), MAX_RULE_BYTES)
        if not text:
            continue
        base = os.path.dirname(rel)
        for line in translate_rules(text):
            lines.append(_rebase(line, base))
    return "\n".join(lines) + "\n"


def _rebase(line: str, base: str) -> str:
    if not base or not line.strip() or line.startswith("#"):
        return line
    neg = line.startswith("!")
    pat = line[1:] if neg else line
    if pat.startswith("\\"):
        pat = pat[1:] if pat[1:2] in ("!", "#") else pat
    body = pat.rstrip("/")
    anchored = "/" in body
    where = _glob_escape(base)  # the directory's name is literal; the rule's own pattern is not
    rebased = f"/{where}/{pat.lstrip('/')}" if anchored else f"/{where}/**/{pat}"
    return ("!" if neg else "") + rebased


def unreadable_root(root: str, err: PermissionError) -> Exception:
    """What to raise when a search engine could not be started in the directory `root` (`cwd=`):
    `unreadable`, naming it, when the directory refused (the child's `chdir` sets the error's
    filename to it); anything else (an engine that cannot be run) is raised as it is."""
    if err.filename != root:
        return err
    return ToolError(
        "unreadable",
        f"Cannot search {root}: permission denied (the directory must be readable and searchable); fix its "
        f"permissions (chmod u+rx {root}) or search another path",
        {"path": root},
    )


class Run:
    """One rg process over a scope, killed at the deadline. Read it once (`chunks()` or `records()`)."""

    def __init__(
        self,
        scope: Scope,
        mode_args: list[str],
        deadline: float,
        sandbox: Sandbox | None = None,
        target: str = ".",
        p4_found: list[str] | None = None,
        *,
        walk_log: bool = False,
        restate_above: bool = True,
    ) -> None:
        self.scope = scope
        # Whether the rules of the ignore files above the root reach rg restated by fermix (above.py),
        # or are read by rg itself (a run that walks more paths than the root, each with its parents).
        self.restate_above = restate_above
        self.target = target  # "." (the root) or one file's name relative to it
        self.p4_found = p4_found  # the Perforce rule files, when the caller already knows them
        self.mode_args = mode_args
        self.deadline = deadline
        self.sandbox = sandbox
        self.stats = RunStats()
        self._proc: subprocess.Popen[bytes] | None = None
        self._ignore_file: str | None = None  # the ignore file rg is given, as rg names it
        self._ignore_temp: str | None = None  # that file, when it is one on disk (removed at the end)
        self._rule_origins: list[Rule] = []
        self._lock = threading.Lock()
        self._err: dict[int, LazyPipe] = {}
        self.full_args: list[str] | None = None  # set: exactly these arguments, no scope or rules
        # With `walk_log` (and `--debug` among the arguments), the entries rg's walk skipped (hidden,
        # ignored, excluded by a glob), relative to the root, as rg's log shows them (`lossy`).
        self.walk_log = walk_log
        self.skipped: set[str] = set()

    # ----- process handling -------------------------------------------------------------------

    def _spawn(self, args: list[str], pass_fds: tuple[int, ...] = ()) -> subprocess.Popen[bytes]:
        log = LazyPipe(_LOG_CAP)  # closed by _stderr once rg has finished
        try:
            proc = subprocess.Popen(
                [engines.rg(), *args, "--", self.target],
                cwd=self.scope.root,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=log.write_fd,
                start_new_session=True,
                pass_fds=pass_fds,
            )
        except PermissionError as e:
            log.close()
            raise unreadable_root(self.scope.root, e) from None
        except BaseException:
            log.close()
            raise
        log.started()
        self._err[proc.pid] = log
        return proc

    def _stderr(self, proc: subprocess.Popen[bytes]) -> str:
        """What rg wrote to stderr (at most 64 MiB: `--debug` writes a line per binary file); closes it."""
        log = self._err.pop(proc.pid, None)
        if log is None:
            return ""
        try:
            text = log.read_rest().decode("utf-8", "replace")
            if log.cut:  # the cap fell inside a line: that line is not read as a whole one
                self.stats.log_cut = True
                text = text[: text.rfind("\n") + 1]
            return text
        finally:
            log.close()

    def _kill(self, proc: subprocess.Popen[bytes]) -> None:
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)

    def _on_deadline(self) -> None:
        with self._lock:
            if self._proc is not None and self._proc.poll() is None:
                self.stats.timed_out = True
                self._kill(self._proc)

    def stop(self) -> None:
        """End the run early: the caller has what it needs."""
        with self._lock:
            if self._proc is not None and self._proc.poll() is None:
                self.stats.stopped_early = True
                self._kill(self._proc)

    def _remaining(self) -> float:
        return max(self.deadline - time.monotonic(), 0.0)

    def _start(self) -> subprocess.Popen[bytes]:
        if self.full_args is not None:
            return self._spawn(self.full_args)
        scope = self.scope
        top = git_top(scope.root)
        args = _scope_args(scope, self.sandbox, top) + self.mode_args
        # The rules of the ignore files above the root, restated for it: rg matches them against the
        # wrong path (see above.py). A file named as the target is searched whatever they say.
        above: list[Rule] = []
        if scope.respect_ignore and self.target == "." and self.restate_above:
            args.append("--no-ignore-parent")
            if top is not None and top != scope.root:  # the global excludes file is restated too
                args.append("--no-ignore-global")
            above = rules_above(scope.root, scope.p4, top)
        self._rule_origins = above  # line N of the ignore file written is above[N - 1]
        text = "".join(rule.text + "\n" for rule in above)
        found = self.p4_found or []
        if scope.p4 is not None and (found or scope.p4.global_files):
            self.stats.p4_files = len(found)
            text += p4_rules_text(scope.root, scope.p4, found)
        if not text:
            return self._spawn(args)
        if not hasattr(os, "memfd_create"):
            import tempfile  # where there is no memfd: a plain search does not pay for its import

            fd, self._ignore_file = tempfile.mkstemp(prefix="fermix-rules-", suffix=".ignore")
            self._ignore_temp = self._ignore_file
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
            return self._spawn([*args, "--ignore-file", self._ignore_file])
        # In memory, handed to rg as a descriptor it opens by name: nothing on disk, nothing left over
        # when fermix is killed mid-search.
        fd = os.memfd_create("fermix-rules")
        try:
            data = memoryview(text.encode("utf-8"))
            while data:
                data = data[os.write(fd, data) :]
            self._ignore_file = f"/dev/fd/{fd}"
            return self._spawn([*args, "--ignore-file", self._ignore_file], pass_fds=(fd,))
        finally:
            os.close(fd)

    def _from_origin(self, rule: BadIgnoreRule) -> BadIgnoreRule:
        """A bad line rg found in the ignore file fermix wrote, named as the line it was restated from."""
        if rule.path != self._ignore_file or not 0 < rule.line <= len(self._rule_origins):
            return rule
        origin = self._rule_origins[rule.line - 1]
        return BadIgnoreRule(origin.path, origin.line, rule.error)

    def records(self) -> list[str]:
        """All of a `--null` run's records, decoded at once, "./" dropped."""
        data = b"".join(self.chunks())
        if not data:
            return []
        text = os.fsdecode(data).removesuffix("\0")
        if self.target == "." and text.startswith("./"):
            # rg prints every path below "." as "./rel": split on the separator and that prefix at once.
            return text[2:].split("\0./")
        return _split_null(text)

    def chunks(self) -> Iterator[bytes]:
        """rg's stdout in chunks of up to 1 MiB, as rg writes it; rg is killed at the deadline.

        A run whose deadline has already passed does not start rg: it is timed out as it stands (else
        a small search could finish before the timer thread got to run, and pass its deadline unseen).
        """
        if self._remaining() <= 0:
            self.stats.timed_out = True
            return
        proc = self._start()
        with self._lock:
            self._proc = proc
        timer = threading.Timer(self._remaining(), self._on_deadline)
        timer.daemon = True
        timer.start()
        eof = False
        try:
            assert proc.stdout is not None
            log = self._err[proc.pid]
            yield from read_beside(proc.stdout.fileno(), log, proc.pid)
            eof = True
        finally:
            self._finish(proc, timer, eof)

    def _finish(self, proc: subprocess.Popen[bytes], timer: threading.Timer, eof: bool) -> None:
        if not eof and not self.stats.timed_out:
            self.stop()
        err = self._stderr(proc)  # to its end first: rg could be waiting to write the last of its log
        proc.wait()
        timer.cancel()
        self.stats.returncode = proc.returncode
        if self._ignore_temp:
            with contextlib.suppress(OSError):
                os.unlink(self._ignore_temp)
        err = self._read_debug(err)
        bad, rest = ignore_file_warnings(messages(err), self.scope.root)
        self.stats.bad_rules = list(dict.fromkeys(self._from_origin(rule) for rule in bad))
        if self.stats.timed_out or self.stats.stopped_early:
            return
        if proc.returncode == 2:
            _raise_for("\n".join(rest), self.target)
        self.stats.errors = [r for r in rest if r.startswith("rg: ")]

    def _read_debug(self, err: str) -> str:
        """Take rg's `--debug` lines out of its stderr: binary files and Perforce rule files are noted
        in the stats; everything else from the log is dropped. Returns the rest (rg's own messages).

        A search can meet hundreds of thousands of binary files, so their lines, which all start alike
        (rg's log names the one place in its source that writes them), are told by that start and cut
        with one slice each; any other line goes the general way."""
        if _DEBUG not in err:
            return err
        keep: list[str] = []
        names = set(self.scope.p4.ignore_names) if self.scope.p4 is not None else set()
        binary = self.stats.binary
        head = _binary_head(err)
        cut = len(head)
        for ln in messages(err):
            if head and ln.startswith(head):
                end = ln.rfind(_FOUND)
                if end > cut:
                    binary.append(ln[cut:end])
                    continue
            if not ln.startswith(_DEBUG):
                keep.append(ln)
                continue
            if _BINARY_LOG in ln:  # "…json.rs:N: ignoring PATH: found binary data at offset N"
                head_, _, _ = ln.rpartition(_FOUND)
                binary.append(_strip_dot(head_.partition(": ignoring ")[2]))
            elif _HAYSTACK_LOG in ln and _NOT_A_FILE in ln:
                # "…haystack.rs:N: ignoring PATH: failed to pass haystack filter: file type: Some(FileType {
                # is_file: false, is_dir: false, is_symlink: B, .. }), metadata: …": a symlink is not
                # followed by choice; anything else is a special file.
                head_, _, kind = ln.partition(_NOT_A_FILE)
                if "is_symlink: false" in kind.partition("})")[0]:
                    self.stats.special.append(_strip_dot(head_.partition(": ignoring ")[2]))
            elif _WALK_LOG in ln and ": ignoring " in ln:
                if self.walk_log:
                    self.skipped.add(_strip_dot(ln.partition(": ignoring ")[2].partition(": Ignore(")[0]))
                if names and _OVERRIDE in ln:
                    head_ = ln.rpartition(_OVERRIDE)[0].partition(": ignoring ")[2]
                    rel = _strip_dot(head_)
                    if rel.rpartition("/")[2] in names:
                        self.stats.p4_seen.append(rel)
        return "\n".join(keep)


def _binary_head(err: str) -> str:
    """What every line of rg's log naming a binary file holds before the file's name below the root
    ("rg: DEBUG|grep_printer::json|crates/printer/src/json.rs:N: ignoring ./"), from the first such
    line; "" when there is none or it does not read so."""
    at = err.find(_BINARY_LOG)
    if at < 0:
        return ""
    start = err.rfind("\n", 0, at) + 1
    if not err.startswith(_DEBUG, start):
        return ""
    stop = err.find("\n", at)
    end = err.find(": ignoring ./", at, stop if stop >= 0 else len(err))
    return err[start : end + len(": ignoring ./")] if end >= 0 else ""


_DEBUG = "rg: DEBUG|"
_FOUND = ": found binary data at offset "
_BINARY_LOG = "|grep_printer::json|"  # rg 14: one line per file it met a NUL byte in (quit mode)
_WALK_LOG = "|ignore::walk|"
_HAYSTACK_LOG = "|rg::haystack|"  # rg 14: a line per entry of the walk that is no file to search
_NOT_A_FILE = ": failed to pass haystack filter: file type: "
_OVERRIDE = ": Ignore(IgnoreMatch(Override("


def read_beside(out: int, log: LazyPipe, pid: int | None = None) -> Iterator[bytes]:
    """A child's stdout in chunks as it writes them, its log drained on the side.

    Given the child's `pid` (and a system with pidfds), its output is collected every few
    milliseconds and at once when it exits, not on every write: rg writes each file's results as it
    finishes the file, and waking for each of those writes (hundreds in a search of a large tree)
    takes CPU time the child itself needs. The pipe is enlarged so that a child never waits long on
    it between collections (one that fills it is read again at once)."""
    exit_fd = pidfd_open(pid) if pid is not None else None
    if exit_fd is not None:
        try:
            yield from _collected(out, log, exit_fd)
        finally:
            os.close(exit_fd)
    wait = _poller(out)
    while True:
        if wait(_DRAIN_EVERY_MS):
            try:
                chunk = os.read(out, 1 << 20)
            except BlockingIOError:  # (a non-blocking pipe that `_collected` emptied)
                continue
            if not chunk:
                return
            yield chunk
        log.drain_if_due()


def _collected(out: int, log: LazyPipe, exit_fd: int) -> Iterator[bytes]:
    """What the child writes to `out`, collected every `_COLLECT_EVERY_MS` until it exits (`exit_fd`,
    its pidfd, turns readable); what is left after that is for the caller to read to its end."""
    if hasattr(fcntl, "F_SETPIPE_SZ"):
        with contextlib.suppress(OSError):
            fcntl.fcntl(out, fcntl.F_SETPIPE_SZ, _PIPE_SIZE)
    os.set_blocking(out, False)
    exited = _poller(exit_fd)
    wait_ms = _COLLECT_EVERY_MS
    while True:
        gone = exited(wait_ms)
        parts: list[bytes] = []
        size = 0
        with contextlib.suppress(BlockingIOError):
            while size < _PIPE_SIZE and (chunk := os.read(out, _PIPE_SIZE - size)):
                parts.append(chunk)
                size += len(chunk)
        if parts:
            yield parts[0] if len(parts) == 1 else b"".join(parts)
        log.drain_if_due()
        if gone:
            return
        wait_ms = 0 if size >= _PIPE_SIZE else _COLLECT_EVERY_MS  # a pipe's worth: there may be more


def _poller(fd: int) -> Callable[[int], bool]:
    """`wait(ms)`: whether `fd` has something to read (data or its end) within `ms` milliseconds."""
    if hasattr(select, "poll"):
        p = select.poll()
        p.register(fd, select.POLLIN)
        return lambda ms: bool(p.poll(ms))
    return lambda ms: bool(select.select([fd], [], [], ms / 1000)[0])


_DRAIN_EVERY_MS = 10
_COLLECT_EVERY_MS = 5
_PIPE_SIZE = 1 << 20  # Linux lets anyone enlarge a pipe this far (/proc/sys/fs/pipe-max-size)
_LOG_CAP = 64 << 20  # rg's log kept per run: a line per binary file, some 500,000 of them


class LazyPipe:
    """A pipe for a child's stderr that is read only now and then, never as the child writes.

    rg's `--debug` log is a line per binary file, written in about 14 unbuffered `write` calls. Each
    write that finds a reader waiting in `read` wakes it, which costs rg more than the write itself;
    a memfd or file costs more again (its size and times are updated on every write). So the log
    goes to a pipe enlarged to 1 MiB (a few thousand lines) that nobody waits on: the reader of
    stdout takes what is in it every 10 ms without blocking (`drain_if_due`), so a longer log never
    stalls rg for long, and the rest at the end (`read_rest`). Keeps at most `cap` bytes, and says
    when it left any out (`cut`).
    """

    def __init__(self, cap: int = 64 << 20) -> None:
        self.read_fd, self.write_fd = os.pipe()
        if hasattr(fcntl, "F_SETPIPE_SZ"):
            with contextlib.suppress(OSError):
                fcntl.fcntl(self.write_fd, fcntl.F_SETPIPE_SZ, _PIPE_SIZE)
        os.set_blocking(self.read_fd, False)
        self.cap = cap
        self.size = 0
        self.parts: list[bytes] = []
        self.cut = False
        self.due = 0.0

    def started(self) -> None:
        """The child has its copy of the write end: drop ours, so its exit ends the pipe."""
        if self.write_fd >= 0:
            os.close(self.write_fd)
            self.write_fd = -1
        self.due = time.monotonic() + _DRAIN_EVERY_MS / 1000

    def _keep(self, chunk: bytes) -> None:
        room = self.cap - self.size
        if len(chunk) > room:
            self.cut = True
        if room > 0:
            self.parts.append(chunk[:room])
            self.size += min(len(chunk), room)

    def drain_if_due(self) -> None:
        now = time.monotonic()
        if now < self.due:
            return
        self.due = now + _DRAIN_EVERY_MS / 1000
        with contextlib.suppress(BlockingIOError):
            while chunk := os.read(self.read_fd, _PIPE_SIZE):
                self._keep(chunk)

    def read_rest(self) -> bytes:
        """Everything to the pipe's end (every writer gone); call once the child has finished or
        been killed."""
        os.set_blocking(self.read_fd, True)
        while chunk := os.read(self.read_fd, _PIPE_SIZE):
            self._keep(chunk)
        return b"".join(self.parts)

    def close(self) -> None:
        for fd in (self.read_fd, self.write_fd):
            if fd >= 0:
                os.close(fd)
        self.read_fd = self.write_fd = -1


def scratch_file() -> Any:
    """An unnamed file for a child's stderr that is read only once the child has finished (ast-grep's
    `--inspect` lines): it never fills, so the child never waits on its reader. In memory (memfd)
    where the system has it, so it costs no disk writes; else a temporary file. (rg's log, written in
    many small pieces, goes to a `LazyPipe` instead: cheaper per write.)"""
    if hasattr(os, "memfd_create"):
        with contextlib.suppress(OSError):
            return open(os.memfd_create("fermix-stderr", os.MFD_CLOEXEC), "w+b")
    import tempfile  # where there is no memfd; its import costs a search call about 2.5 ms otherwise

    return tempfile.TemporaryFile()


def _split_null(text: str) -> list[str]:
    return [_strip_dot(p) for p in text.split("\0") if p]


def messages(err: str) -> list[str]:
    """rg's stderr as its messages. Each starts a line with `rg: `; a line that does not continues the
    message before it: the rest of a path with a line break in its name, or of one of rg's own
    multi-line errors (a regex error's caret lines, a hint). Split on "\n" only: other line
    separators (\r, U+2028, ...) are ordinary characters in a file's name."""
    parts = err.split("\nrg: ")
    out = [parts[0], *("rg: " + m for m in parts[1:])]
    return [m.removesuffix("\n") for m in out if m.strip()]


# rg's warning for a line of an ignore file it cannot parse: `PATH: line N: error parsing glob '…': …`.
_BAD_RULE = re.compile(r"(?P<path>.*): line (?P<line>[0-9]+): (?P<error>error parsing glob .*)")


def ignore_file_warnings(msgs: list[str], root: str) -> tuple[list[BadIgnoreRule], list[str]]:
    """rg's messages split into the ignore-file lines it could not parse (a warning: rg goes on without
    that rule, and exits 2 only when the file is in a parent of the root) and the other messages.

    rg writes the bad lines of one directory's ignore files as one message, a line each (only the first
    starts with `rg: `); a line that does not end like that is part of the next one's path (a name with
    a line break). Paths are made absolute against `root` (rg's working directory); each rule once."""
    bad: list[BadIgnoreRule] = []
    rest: list[str] = []
    for msg in msgs:
        if "error parsing glob" not in msg or ": line " not in msg:
            rest.append(msg)
            continue
        pending: list[str] = []
        for ln in msg.removeprefix("rg: ").split("\n"):
            hit = _BAD_RULE.fullmatch(ln)
            if hit is None:
                pending.append(ln)
                continue
            path = _strip_dot("\n".join([*pending, hit["path"]]))
            rule = BadIgnoreRule(os.path.join(root, path), int(hit["line"]), hit["error"])
            if rule not in bad:
                bad.append(rule)
            pending = []
        if pending:  # not (only) bad rules: kept as rg's message
            rest.append(msg if len(pending) == msg.count("\n") + 1 else "rg: " + "\n".join(pending))
    return bad, rest


def _raise_for(err: str, target: str = ".") -> None:
    """rg exits 2 for per-file errors too (an unreadable file, `rg: ./path: …`) and for a bad line in an
    ignore file of a parent directory (a warning: rg searched without that rule): only a fatal error raises."""
    per_file = ("rg: ./", f"rg: {target}:")
    _, msgs = ignore_file_warnings(messages(err), ".")
    fatal = "\n".join(m for m in msgs if not m.startswith(per_file))
    if not fatal:
        return
    if any(sign in fatal for sign in _PATTERN_ERRORS):
        raise PatternError(_pattern_message(fatal))
    if "unrecognized file type" in fatal:
        raise ToolError(
            "invalid_type",
            f"{_tidy(fatal)}; use one of the names `rg --type-list` prints (py, rust, js, ...)",
            {},
        )
    if "glob" in fatal.lower():
        raise ToolError("invalid_glob", f"A glob was rejected by ripgrep: {_tidy(fatal)}", {})
    raise ToolError("search_failed", f"ripgrep failed: {_tidy(fatal)}", {"stderr": err[:2000]})


# How rg's messages about a pattern it cannot search begin or read (rg 14): a syntax error, a regex
# too big to compile, a literal line break, a NUL it could never match.
_PATTERN_ERRORS = (
    "regex parse error",
    "error parsing regex",
    "regex could not be compiled",
    "compiled regex exceeds size limit",
    "is not allowed in a regex",
    "but it is impossible to match",
)


def _pattern_message(err: str) -> str:
    """rg's message about a pattern, without the paragraphs after it, which suggest rg's own flags
    (`--multiline`, `--text`) that no fermix tool takes."""
    return _tidy(err.strip().split("\n\n", 1)[0])


def _tidy(err: str) -> str:
    return " ".join(ln.strip() for ln in err.strip().splitlines() if ln.strip())[:1000]


def _strip_dot(p: str) -> str:
    return p[2:] if p.startswith("./") else p


# ----- listing ---------------------------------------------------------------------------------


def list_files(
    scope: Scope, deadline: float, sandbox: Sandbox | None = None, *, skipped: set[str] | None = None
) -> tuple[list[str], RunStats]:
    """Every file rg would search below the root, relative to it, "/"-separated, in no set order.

    With Perforce rules and hidden files left out, one listing does both jobs: it includes hidden
    files (not hidden directories), which finds the `.p4ignore` files; hidden names are then dropped,
    and only when rule files turned up does rg list again with them. Given `skipped`, the entries
    the walk skipped are added to it (from rg's `--debug` log: the directories it never entered).
    """
    walk = skipped is not None
    mode = ["--files", "--null", *(["--debug"] if walk else [])]

    def listed(run: Run, paths: list[str]) -> tuple[list[str], RunStats]:
        if skipped is not None:
            skipped.update(run.skipped)
        return paths, run.stats

    if scope.p4 is None or scope.hidden:
        run = Run(scope, mode, deadline, sandbox, walk_log=walk)
        return listed(run, run.records())
    first = Run(scope, [*mode, "--hidden", "-g", "!.*/"], deadline, sandbox, p4_found=[], walk_log=walk)
    paths = first.records()
    names = set(scope.p4.ignore_names)
    found = [p for p in paths if p.rpartition("/")[2] in names]
    if found or scope.p4.global_files or _may_unhide(scope.root, paths):
        # With rule files, rg lists again with them; with an ignore rule that may bring a hidden entry
        # back (`!.github/`, which rg honours and the first listing's `!.*/` overrode), plainly.
        again = Run(scope, mode, deadline, sandbox, p4_found=found, walk_log=walk)
        return listed(again, again.records())
    return listed(first, [p for p in paths if "/." not in p and not p.startswith(".")])


def _may_unhide(root: str, listed: list[str]) -> bool:
    """Whether an ignore rule of a walk from `root` is a negation (`!rule`), which can bring back a
    hidden entry: those of the ignore files the listing holds (it includes hidden files), of the
    repository's own exclude file, and those from above the root (`rules_above`, as the walk gets them)."""
    names = frozenset(GIT_RULE_FILES)
    files = [os.path.join(root, rel) for rel in listed if rel.rpartition("/")[2] in names]
    files.append(os.path.join(root, ".git", "info", "exclude"))
    for path in files:
        text = read_bounded(path, MAX_RULE_BYTES)
        if text and any(line.lstrip().startswith("!") for line in text.splitlines()):
            return True
    return any(rule.text.startswith("!") for rule in rules_above(root, None, git_top(root)))


# ----- matching --------------------------------------------------------------------------------


class LineMatch(Record, frozen=True):
    line: int  # 1-based
    offset: int  # byte offset of the line in the file
    text: bytes  # the line, without its line ending
    spans: tuple[tuple[int, int], ...]  # match spans, byte offsets into `text`
    utf8: bool  # False: the line is not valid UTF-8 (`text` holds its raw bytes)


class LineSelection(Protocol):
    """Which of one file's matching lines (the first `keep`, in order) are worth decoding; the rest are
    counted. `wants(message, start, end)` sees one line's message, `message[start:end]` the line's text
    as rg's JSON has it (escaped); `wants_any` the texts of many lines at once, a line each (False:
    none of them is wanted); `took` is told of each line decoded, in order. The first `always` lines,
    and every line that is not UTF-8, are decoded without asking. Lines are decoded in batches, so
    `wants` may be asked about later lines before `took` hears of earlier ones: a selection must only
    ever skip lines that cannot matter given what it has been told.

    With `around` (Search's `selection_around`), the `around` matching lines before and after each line
    it wants are decoded too (a line's context rows may be matching lines of their own)."""

    always: int

    def wants(self, message: bytes, start: int, end: int) -> bool: ...

    def wants_any(self, texts: bytes) -> bool: ...

    def took(self, line: LineMatch) -> None: ...


class FileMatches(Record):
    path: str  # relative to the root, "/"-separated
    # The matching lines decoded so far, in order (see `lines`).
    decoded: list[LineMatch] = field(default_factory=list)
    # rg's messages for the matching lines after those, not decoded yet. Without a selection, a file's
    # lines are decoded only when asked for (`lines`): those no answer shows cost nothing but their count.
    pending: list[bytes] = field(default_factory=list)
    matched_lines: int = 0  # every matching line rg counted
    examined: int = 0  # matching lines looked at: the first `keep` (all, without `keep`)
    selection: LineSelection | None = None  # the one that chose `lines`, told of each in order
    binary: bool = False  # rg met a NUL after the first matches and stopped reading the file there
    bytes_searched: int = 0

    @property
    def lines(self) -> list[LineMatch]:
        """The matching lines, in order: the first `keep`, or those of them a selection wanted (every
        line among them that is not UTF-8 is decoded whatever the selection says)."""
        if self.pending:
            self.decoded += _line_matches(self.pending)
            self.pending = []
        return self.decoded

    @lines.setter
    def lines(self, value: list[LineMatch]) -> None:
        self.decoded, self.pending = value, []

    def any_not_utf8(self) -> bool:
        """Whether a line among `lines` is not UTF-8, without decoding those not decoded yet."""
        return any(not lm.utf8 for lm in self.decoded) or any(_BYTES_LINE in raw for raw in self.pending)


def _decode(obj: dict[str, Any]) -> tuple[bytes, bool]:
    if "text" in obj:
        return obj["text"].encode("utf-8", "surrogateescape"), True
    import base64  # only for text that is not UTF-8: a search that meets none does not pay its import

    return base64.b64decode(obj.get("bytes", "")), False


def _path(obj: dict[str, Any]) -> str:
    raw, ok = _decode(obj)
    return _strip_dot(raw.decode("utf-8") if ok else os.fsdecode(raw))


def _strip_eol(b: bytes) -> bytes:
    if b.endswith(b"\n"):
        b = b[:-1]
    if b.endswith(b"\r"):
        b = b[:-1]
    return b


_LINE_TEXT = b'"lines":{"text":"'
_LINE_END = b'"},"line_number":'
_MATCH_TAG = b'{"type":"match",'
_LINE_TAIL = re.compile(rb'"\},"line_number":[^\n]*')  # what follows a match message's text


SELECTED_BATCH = 16  # lines a selection wanted, decoded together (see Search._parse)


def decode_pending(files: list[FileMatches]) -> None:
    """Decode the lines `files` still hold as rg wrote them, all in one call into the decoder (an
    answer about to show many files' lines: one call each would cost more than the decoding)."""
    todo = [f for f in files if f.pending]
    if not todo:
        return
    lines = iter(_line_matches([raw for f in todo for raw in f.pending]))
    for f in todo:
        f.decoded += itertools.islice(lines, len(f.pending))
        f.pending = []


def _decode_json(data: bytes) -> Any:
    """rg's JSON (always UTF-8: what is not comes base64-encoded) decoded, without `json.loads`'s
    guess at the encoding of bytes."""
    return _JSON.decode(data.decode("utf-8", "surrogatepass"))


_JSON = json.JSONDecoder()


def _line_matches(raw: list[bytes]) -> list[LineMatch]:
    """rg's match messages (whole lines of its JSON) as LineMatches, in one call into the decoder."""
    out: list[LineMatch] = []
    for msg in _decode_json(b"[" + b",".join(raw) + b"]"):
        d = msg["data"]
        text, ok = _decode(d["lines"])
        subs = d["submatches"]
        spans = (
            ((subs[0]["start"], subs[0]["end"]),)
            if len(subs) == 1
            else tuple([(m["start"], m["end"]) for m in subs])
        )
        out.append(LineMatch(d["line_number"], d["absolute_offset"], _strip_eol(text), spans, ok))
    return out


# What a begin or end message holds before the file's path; what an end message holds after it. A
# string in rg's JSON escapes every quote it holds, so none of these can occur inside a path.
_BEGIN_HEAD = b'{"type":"begin","data":{"path":'
_END_HEAD = b'{"type":"end","data":{"path":'
_END_TAIL = re.compile(
    rb',"binary_offset":(null|[0-9]+),"stats":\{.*"bytes_searched":([0-9]+),.*"matched_lines":([0-9]+),'
)
_PLAIN_TEXT = b'{"text":"'
_BYTES_LINE = b'"lines":{"bytes":"'  # a match message for a line that is not UTF-8


def _begin_path(raw: bytes) -> str:
    """The path of a begin message, read without decoding the message: rg's `{"text":"…"}` with no
    escape in it holds the name's UTF-8 bytes as they are; anything else goes through the decoder."""
    obj = raw[len(_BEGIN_HEAD) : -2]
    if (
        raw.startswith(_BEGIN_HEAD)
        and raw.endswith(b"}}")
        and obj.startswith(_PLAIN_TEXT)
        and b"\\" not in obj
    ):
        return _strip_dot(obj[len(_PLAIN_TEXT) : -2].decode("utf-8"))
    return _path(json.loads(raw)["data"]["path"])


class _Messages:
    """rg's JSON messages read into FileMatches, a batch of whole lines at a time. A file's begin and end
    are read without the decoder; its matching lines are decoded at once for a selection (which is told
    of each in order), else kept as they are until asked for (`FileMatches.lines`)."""

    def __init__(self, keep: int | None, selecting: bool = False) -> None:
        self.keep = keep
        self.selecting = selecting  # every file has a selection (else none has)
        self.out: list[FileMatches] = []
        self.current: FileMatches | None = None
        self.selections: deque[LineSelection] = deque()  # of the files begun, not yet decoded
        self.taking: LineSelection | None = None  # the current file's
        self.bytes_searched = self.files_searched = 0

    def feed(self, batch: list[bytes]) -> None:
        # With selections, the lines they wanted (of every file in the batch) are decoded in one call, then
        # handed to their files' selections in order; without, each file's lines wait as rg wrote them.
        decoded = iter(_line_matches([r for r in batch if r[9:12] == b"mat"]) if self.selecting else ())
        current, taking = self.current, self.taking
        for raw in batch:
            tag = raw[9:12]
            if tag == b"mat":
                if self.selecting:
                    line = next(decoded)  # (taken in step with the batch, whatever becomes of it)
                    if current is not None and taking is not None:
                        current.decoded.append(line)
                        taking.took(line)
                elif current is not None:
                    current.pending.append(raw)
            elif tag == b"beg":
                taking = self.selections.popleft() if self.selections else None
                current = FileMatches(_begin_path(raw), selection=taking)
            elif tag == b"end":
                if current is None:
                    continue
                self._end(current, raw)
                current = None
            elif raw.endswith(b'"type":"summary"}'):
                st = _decode_json(raw)["data"].get("stats") or {}
                self.bytes_searched = int(st.get("bytes_searched", self.bytes_searched))
                self.files_searched = int(st.get("searches", 0))
        self.current, self.taking = current, taking

    def _end(self, current: FileMatches, raw: bytes) -> None:
        at = raw.rfind(b',"binary_offset":')
        tail = _END_TAIL.match(raw, at) if at > 0 and raw.startswith(_END_HEAD) else None
        if tail is not None:
            binary, searched, matched = tail[1] != b"null", int(tail[2]), int(tail[3])
        else:  # not as rg 14 writes it: read by the decoder
            d = json.loads(raw)["data"]
            st = d.get("stats") or {}
            binary = d.get("binary_offset") is not None
            searched = int(st.get("bytes_searched", 0))
            matched = int(st.get("matched_lines", len(current.decoded) + len(current.pending)))
        current.matched_lines = matched
        keep = self.keep
        current.examined = matched if keep is None else min(keep, matched)
        current.bytes_searched = searched
        self.bytes_searched += searched
        current.binary = binary
        self.out.append(current)


class Search:
    """`rg --json` over a scope: one FileMatches per file with a match.

    rg runs with `--debug`, whose log names every file rg met binary data in (`stats.binary`), the
    ones it skipped from their first block included, which `--json` itself does not report. With
    Perforce rules in play, the search itself finds the rule files: they are excluded by override
    globs (placed last, so they win), which rg logs as it walks past them; only when it saw one (or a
    global rule file is set) does the search run again with the translated rules. No second walk runs
    beside the search.
    """

    def __init__(
        self,
        scope: Scope,
        patterns: list[str],
        deadline: float,
        sandbox: Sandbox | None = None,
        *,
        fixed: bool = False,
        ignore_case: bool = False,
        smart_case: bool = False,
        keep: int | None = None,
        selection: Callable[[], LineSelection] | None = None,
        selection_around: int = 0,
        target: str = ".",
    ) -> None:
        # rg's own binary handling: a file with a NUL in the first block it reads is skipped (as
        # every grep does); one whose NUL comes later is searched up to it, and its end event says
        # where (`binary_offset`). Both are in the debug log, so both are counted.
        for pattern in patterns:
            why = pattern_problem(pattern)
            if why is not None:
                raise ToolError(
                    "invalid_pattern", f"the pattern {pattern[:80]!r} {why}", {"pattern": pattern[:200]}
                )
        args = ["--json", "--debug"]
        if fixed:
            args.append("--fixed-strings")
        if ignore_case:
            args.append("--ignore-case")
        elif smart_case:
            args.append("--smart-case")
        for p in patterns:
            args += ["-e", p]
        self.args = args
        self.scope = scope
        self.deadline = deadline
        self.sandbox = sandbox
        self.target = target
        self.keep = keep
        self.selection = selection  # a new one for each file: which of its first `keep` lines to decode
        self.selection_around = selection_around
        self.run = self._run(None)
        self.bytes_searched = 0
        self.files_searched = 0

    def _run(self, p4_found: list[str] | None) -> Run:
        args = self.args
        if self.scope.p4 is not None and p4_found is None:
            args = [*args, *(a for n in self.scope.p4.ignore_names for a in ("-g", f"!{_glob_escape(n)}"))]
        return Run(self.scope, args, self.deadline, self.sandbox, self.target, p4_found=p4_found or [])

    @property
    def stats(self) -> RunStats:
        return self.run.stats

    def stop(self) -> None:
        self.run.stop()

    def files(self) -> Iterator[FileMatches]:
        found = self._parse()
        st = self.run.stats
        if self.scope.p4 is not None and st.p4_seen and not (st.timed_out or st.stopped_early):
            seen = st.p4_seen
            if not all(os.path.isfile(os.path.join(self.scope.root, rel)) for rel in seen):
                # rg's log prints paths lossily (a name that is not UTF-8): list the rule files exactly.
                seen = self._list_p4_files()
            self.run = self._run(seen)
            found = self._parse()
        if self.target != "." and any(fm.binary for fm in found) and not (st.timed_out or st.stopped_early):
            found = self._named_file_as_walked()
        return iter(found)

    def _named_file_as_walked(self) -> list[FileMatches]:
        """The named file searched again as a walk meets it. rg searches a file named on its command
        line past its NUL bytes (binary data read as text); a walk stops at the first one, keeping the
        matches before it, or skips the file when none comes first. fermix's tools skip binary data
        wherever the file comes from, so the one file is walked to: from its directory, only it (its
        name as a literal glob, which overrides the ignore and hidden filters, as naming it does)."""
        walk = Scope(
            root=self.scope.root,
            hidden=True,
            respect_ignore=False,
            exclude_names=(),
            max_depth=1,
            globs=(literal_glob(self.target),),
        )
        self.run = Run(walk, self.args, self.deadline, self.sandbox)
        return self._parse()

    def _list_p4_files(self) -> list[str]:
        listing = Run(self.scope, [], self.deadline, self.sandbox)
        listing.full_args = _p4_prepass_args(self.scope, self.sandbox)
        return listing.records()

    def _parse(self) -> list[FileMatches]:
        """rg's JSON messages, decoded a batch at a time: the lines worth reading (a file's begin and
        end, its first `keep` matches or those of them the selection wants, the summary) are joined
        into one JSON array per chunk read, which costs one call into the decoder instead of one per
        line. With a selection, a batch is decoded as soon as it holds `SELECTED_BATCH` lines it
        wanted, so that what `took` learns from them shapes its answers about the lines after.

        A chunk of nothing but one file's matches, none of which can be decoded (past `keep`, or none
        the selection could want), is counted without looking at its lines one by one."""
        keep = self.keep
        new_selection = self.selection
        messages = _Messages(keep, new_selection is not None)
        kept = 0  # matches of the current file looked at so far
        chosen: LineSelection | None = None  # the current file's, as the lines are looked at
        around = self.selection_around
        skipped: deque[bytes] = deque(maxlen=around)  # the last lines skipped, since the last decoded
        ahead = 0  # lines still to decode after the last one wanted
        prefix = b""  # what every match message of the current file holds before its line's text
        always = 0  # the selection's: how many of a file's first lines it wants without being asked
        for whole in self._chunks_of_lines():
            n = 0 if ahead else whole.count(b"\n") + 1
            if n and whole.count(_MATCH_TAG) == n:  # only matches (no begin, end, summary): this file's
                if keep is not None and kept >= keep:
                    kept += n
                    continue
                if chosen is not None:
                    # Each line's text, when every one is UTF-8 (else `_MATCH_TAG` is left in).
                    texts = _LINE_TAIL.sub(b"", whole.replace(prefix, b""))
                    if _MATCH_TAG not in texts and not chosen.wants_any(texts):
                        kept += n
                        if around:
                            skipped.extend(whole.rsplit(b"\n", around)[-around:])
                        continue
            wanted: list[bytes] = []
            asked = 0  # lines the selection wanted in `wanted`
            for raw in whole.split(b"\n"):
                # rg prints `{"type":"begin"|"match"|"end",…}`, and the summary as `{"data":…,"type":"summary"}`.
                tag = raw[9:12]
                if tag == b"mat":
                    if keep is not None and kept >= keep:
                        continue
                    kept += 1
                    if chosen is not None and kept > always:
                        # The line's text as rg's JSON has it; a line that is not UTF-8 comes as
                        # `"lines":{"bytes":…}` and is always decoded (it is counted apart).
                        start = raw.find(_LINE_TEXT)
                        if start >= 0:
                            start += len(_LINE_TEXT)
                            end = raw.find(_LINE_END, start)
                            wants = chosen.wants(raw, start, end if end >= 0 else len(raw))
                        else:
                            wants = True
                        if not wants and not ahead:
                            if around:
                                skipped.append(raw)
                            continue
                        ahead = around if wants else ahead - 1
                        if skipped:  # decoded in order, before this line
                            wanted += skipped
                            skipped.clear()
                        asked += 1
                        if asked >= SELECTED_BATCH:
                            wanted.append(raw)
                            messages.feed(wanted)
                            wanted, asked = [], 0
                            continue
                elif tag == b"beg":
                    kept = ahead = 0
                    skipped.clear()
                    if new_selection is not None:
                        chosen = new_selection()
                        always = chosen.always
                        messages.selections.append(chosen)
                        # `{"type":"begin","data":{"path":P}}` -> `{"type":"match","data":{"path":P,"lines":{"text":"`
                        path = raw[raw.find(b'"path":') : -2]
                        prefix = b'{"type":"match","data":{' + path + b"," + _LINE_TEXT
                elif tag != b"end" and not raw.endswith(b'"type":"summary"}'):
                    continue  # context lines are not asked for; nothing else is worth a decode
                wanted.append(raw)
            if wanted:
                messages.feed(wanted)
        self.bytes_searched = messages.bytes_searched
        self.files_searched = messages.files_searched
        return messages.out

    def _chunks_of_lines(self) -> Iterator[bytes]:
        """rg's stdout as runs of whole lines (joined by line breaks, the last one's left off), one run
        per chunk read. rg ends every JSON message with a newline, so a last line without one was cut
        off by a kill (the deadline, or `stop`), and the run says so: it is dropped, not decoded."""
        partial: list[bytes] = []  # the pieces of a line not yet ended (a long line spans many reads)
        for chunk in self.run.chunks():
            end = chunk.rfind(b"\n")
            if end < 0:
                partial.append(chunk)  # joined once its end arrives: no copying per read
                continue
            whole = chunk[:end]
            if partial:
                partial.append(whole)
                whole = b"".join(partial)
                partial = []
            if end + 1 < len(chunk):
                partial.append(chunk[end + 1 :])
            yield whole


def argument_problem(text: str) -> str | None:
    """Why `text` cannot be passed to a program as an argument (a NUL byte), or None."""
    if "\x00" in text:
        return (
            "holds a NUL byte, which no program's argument can carry (and files holding one are binary, "
            "not searched); leave it out"
        )
    return None


def pattern_problem(pattern: str) -> str | None:
    """Why rg can take `pattern` neither as a regular expression nor as literal text, or None."""
    why = argument_problem(pattern)
    if why is not None:
        return why
    if "\n" in pattern:
        return "holds a line break; rg matches one line at a time, so search for each line on its own"
    return None


def check_pattern(pattern: str, *, fixed: bool = False, ignore_case: bool = False) -> str | None:
    """rg's error for one regular expression, or None when it compiles."""
    return check_patterns([pattern], fixed=fixed, ignore_case=ignore_case)


def check_patterns(patterns: list[str], *, fixed: bool = False, ignore_case: bool = False) -> str | None:
    """rg's error for a set of regular expressions searched together, or None when it compiles. rg
    joins them into one (`(?:a)|(?:b)`), so patterns that compile each on its own can still clash:
    two that name a capture group alike. With `ignore_case` as the search will run (case folding
    makes a regex bigger: one can pass the size limit only then)."""
    for pattern in patterns:
        why = pattern_problem(pattern)
        if why is not None:
            return f"the pattern {why}"
    args = [engines.rg(), "--no-config", "-q"]
    if fixed:
        args.append("-F")
    if ignore_case:
        args.append("-i")
    done = subprocess.run(
        [*args, *itertools.chain.from_iterable(("-e", p) for p in patterns), "--", "-"],
        input=b"",
        capture_output=True,
        timeout=10,
    )
    if done.returncode == 2:
        return _pattern_message(done.stderr.decode("utf-8", "replace"))
    return None


def matching_records(pattern: str, records: list[str], timeout: float) -> set[int]:
    """The indexes of `records` that rg's regex `pattern` (checked with `check_pattern`) matches,
    from one rg call: Rust's regex, so linear time and Unicode-aware, as rg has it for files.

    The records go to rg's standard input separated by NUL (`--null-data`), so one may hold line
    breaks (`.` still stops at them, `^`/`$` anchor at the record's ends); none may hold a NUL.
    Raises subprocess.TimeoutExpired past `timeout` seconds."""
    if not records:
        return set()
    done = subprocess.run(
        [engines.rg(), "--no-config", "--null-data", "-n", "-r", "", "-e", pattern, "--", "-"],
        input="\0".join(records).encode("utf-8") + b"\0",
        capture_output=True,
        timeout=timeout,
    )
    if done.returncode not in (0, 1):
        _raise_for(done.stderr.decode("utf-8", "replace"), "-")
    return {int(rec.partition(b":")[0]) - 1 for rec in done.stdout.split(b"\0") if rec}
