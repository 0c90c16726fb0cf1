"""Languages for ast_grep: names, file extensions, and parsing that never crashes the process.

ast-grep-py panics (a `BaseException` subclass, with a message on stderr) when asked for a language
it does not know, so only names from this table ever reach it. A pattern over 256 nodes is
refused (measured against the shared deadline); source trees are not measured: the parser's own
limits apply.
"""

from __future__ import annotations

import os
import tempfile
import time
from typing import Any

from ....core.errors import ToolError
from ....core.records import Record

MAX_TREE_NODES = 16_384
MAX_TREE_DEPTH = 64
MAX_PATTERN_NODES = 256

# The bundled CLI's own table (ast-grep 0.51, probed through its `--inspect entity` log: a test keeps the
# two equal), so what fermix counts as scanned or unsupported is what the CLI scans.
EXTENSIONS: dict[str, str] = {
    "rs": "rust",
    "ts": "typescript", "mts": "typescript", "cts": "typescript",
    "tsx": "tsx",
    "js": "javascript", "mjs": "javascript", "cjs": "javascript", "jsx": "javascript",
    "py": "python", "pyi": "python", "py3": "python", "bzl": "python",
    "go": "go",
    "kt": "kotlin", "kts": "kotlin", "ktm": "kotlin",
    "java": "java",
    "swift": "swift",
    "sh": "bash", "bash": "bash", "bats": "bash", "cgi": "bash", "command": "bash", "env": "bash",
    "fcgi": "bash", "ksh": "bash", "tmux": "bash", "tool": "bash", "zsh": "bash",
    "c": "c", "h": "c",
    "cc": "cpp", "cpp": "cpp", "cxx": "cpp", "hpp": "cpp", "hh": "cpp", "c++": "cpp", "cu": "cpp",
    "ino": "cpp",
    "cs": "csharp",
    "css": "css", "scss": "css",
    "dart": "dart",
    "ex": "elixir", "exs": "elixir",
    "hs": "haskell",
    "hcl": "hcl", "tf": "hcl", "tfvars": "hcl", "nomad": "hcl", "workflow": "hcl",
    "html": "html", "htm": "html", "xhtml": "html",
    "json": "json",
    "lua": "lua",
    "md": "markdown", "markdown": "markdown",
    "nix": "nix",
    "php": "php",
    "rb": "ruby", "rbw": "ruby", "gemspec": "ruby",
    "scala": "scala", "sc": "scala", "sbt": "scala",
    "sol": "solidity",
    "yml": "yaml", "yaml": "yaml",
    "zig": "zig",
}  # fmt: skip

LANGUAGES = frozenset(EXTENSIONS.values())
OUTLINE_LANGUAGES = frozenset(
    {"rust", "typescript", "tsx", "javascript", "python", "go", "kotlin", "java", "swift"}
)
ALIASES = {
    "rs": "rust", "ts": "typescript", "js": "javascript", "jsx": "javascript", "py": "python",
    "python3": "python", "golang": "go", "kt": "kotlin", "cs": "csharp", "c#": "csharp", "c++": "cpp",
    "rb": "ruby", "sh": "bash", "shell": "bash", "yml": "yaml", "sol": "solidity",
}  # fmt: skip


def normalize_language(raw: str) -> str:
    """A supported language name for `raw` (case-insensitive, common aliases), or invalid_language."""
    name = raw.strip().lower()
    name = ALIASES.get(name, name)
    if name not in LANGUAGES:
        raise ToolError(
            "invalid_language",
            f"Unknown language {raw!r}. Supported: {', '.join(sorted(LANGUAGES))}",
            {"language": raw, "supported": sorted(LANGUAGES)},
        )
    return name


def language_for_path(path: str) -> str | None:
    """The language a file's extension implies, or None for unknown file types."""
    base = path.rsplit("/", 1)[-1]
    if "." not in base:
        return None
    return EXTENSIONS.get(base.rsplit(".", 1)[-1].lower())


class TreeTooComplex(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class DeadlinePassed(Exception):
    """The shared cooperative deadline passed."""


def check_deadline(deadline: float) -> None:
    if time.monotonic() > deadline:
        raise DeadlinePassed()


def measure(root: Any, deadline: float, max_nodes: int, max_depth: int) -> int:
    """Count the nodes below `root`, refusing trees over the limits; checks the deadline per node."""
    count = 0
    stack = [(root, 1)]
    while stack:
        node, depth = stack.pop()
        count += 1
        if count > max_nodes:
            raise TreeTooComplex(f"more than {max_nodes} syntax nodes")
        if depth > max_depth:
            raise TreeTooComplex(f"syntax tree deeper than {max_depth}")
        check_deadline(deadline)
        stack.extend((child, depth + 1) for child in node.children())
    return count


def library_error(e: BaseException) -> str:
    """The first line of an ast-grep error, without its Rust backtrace."""
    text = str(e).split("Stack backtrace", 1)[0].strip()
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    last = lines[-1] if lines else type(e).__name__
    head, sep, rest = last.partition(": ")
    return rest if sep and head.isdigit() else last


class Parsed(Record):
    root: Any  # SgRoot
    nodes: int


def parse(source: str, language: str, deadline: float) -> Parsed:
    """Parse a whole file; raises TreeTooComplex or DeadlinePassed."""
    if language not in LANGUAGES:  # never hand ast-grep a name it would panic on
        raise ToolError("invalid_language", f"Unknown language {language!r}", {"language": language})
    from ast_grep_py import SgRoot

    check_deadline(deadline)
    return Parsed(SgRoot(source, language), 0)  # no node-count gate: the parser's own limits apply


def compile_pattern(pattern: str, language: str, deadline: float) -> str | None:
    """None when `pattern` is usable for `language`, else why not (too complex, not compilable, or
    parsed with an ERROR node, as the CLI warns)."""
    from ast_grep_py import SgRoot

    check_deadline(deadline)
    try:
        measure(SgRoot(pattern, language).root(), deadline, MAX_PATTERN_NODES, MAX_TREE_DEPTH)
    except TreeTooComplex as e:
        return f"pattern has {e.reason}"
    try:
        SgRoot("", language).root().find_all(pattern=pattern)
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as e:  # ast-grep raises RuntimeError, or panics (a BaseException)
        return library_error(e)
    return _error_node(pattern, language, deadline)


def _error_node(pattern: str, language: str, deadline: float) -> str | None:
    """The CLI's warning for a pattern that parses with an ERROR node (`foo($A`), or None.

    The library does not say, and only the CLI knows how it rewrites metavariables for each language
    before parsing, so the CLI is asked: run on empty input, it matches nothing and then warns."""
    import shutil
    import subprocess

    from ....core.search import engines

    conf_dir = private_config()
    try:
        done = subprocess.run(
            [engines.ast_grep(), "run", "-c", os.path.join(conf_dir, "sgconfig.yml"), f"--pattern={pattern}",
             f"--lang={language}", "--stdin"],
            input=b"",
            capture_output=True,
            cwd=conf_dir,
            timeout=max(deadline - time.monotonic(), 1.0),
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        raise DeadlinePassed() from None
    finally:
        shutil.rmtree(conf_dir, ignore_errors=True)
    said = done.stderr.decode("utf-8", "replace")
    if "contains an ERROR node" in said:
        return "pattern contains an ERROR node (it does not parse as one piece of code)"
    return None


def private_config() -> str:
    """A new directory holding fermix's own `sgconfig.yml` for the CLI (the caller removes it): no
    rule directories, and each extension of the table in any letter case (`*.[pP][yY]`), since the
    CLI's walk compares extensions by case while a file named to it is parsed whatever its case."""
    conf_dir = tempfile.mkdtemp(prefix="fermix-sg-")
    by_language: dict[str, list[str]] = {}
    for ext, lang in EXTENSIONS.items():
        glob = "".join(f"[{c.lower()}{c.upper()}]" if c.isalpha() else c for c in ext)
        by_language.setdefault(lang, []).append(f'"*.{glob}"')
    lines = ["ruleDirs: []", "languageGlobs:"]
    lines += [f"  {lang}: [{', '.join(globs)}]" for lang, globs in sorted(by_language.items())]
    with open(os.path.join(conf_dir, "sgconfig.yml"), "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    return conf_dir
