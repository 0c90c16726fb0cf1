"""ast_grep search on the ast-grep CLI: `ast-grep run --json=stream`, its own parallel walk and parser.

fermix adds what is its own around the engine:
- isolation: the CLI runs with a private empty `sgconfig.yml` (`-c`), so no project or ancestor
  config, custom language or rule file is loaded;
- the sandbox: protected entries and blocked roots inside the root are excluded with `--globs` before
  the CLI reads anything, and every match's file is checked again after;
- ignore rules as grep and find have them: `rg --files` lists the visible files beside the scan
  (Git, `.ignore` and Perforce rules, hidden files) and only matches in those files are kept;
- what the engine skipped (`--inspect entity`: non-UTF-8 files and the like), pattern errors per
  language present, a deadline (the process group is killed), and a stable order (path, offset).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from typing import Any, BinaryIO

from ....core.context import ToolContext
from ....core.fsops import FileReader
from ....core.records import Record, field
from ....core.search import engines
from ....core.search.names import escaped, is_utf8
from ....core.search.p4ignore import resolve_p4
from ....core.search.report import BadIgnoreRule
from ....core.search.ripgrep import Scope, list_files, scratch_file, unreadable_root
from ....core.search.walklog import lossy
from . import languages
from .stream import FileTally, MatchStream
from .workset import is_directory

# ast-grep's names for the languages it reports, lower-cased, to fermix's names.
CLI_LANGUAGE = {"tsx": "tsx", "typescript": "typescript", "javascript": "javascript", "c#": "csharp"}


class Scan(Record):
    # By language (fermix's name): the first `keep` matches (by path and offset; "file" made whole),
    # every match counted, the files they are in, and those whose replacement is over the cap.
    matches: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    totals: Counter[str] = field(default_factory=Counter)
    files_matched: Counter[str] = field(default_factory=Counter)
    oversized: Counter[str] = field(default_factory=Counter)
    bytes_read: int = 0  # by fermix: the file fed on stdin (the CLI reads a tree itself)
    languages: set[str] = field(default_factory=set)  # fermix names of the languages scanned
    skipped: Counter[str] = field(default_factory=Counter)
    skipped_files: list[dict[str, Any]] = field(default_factory=list)
    skipped_dirs: int = 0  # of the `unreadable` paths, the directories
    files_scanned: int = 0
    timed_out: bool = False
    errors: list[str] = field(default_factory=list)  # what else the CLI wrote to stderr
    unreadable: list[tuple[str, str]] = field(default_factory=list)  # (path, why) the walk could not read
    returncode: int = 0  # the CLI's: 0 matches, 1 none, anything else a failure (or a kill)
    refused: int = 0  # matches in files the sandbox or the ignore rules leave out (by design, silent)
    invalid_names: list[str] = field(default_factory=list)  # files with matches left out: not UTF-8
    unsupported: int = 0  # visible files of no language fermix knows
    bad_rules: list[BadIgnoreRule] = field(
        default_factory=list
    )  # ignore-file lines rg's listing could not parse


def _ci_glob(rel: str) -> str:
    """A glob for `rel` that matches any letter case (the sandbox compares case-insensitively)."""
    out = []
    for c in rel:
        if c.isalpha() and c.lower() != c.upper():
            out.append(f"[{c.lower()}{c.upper()}]")
        elif c in "*?[]{}\\!":
            out.append("\\" + c)  # not `[c]`: `[!]` opens a negated class that never closes
        else:
            out.append(c)
    return "".join(out)


def sandbox_globs(ctx: ToolContext, root: str) -> list[str]:
    sandbox = ctx.sandbox
    if not sandbox.needs_checks_below(root):
        return []
    prefix = root.rstrip("/") + "/"
    out: list[str] = []
    for entry in [*sandbox.protected, *sandbox.blocked_roots]:
        if entry.lower().startswith(prefix.lower()):
            rel = _ci_glob(entry[len(prefix) :].strip("/"))
            if rel:
                out += ["--globs", f"!/{rel}", "--globs", f"!/{rel}.*", "--globs", f"!/{rel}-*"]
    return out


def language_name(cli_name: str) -> str:
    low = cli_name.lower()
    return CLI_LANGUAGE.get(low, low)


def _messages(lines: Iterable[str]) -> Iterator[str]:
    """The CLI's stderr as its messages. A log message starts a line with `sg: ` or `ERROR: `, and a
    line that does not continues one whose file name has not ended (a name with a line break: the
    `: key=value` or `: why` tail is still to come), as `ripgrep.messages` reads rg's; the CLI's own
    warnings and errors, which have no such prefix, stay a line each."""
    message: str | None = None
    for line in lines:
        line = line.removesuffix("\n")
        if message is not None and _open(message) and not line.startswith(_LOG_PREFIXES):
            message += "\n" + line
            continue
        if message is not None:
            yield message.removesuffix("\r")
        message = line
    if message is not None:
        yield message.removesuffix("\r")


_LOG_PREFIXES = ("sg: ", "ERROR: ")
_ENTITY_TAIL = re.compile(r": (language|skipped)=\w+\r?$")


def _open(message: str) -> bool:
    """A log message whose file name has not ended yet."""
    if message.startswith("sg: entity|file|"):
        return _ENTITY_TAIL.search(message) is None
    return message.startswith("ERROR: ") and ": " not in message[len("ERROR: ") :]


def skip_reason(cli_reason: str) -> str:
    """fermix's snake_case name for one of the CLI's (camelCase) reasons for skipping a file."""
    known = SKIP_REASONS.get(cli_reason)
    return known if known is not None else re.sub(r"(?<!^)([A-Z])", r"_\1", cli_reason).lower()


def _parse_inspect(line: str, scan: Scan, names: Names | None, skipped_cap: int) -> None:
    # sg: entity|file|PATH: language=Python   /   sg: entity|file|PATH: skipped=invalidUtf8
    # ERROR: ./PATH: Permission denied (os error 13)   (the walk could not read a directory or file)
    if not line.startswith("sg: entity|file|"):
        if line.startswith("ERROR: "):
            path, _, why = line[len("ERROR: ") :].strip().rpartition(": ")
            rel = path.removeprefix("./")
            if names is not None and (found := names.resolve(rel)) is not None:
                names.logged.add(found)  # a file the walk could not read: counted as unreadable
            scan.unreadable.append((rel, why))
        elif line.strip() and not line.startswith("sg: "):
            scan.errors.append(line.strip())
        return
    body = line[len("sg: entity|file|") :]
    path, _, what = body.rpartition(": ")
    key, _, value = what.partition("=")
    rel = path.removeprefix("./")
    if names is not None:
        found = names.resolve(rel)
        if found is None:
            return  # ignored by the rules grep and find follow, or refused by the sandbox
        rel = found
        names.logged.add(rel)
    if key == "language":
        scan.languages.add(language_name(value))
        scan.files_scanned += 1
    elif key == "skipped" and value == "error":
        # The pattern does not compile for this file's language: reported per language, not per file.
        lang = languages.language_for_path(rel)
        if lang is not None:
            scan.languages.add(lang)
    elif key == "skipped" and value == "emptyFile":
        scan.files_scanned += 1  # nothing in it to match: not an omission
    elif key == "skipped":
        reason = skip_reason(value)
        scan.skipped[reason] += 1
        if len(scan.skipped_files) < skipped_cap:
            scan.skipped_files.append({"path": escaped(rel), "reason": reason})


# ast-grep's reasons for skipping a file, as fermix's search tools name them (others: snake_case).
# The ast-grep CLI's walk skips a file over 3,000,000 bytes (`fileTooLarge`); a file named as `path`
# goes to it on stdin, where it takes any size, so a big file can still be searched. But its parser
# holds about 150 bytes of memory per byte of source (measured with ast-grep 0.51: 640 MB for a 4.2 MB
# Python file, 1.27 GB for 8.4 MB), so a named file is parsed up to 16 MiB (some 2.5 GB) and reported
# past that, not handed over to exhaust the machine's memory.
NAMED_FILE_MAX_BYTES = 16 << 20

SKIP_REASONS = {"invalidUtf8": "invalid_utf8", "permissionDenied": "unreadable", "fileTooLarge": "too_large"}


class Names:
    """The files `rg --files` lists, and the names the CLI gives them: it shows a name that is not UTF-8
    with U+FFFD (lossily), so such a name is found by its lossy form."""

    def __init__(self, listed: set[str]) -> None:
        self.listed = listed
        self.lossy: dict[str, list[str]] = {}
        for rel in listed:
            if not is_utf8(rel):
                self.lossy.setdefault(lossy(rel), []).append(rel)
        self.logged: set[str] = set()  # listed names the CLI's log mentions

    def resolve(self, cli_name: str) -> str | None:
        """The listed name the CLI means (one of them, when several lossy names coincide), or None."""
        if cli_name in self.listed:
            return cli_name
        same = self.lossy.get(cli_name)
        return min(same) if same else None


def read_inspect(err: BinaryIO, scan: Scan, names: Names | None, skipped_cap: int) -> None:
    """ast-grep's `--inspect entity` log (a message per file), read to its end: a tree of any size is
    counted whole."""
    err.seek(0)
    for message in _messages(raw.decode("utf-8", "replace") for raw in err):
        _parse_inspect(message, scan, names, skipped_cap)


def run_scan(
    ctx: ToolContext,
    root: str,
    target: str,
    pattern: str,
    rewrite: str | None,
    language: str | None,
    deadline: float,
    skipped_cap: int,
    *,
    keep: int,
    replacement_cap: int,
) -> Scan:
    """Matches of `pattern` in `target` (a file name or "." below the directory `root`): every one
    counted, the first `keep` of each language (by path and byte offset) kept.

    One named file is read by fermix (no symlink followed) and fed to the CLI on stdin with its
    language, so its extension need not be one the CLI knows.
    """
    binary = engines.ast_grep()
    scan = Scan()
    if time.monotonic() >= deadline:
        scan.timed_out = True
        return scan
    stdin_data: bytes | None = None
    if target != ".":
        reader = FileReader()
        try:
            stdin_data, larger = reader.read(os.path.join(root, target), NAMED_FILE_MAX_BYTES)
            if larger:
                scan.skipped["too_large_to_parse"] += 1
                scan.skipped_files.append({"path": target, "reason": "too_large_to_parse"})
                return scan
        except PermissionError:  # skipped as a tree-wide scan skips such a file, not a disk failure
            scan.skipped["unreadable"] += 1
            scan.skipped_files.append({"path": target, "reason": "unreadable"})
            return scan
        finally:
            reader.close()
        try:
            stdin_data.decode("utf-8")
        except UnicodeDecodeError:
            scan.skipped["invalid_utf8"] += 1
            scan.skipped_files.append({"path": target, "reason": "invalid_utf8"})
            return scan
        scan.bytes_read = len(stdin_data)
    conf_dir = languages.private_config()
    # `--name=value`: a pattern or rewrite starting with `-` is never taken for an option.
    argv = [binary, "run", "-c", os.path.join(conf_dir, "sgconfig.yml"), f"--pattern={pattern}"]
    argv += ["--json=stream", "--inspect", "entity"]
    if language is not None:
        argv.append(f"--lang={language}")
    if rewrite is not None:
        argv.append(f"--rewrite={rewrite}")
    if stdin_data is not None:
        argv.append("--stdin")
    else:
        argv += sandbox_globs(ctx, root)
        argv += ["--", target]
    listing: dict[str, Any] = {}
    lister = None
    if target == ".":
        # The visible files, as grep and find see them, listed while the CLI scans.
        scope = Scope(root=root, p4=resolve_p4(root, home=ctx.os_home))

        def _list() -> None:
            try:
                listing["files"], listing["stats"] = list_files(scope, deadline, ctx.sandbox)
            except Exception as e:  # raised again by the caller, not printed by the thread
                listing["error"] = e

        lister = threading.Thread(target=_list, daemon=True)
        lister.start()
    sandbox = ctx.sandbox
    check = sandbox.needs_checks_below(root)
    named: list[Names | None] = []  # the listing as Names, once it is in (None: one file on stdin)
    links: list[bool] = []

    def listed_names() -> Names | None:
        """The listing, waited for the first time a match needs it (the CLI scans meanwhile)."""
        if not named:
            names: Names | None = None
            if lister is not None:
                lister.join(max(deadline - time.monotonic(), 0.0) + 1)
                if "files" in listing:
                    names = Names(set(listing["files"]))
                    scan.bad_rules = listing["stats"].bad_rules
                    if listing["stats"].timed_out:
                        scan.timed_out = True
                else:  # failed (raised after the CLI is done) or still running at the deadline
                    scan.timed_out = scan.timed_out or "error" not in listing
                    names = Names(set())
            named.append(names)
        return named[0]

    def judge(cli_name: str, match: dict[str, Any]) -> FileTally:
        """What becomes of one file's matches, decided at its first."""
        rel = target if stdin_data is not None else cli_name.removeprefix("./")
        lang = language_name(str(match.get("language", "")))
        names = listed_names()
        if names is not None:
            found = names.resolve(rel)
            if found is not None and not is_utf8(found):
                return FileTally(found, "unnamed", lang)
        if not links:
            links.append(sandbox.may_have_protected_links())
        full = os.path.join(root, rel)
        # Matches in files the ignore rules leave out (the CLI does not know Perforce's, or
        # .rgignore) or the sandbox refuses are dropped by design, and not named.
        if (names is not None and rel not in names.listed) or (
            (check and not sandbox.allows(full)) or (links[0] and sandbox.is_link_to_protected(full))
        ):
            return FileTally(rel, "refused", lang)
        return FileTally(rel, "ok", lang)

    stream = MatchStream(keep, judge, rewrite, replacement_cap)
    names: Names | None = None
    err = scratch_file()  # closed in the finally below
    proc: subprocess.Popen[bytes] | None = None
    try:
        try:
            proc = subprocess.Popen(
                argv,
                cwd=root,
                stdin=subprocess.DEVNULL if stdin_data is None else subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=err,
                start_new_session=True,
            )
        except PermissionError as e:
            raise unreadable_root(root, e) from None
        running = proc

        def _kill() -> None:
            if running.poll() is None:
                scan.timed_out = True
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(running.pid, signal.SIGKILL)

        timer = threading.Timer(max(deadline - time.monotonic(), 0.0), _kill)
        timer.daemon = True
        timer.start()
        assert proc.stdout is not None
        if stdin_data is not None:
            feeder = threading.Thread(target=_feed, args=(proc, stdin_data), daemon=True)
            feeder.start()
        for line in proc.stdout:
            if not line.endswith(b"\n"):
                break  # the CLI prints whole lines: this one was cut off by a kill at the deadline
            if line.strip():
                stream.add(line)
        scan.returncode = proc.wait()
        timer.cancel()
        names = listed_names()
        if "error" in listing:
            raise listing["error"]
        read_inspect(err, scan, names, skipped_cap)
    finally:
        if proc is not None and proc.poll() is None:  # an error while it ran: not left behind
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        err.close()
        shutil.rmtree(conf_dir, ignore_errors=True)
    for rel, why in scan.unreadable:
        full = os.path.join(root, rel)
        if check and not sandbox.allows(full):
            continue  # excluded before the walk; not named
        scan.skipped["unreadable"] += 1
        directory = is_directory(full)  # a directory the walk could not enter: not a file
        scan.skipped_dirs += directory
        if len(scan.skipped_files) < skipped_cap:
            entry = {"path": rel, "reason": "unreadable", "error": why}
            scan.skipped_files.append({**entry, "kind": "directory"} if directory else entry)
    if stdin_data is not None:
        scan.files_scanned = 1  # the CLI's log says nothing of its standard input
        if language is not None and scan.returncode in (0, 1):
            scan.languages.add(language)
    if names is not None:
        _check_coverage(scan, names, language, skipped_cap)
    unnamed: list[FileTally] = []  # matches in files whose names are not UTF-8, by name
    for tally in stream.files.values():
        if tally.fate == "ok":
            scan.totals[tally.language] += tally.count
            scan.files_matched[tally.language] += 1
            scan.oversized[tally.language] += tally.oversized
        elif tally.fate == "refused":
            scan.refused += tally.count
        else:
            unnamed.append(tally)
    for tally in sorted(unnamed, key=lambda t: t.rel):
        scan.invalid_names.append(tally.rel)
        scan.skipped["invalid_utf8_name"] += 1
        if len(scan.skipped_files) < skipped_cap:
            scan.skipped_files.append(
                {"path": escaped(tally.rel), "reason": "invalid_utf8_name", "matches": tally.count}
            )
    for lang in scan.totals:
        kept = scan.matches[lang] = []
        for key, m in stream.kept(lang):
            m["file"] = os.path.join(root, key[0])
            kept.append(m)
    return scan


def _check_coverage(scan: Scan, names: Names, language: str | None, skipped_cap: int) -> None:
    """Files unsupported (no language the CLI knows) and, as a guard against the CLI and the table
    drifting apart, listed files of a known language the CLI's log never mentions (`not_scanned`)."""
    below_unreadable = tuple(path.rstrip("/") + "/" for path, _ in scan.unreadable)  # counted there
    for rel in sorted(names.listed):
        lang = languages.language_for_path(rel)
        if lang is None:
            scan.unsupported += rel not in names.logged  # else the CLI knows it: it said so
        elif (
            rel not in names.logged
            and (language is None or lang == language)
            and not scan.timed_out
            and is_utf8(rel)  # counted with its matches (invalid_utf8_name), not here
            and not rel.startswith(below_unreadable)
        ):
            scan.skipped["not_scanned"] += 1
            if len(scan.skipped_files) < skipped_cap:
                scan.skipped_files.append({"path": rel, "reason": "not_scanned"})


def _feed(proc: subprocess.Popen[bytes], data: bytes) -> None:
    assert proc.stdin is not None
    try:
        proc.stdin.write(data)
        proc.stdin.close()
    except (BrokenPipeError, OSError):
        pass
