"""Content search and file listing on ripgrep: `rg --json` for matches, `rg --files` for candidates.

fermix keeps what is its own and lets rg do the walking and matching:
- the sandbox: rg runs in the (already checked, canonical) search root, protected entries and blocked
  roots that lie inside it are excluded with `--iglob '!…'` before rg reads anything, and every path
  rg returns is checked again by the caller (`Scope.allows`), hard links to protected files included;
- ignore rules: rg's own `.gitignore`/`.ignore`/`.rgignore` handling (`--no-require-git`, so a
  `.gitignore` counts outside a repository too), plus Perforce rule files, which rg does not know:
  a listing of the `P4IGNORE` files runs beside the search, and when it finds any, their rules are
  translated to root-relative gitignore lines and the search runs again with them (`--ignore-file`);
- symlinks are not followed; hidden files are included only when the caller asks.

A run has a wall-clock deadline: rg is killed (its process group) when it passes, and the run says so.
Nothing is read through a size cap: rg reads every file to its end.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ..errors import ToolError
from ..records import Record, field
from . import engines
from .p4ignore import MAX_RULE_BYTES, P4Rules, read_bounded, translate_rules

if TYPE_CHECKING:
    from ..sandbox import Sandbox

BASE_ARGS = ("--no-config", "--no-require-git")


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
    exclude_names: tuple[str, ...] = (".git",)  # never listed nor descended, at any depth
    p4: P4Rules | None = None
    max_depth: int | None = None
    globs: tuple[str, ...] = ()  # the caller's rg globs (`-g`)
    types: tuple[str, ...] = ()  # rg file types (`-t`)


class RunStats(Record):
    timed_out: bool = False
    stopped_early: bool = False  # the caller had enough and ended the run
    errors: list[str] = field(default_factory=list)  # per-path errors rg reported (unreadable, …)
    p4_files: int = 0
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


def _glob_escape(text: str) -> str:
    return "".join(f"[{c}]" if c in "*?[]{}\\!" else c for c in text)


def _scope_args(scope: Scope, sandbox: Sandbox | None) -> list[str]:
    args = [*BASE_ARGS]
    if scope.hidden:
        args.append("--hidden")
    if not scope.respect_ignore:
        args.append("--no-ignore")
    if scope.max_depth is not None:
        args += ["--max-depth", str(scope.max_depth)]
    for name in scope.exclude_names:
        args += ["-g", f"!{_glob_escape(name)}"]
    if scope.p4 is not None:
        for name in sorted(scope.p4.excluded_names):
            args += ["-g", f"!{_glob_escape(name)}"]
    for g in scope.globs:
        args += ["-g", g]
    for t in scope.types:
        args += ["-t", t]
    args += sandbox_globs(scope.root, sandbox)
    return args


def _p4_prepass_args(scope: Scope, sandbox: Sandbox | None) -> list[str]:
    assert scope.p4 is not None
    args = [*BASE_ARGS, "--files", "--null", "--hidden"]
    if not scope.hidden:
        args += ["-g", "!.*/"]  # hidden directories are not walked by the search either
    if scope.max_depth is not None:
        args += ["--max-depth", str(scope.max_depth)]
    for name in scope.exclude_names:
        args += ["-g", f"!{_glob_escape(name)}/"]
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
    rebased = f"/{base}/{pat.lstrip('/')}" if anchored else f"/{base}/**/{pat}"
    return ("!" if neg else "") + rebased


class Run:
    """One rg process over a scope, killed at the deadline. Iterate `lines()` once."""

    def __init__(
        self,
        scope: Scope,
        mode_args: list[str],
        deadline: float,
        sandbox: Sandbox | None = None,
        target: str = ".",
        p4_found: list[str] | None = None,
    ) -> None:
        self.scope = scope
        self.target = target  # "." (the root) or one file's name relative to it
        self.p4_found = p4_found  # the Perforce rule files, when the caller already knows them
        self.mode_args = mode_args
        self.deadline = deadline
        self.sandbox = sandbox
        self.stats = RunStats()
        self._proc: subprocess.Popen[bytes] | None = None
        self._ignore_file: str | None = None
        self._lock = threading.Lock()
        self._err: dict[int, Any] = {}

    # ----- process handling -------------------------------------------------------------------

    def _spawn(self, args: list[str]) -> subprocess.Popen[bytes]:
        err = tempfile.TemporaryFile()  # noqa: SIM115 - closed by _stderr once rg has finished
        try:
            proc = subprocess.Popen(
                [engines.rg(), *args, "--", self.target],
                cwd=self.scope.root,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=err,
                start_new_session=True,
            )
        except BaseException:
            err.close()
            raise
        self._err[proc.pid] = err
        return proc

    def _stderr(self, proc: subprocess.Popen[bytes]) -> str:
        """What rg wrote to stderr (at most 1 MiB); closes the file."""
        f = self._err.pop(proc.pid, None)
        if f is None:
            return ""
        try:
            f.seek(0)
            return f.read(1 << 20).decode("utf-8", "replace")
        finally:
            f.close()

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
        args = _scope_args(self.scope, self.sandbox) + self.mode_args
        if self.scope.p4 is None:
            return self._spawn(args)
        if self.p4_found is not None:
            return self._with_p4_rules(args, self.p4_found)
        pre = self._spawn(_p4_prepass_args(self.scope, self.sandbox))
        main = self._spawn(args)  # runs beside the listing; rerun only when rule files exist
        try:
            out, _ = pre.communicate(timeout=self._remaining())
        except subprocess.TimeoutExpired:
            self._kill(pre)
            pre.communicate()
            self._stderr(pre)
            self.stats.timed_out = True
            return main
        self._stderr(pre)
        found = [_strip_dot(os.fsdecode(p)) for p in out.split(b"\0") if p]
        if not found and not self.scope.p4.global_files:
            return main
        self._kill(main)
        main.communicate()
        self._stderr(main)
        return self._with_p4_rules(args, found)

    def _with_p4_rules(self, args: list[str], found: list[str]) -> subprocess.Popen[bytes]:
        assert self.scope.p4 is not None
        if not found and not self.scope.p4.global_files:
            return self._spawn(args)
        self.stats.p4_files = len(found)
        fd, self._ignore_file = tempfile.mkstemp(prefix="fermix-p4-", suffix=".ignore")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(p4_rules_text(self.scope.root, self.scope.p4, found))
        return self._spawn([*args, "--ignore-file", self._ignore_file])

    def records(self) -> list[str]:
        """All of a `--null` run's records, decoded at once, "./" dropped."""
        data = b"\0".join(self.lines())  # lines() has split the records already
        text = os.fsdecode(data) if data else ""
        return [_strip_dot(p) for p in text.split("\0") if p]

    def lines(self) -> Iterator[bytes]:
        """rg's stdout, line by line (or NUL-separated record by record with `--null`)."""
        proc = self._start()
        with self._lock:
            self._proc = proc
        timer = threading.Timer(self._remaining(), self._on_deadline)
        timer.daemon = True
        timer.start()
        eof = False
        try:
            assert proc.stdout is not None
            if "--null" in self.mode_args:
                buf = b""
                while chunk := proc.stdout.read1(1 << 16):  # type: ignore[attr-defined]
                    buf += chunk
                    *records, buf = buf.split(b"\0")
                    yield from records
                if buf:
                    yield buf
            else:
                yield from proc.stdout
            eof = True
        finally:
            self._finish(proc, timer, eof)

    def _finish(self, proc: subprocess.Popen[bytes], timer: threading.Timer, eof: bool) -> None:
        if not eof and not self.stats.timed_out:
            self.stop()
        proc.wait()
        timer.cancel()
        self.stats.returncode = proc.returncode
        err = self._stderr(proc)
        if self._ignore_file:
            with contextlib.suppress(OSError):
                os.unlink(self._ignore_file)
        if self.stats.timed_out or self.stats.stopped_early:
            return
        if proc.returncode == 2:
            _raise_for(err, self.target)
        self.stats.errors = [ln for ln in err.splitlines() if ln.startswith("rg: ")]


def _raise_for(err: str, target: str = ".") -> None:
    """rg exits 2 for per-file errors too (an unreadable file, `rg: ./path: …`): only a fatal error raises."""
    per_file = ("rg: ./", f"rg: {target}:")
    fatal = "\n".join(ln for ln in err.splitlines() if ln.strip() and not ln.startswith(per_file))
    if not fatal:
        return
    if (
        "regex parse error" in fatal
        or "error parsing regex" in fatal
        or "regex could not be compiled" in fatal
    ):
        raise PatternError(_tidy(fatal))
    if "unrecognized file type" in fatal:
        raise ToolError(
            "invalid_type",
            f"{_tidy(fatal)}; use one of the names `rg --type-list` prints (py, rust, js, ...)",
            {},
        )
    if "glob" in fatal.lower():
        raise ToolError("invalid_glob", f"A glob was rejected by ripgrep: {_tidy(fatal)}", {})
    raise ToolError("search_failed", f"ripgrep failed: {_tidy(fatal)}", {"stderr": err[:2000]})


def _tidy(err: str) -> str:
    return " ".join(ln.strip() for ln in err.strip().splitlines() if ln.strip())[:1000]


def _strip_dot(p: str) -> str:
    return p[2:] if p.startswith("./") else p


# ----- listing ---------------------------------------------------------------------------------


def list_files(scope: Scope, deadline: float, sandbox: Sandbox | None = None) -> tuple[list[str], RunStats]:
    """Every file rg would search below the root, relative to it, "/"-separated, in no set order.

    With Perforce rules and hidden files left out, one listing does both jobs: it includes hidden
    files (not hidden directories), which finds the `.p4ignore` files; hidden names are then dropped,
    and only when rule files turned up does rg list again with them.
    """
    mode = ["--files", "--null"]
    if scope.p4 is None or scope.hidden:
        run = Run(scope, mode, deadline, sandbox)
        return run.records(), run.stats
    first = Run(scope, [*mode, "--hidden", "-g", "!.*/"], deadline, sandbox, p4_found=[])
    paths = first.records()
    names = set(scope.p4.ignore_names)
    found = [p for p in paths if p.rpartition("/")[2] in names]
    if found or scope.p4.global_files:
        again = Run(scope, mode, deadline, sandbox, p4_found=found)
        return again.records(), again.stats
    return [p for p in paths if "/." not in p and not p.startswith(".")], first.stats


# ----- matching --------------------------------------------------------------------------------


class LineMatch(Record, frozen=True):
    line: int  # 1-based
    offset: int  # byte offset of the line in the file
    text: bytes  # the line, without its line ending
    spans: tuple[tuple[int, int], ...]  # match spans, byte offsets into `text`
    utf8: bool  # False: the line is not valid UTF-8 (`text` holds its raw bytes)


class FileMatches(Record):
    path: str  # relative to the root, "/"-separated
    lines: list[LineMatch] = field(default_factory=list)  # the first `keep` matching lines
    matched_lines: int = 0  # every matching line rg counted
    binary: bool = False  # rg met a NUL after the first matches and stopped reading the file there
    bytes_searched: int = 0


def _decode(obj: dict[str, Any]) -> tuple[bytes, bool]:
    if "text" in obj:
        return obj["text"].encode("utf-8", "surrogateescape"), True
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


class Search:
    """`rg --json` over a scope: one FileMatches per file with a match, as rg finishes each file."""

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
        target: str = ".",
    ) -> None:
        # rg's own binary handling: a file with a NUL in the first block it reads is skipped (as
        # every grep does); one whose NUL comes later is searched up to it, and its end event says
        # where (`binary_offset`), so the caller can say that the rest of it was not searched.
        args = ["--json"]
        if fixed:
            args.append("--fixed-strings")
        if ignore_case:
            args.append("--ignore-case")
        elif smart_case:
            args.append("--smart-case")
        for p in patterns:
            args += ["-e", p]
        self.keep = keep
        self.run = Run(scope, args, deadline, sandbox, target)
        self.bytes_searched = 0
        self.files_searched = 0

    @property
    def stats(self) -> RunStats:
        return self.run.stats

    def stop(self) -> None:
        self.run.stop()

    def files(self) -> Iterator[FileMatches]:
        current: FileMatches | None = None
        keep = self.keep
        loads = json.loads
        for raw in self.run.lines():
            if raw.startswith(b'{"type":"match"'):
                if current is None or (keep is not None and len(current.lines) >= keep):
                    continue
                d = loads(raw)["data"]
                text, ok = _decode(d["lines"])
                current.lines.append(
                    LineMatch(
                        d["line_number"],
                        d["absolute_offset"],
                        _strip_eol(text),
                        tuple((s["start"], s["end"]) for s in d["submatches"]),
                        ok,
                    )
                )
            elif raw.startswith(b'{"type":"begin"'):
                current = FileMatches(_path(loads(raw)["data"]["path"]))
            elif raw.startswith(b'{"type":"end"'):
                d = loads(raw)["data"]
                if current is None:
                    continue
                st = d.get("stats") or {}
                current.matched_lines = int(st.get("matched_lines", len(current.lines)))
                current.bytes_searched = int(st.get("bytes_searched", 0))
                self.bytes_searched += current.bytes_searched
                if d.get("binary_offset") is not None:
                    current.binary = True
                yield current
                current = None
            elif raw.startswith(b'{"type":"summary"'):
                st = loads(raw)["data"].get("stats") or {}
                self.bytes_searched = int(st.get("bytes_searched", self.bytes_searched))
                self.files_searched = int(st.get("searches", 0))


def check_pattern(pattern: str, *, fixed: bool = False) -> str | None:
    """rg's error for one regular expression, or None when it compiles."""
    args = [engines.rg(), "--no-config", "-q"]
    if fixed:
        args.append("-F")
    done = subprocess.run(
        [*args, "-e", pattern, "--", "-"],
        input=b"",
        capture_output=True,
        timeout=10,
    )
    if done.returncode == 2:
        return _tidy(done.stderr.decode("utf-8", "replace"))
    return None
