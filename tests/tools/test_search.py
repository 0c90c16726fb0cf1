"""glob_search and content_search on ripgrep: ignore rules, formats, caps and completeness."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from fermix_cli.core.errors import ToolError
from tests.conftest import Env


def tree(root: Path, files: dict[str, str | bytes]) -> None:
    for rel, content in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            p.write_bytes(content)
        else:
            p.write_text(content)


@pytest.fixture
def repo(world: Env) -> Path:
    tree(
        world.project,
        {
            ".git/HEAD": "ref: refs/heads/main\n",
            ".gitignore": "*.log\nbuild/\n!keep.log\n",
            "src/app.py": "import os\n\ndef main():\n    return 'needle'\n",
            "src/util.py": "NEEDLE = 1\n",
            "src/.hidden.py": "needle in a dotfile\n",
            "src/gen/.gitignore": "*.py\n!keep.py\n",
            "src/gen/out.py": "needle generated\n",
            "src/gen/keep.py": "needle kept\n",
            "build/x.py": "needle built\n",
            "debug.log": "needle logged\n",
            "keep.log": "needle kept log\n",
            "docs/a.md": "needle doc\n",
            "docs/.ignore": "private.md\n",
            "docs/private.md": "needle private\n",
            "img.bin": b"\x00\x01needle\x00",
        },
    )
    return world.project


def test_glob_honours_ignore_files_and_matches_dotfiles(repo: Path, invoke) -> None:
    r = invoke("glob_search", {"pattern": "**/*.py"})
    rel = [str(Path(p).relative_to(repo)) for p in r["paths"]]
    assert rel == ["src/.hidden.py", "src/app.py", "src/gen/keep.py", "src/util.py"]
    assert r["truncated"] is False and r["scan_complete"] is True
    logs = invoke("glob_search", {"pattern": "*.log"})
    assert [Path(p).name for p in logs["paths"]] == ["keep.log"]


def test_glob_star_stays_in_one_directory(repo: Path, invoke) -> None:
    r = invoke("glob_search", {"pattern": "*.py", "path": "src"})
    assert [Path(p).name for p in r["paths"]] == [".hidden.py", "app.py", "util.py"]
    r = invoke("glob_search", {"pattern": "src/*.{py,md}"})
    assert len(r["paths"]) == 3
    r = invoke("glob_search", {"pattern": "docs/**"})
    assert [Path(p).name for p in r["paths"]] == [".ignore", "a.md"]


def test_glob_results_are_sorted_absolute_and_capped(world: Env, invoke) -> None:
    tree(world.project, {f"f{i:04d}.txt": "x" for i in range(1200)})
    r = invoke("glob_search", {"pattern": "*.txt", "max_results": 5000})
    assert len(r["paths"]) == 1000 and r["truncated"] is True  # clamped to 1000
    assert r["complete"] is False and r["total_matched"] == 1200
    assert r["omitted"] == [
        {
            "reason": "max_results",
            "count": 200,
            "unit": "path",
            "how": "1200 paths matched; raise max_results (at most 1000) or narrow the pattern or path",
        }
    ]
    assert r["paths"] == sorted(r["paths"]) and all(p.startswith("/") for p in r["paths"])
    r = invoke("glob_search", {"pattern": "*.txt", "max_results": 0})
    assert len(r["paths"]) == 1  # clamped to 1
    assert invoke("glob_search", {"pattern": "nothing-*"})["paths"] == []


def test_glob_returns_only_regular_files(world: Env, invoke) -> None:
    tree(world.project, {"d/inner.txt": "x"})
    assert [Path(p).name for p in invoke("glob_search", {"pattern": "*"})["paths"]] == []


def test_content_search_literal_by_default(repo: Path, invoke) -> None:
    r = invoke("content_search", {"pattern": "needle"})
    got = sorted((str(Path(m["path"]).relative_to(repo)), m["line"], m["text"]) for m in r["matches"])
    assert got == [
        ("docs/a.md", 1, "needle doc"),
        ("keep.log", 1, "needle kept log"),
        ("src/.hidden.py", 1, "needle in a dotfile"),
        ("src/app.py", 4, "    return 'needle'"),
        ("src/gen/keep.py", 1, "needle kept"),
    ]
    assert r["truncated"] is False and r["total_matches"] == 5
    # img.bin (a NUL first) is binary: not searched, as by rg and every grep, and the answer says so.
    assert r["complete"] is False and [(o["reason"], o["count"]) for o in r["omitted"]] == [("binary", 1)]
    assert r["omitted"][0]["how"].endswith(f"(e.g. {repo / 'img.bin'})")
    r = invoke("content_search", {"pattern": "needle.*"})
    assert r["matches"] == []


def test_content_search_regex_and_invalid_regex(repo: Path, invoke) -> None:
    r = invoke("content_search", {"pattern": r"^NEEDLE = \d$", "regex": True})
    assert [(Path(m["path"]).name, m["line"]) for m in r["matches"]] == [("util.py", 1)]
    with pytest.raises(ToolError) as e:
        invoke("content_search", {"pattern": "(unclosed", "regex": True})
    assert e.value.code == "invalid_regex"


def test_content_search_single_file_root_and_trimmed_text(world: Env, invoke) -> None:
    tree(world.project, {"one.txt": "a  \nb needle   \n"})
    r = invoke("content_search", {"pattern": "needle", "path": "one.txt"})
    assert r["matches"] == [{"path": str(world.project / "one.txt"), "line": 2, "text": "b needle"}]


def test_content_search_truncates_at_max_results(world: Env, invoke) -> None:
    tree(world.project, {"many.txt": "hit\n" * 50})
    r = invoke("content_search", {"pattern": "hit", "max_results": 7})
    assert len(r["matches"]) == 7 and r["truncated"] is True
    assert r["total_matches"] == 50 and r["omitted"][0]["count"] == 43
    assert [m["line"] for m in r["matches"]] == list(range(1, 8))


def test_content_search_deadline_is_an_error(world: Env, invoke, monkeypatch, tmp_path: Path) -> None:
    # rg's regexes are linear-time, so an engine that never answers stands in for a search that runs
    # past its deadline (a FIFO named as path is skipped at once, as grep skips it).
    from fermix_cli.core.search import engines

    stuck = tmp_path / "rg-that-never-answers"
    stuck.write_text("#!/bin/sh\nexec sleep 30\n")
    stuck.chmod(0o755)
    monkeypatch.setattr(engines, "rg", lambda: str(stuck))
    tree(world.project, {"a.txt": "x\n"})
    with pytest.raises(ToolError) as e:
        invoke("content_search", {"pattern": "x", "timeout_ms": 200})
    assert e.value.code == "timeout"


def test_content_search_one_hit_per_line(world: Env, invoke) -> None:
    tree(world.project, {"dup.txt": "x x x\ny\nx\n"})
    r = invoke("content_search", {"pattern": "x"})
    assert [m["line"] for m in r["matches"]] == [1, 3]
    r = invoke("content_search", {"pattern": "x|y", "regex": True})
    assert [m["line"] for m in r["matches"]] == [1, 2, 3]


def test_search_roots_must_exist(world: Env, invoke) -> None:
    for tool in ("glob_search", "content_search"):
        with pytest.raises(ToolError) as e:
            invoke(tool, {"pattern": "x", "path": "nope"})
        assert e.value.code == "not_found"


def test_ancestor_gitignore_applies_when_searching_a_subdirectory(repo: Path, invoke) -> None:
    tree(repo, {"src/trace.log": "needle in log\n"})
    r = invoke("content_search", {"pattern": "needle", "path": "src"})
    assert not any(m["path"].endswith("trace.log") for m in r["matches"])


def test_content_search_case_insensitive_and_unicode_classes(world: Env, invoke) -> None:
    tree(world.project, {"u.txt": "Ärger über Straße\nplain ascii\n"})
    r = invoke("content_search", {"pattern": "ärger", "case_insensitive": True})
    assert [m["line"] for m in r["matches"]] == [1]
    r = invoke("content_search", {"pattern": r"\bStra\w+e\b", "regex": True})
    assert [m["text"] for m in r["matches"]] == ["Ärger über Straße"]  # \w is Unicode-aware
    r = invoke("content_search", {"pattern": "ärger"})
    assert r["matches"] == [] and r["complete"] is True


def test_glob_name_prefilter_never_drops_a_match(world: Env, invoke) -> None:
    """rg narrows the listing by file name (a file type built from the pattern's last component);
    the answer must equal the full glob matched over rg's whole listing, for names rg's globs and
    fermix's could read differently."""
    import subprocess

    from fermix_cli.core.search import engines
    from fermix_cli.core.search.globpat import basename_globs, compile_glob

    names = ["a.py", "b.PY", ".dot.py", "sp ace.py", "ü.py", "x.pyi", "a+b@c%d=e~f.py", "py", "t-1.txt"]
    tree(world.project, {f"{d}{n}": "x" for d in ("", "sub/", "sub/deep/") for n in names})
    tree(world.project, {".gitignore": "ignored.py\n", "ignored.py": "x", "sub/ignored.py": "x"})
    (world.project / os.fsdecode(b"bad\xff.py")).write_text("x")
    listed = subprocess.run(
        [engines.rg(), "--no-config", "--no-require-git", "--hidden", "-g", "!.git", "--files", "--null"],
        cwd=world.project,
        capture_output=True,
        check=True,
    ).stdout
    rels = [os.fsdecode(p) for p in listed.split(b"\0") if p and b"\xff" not in p]  # not UTF-8: left out
    patterns = ["*.py", "**/*.py", "**/*.{py,pyi}", "sub/**/a*", "**/*y", "**/py", "**/*+b@*", "**/sp ace.py"]
    patterns += ["**/[ab].py", "**/?.py", "**/*.P[Yy]", "sub/*/*.txt"]
    for pattern in patterns:
        rx = compile_glob(pattern)
        want = sorted(str(world.project / r) for r in rels if rx.match(r))
        got = invoke("glob_search", {"pattern": pattern, "max_results": 1000})["paths"]
        assert got == want and want, pattern
    assert basename_globs("**/*.{py,pyi}") == ["*.py", "*.pyi"]
    assert basename_globs("**/[ab].py") is None and basename_globs("src/**") is None


def _rg_glob(root: Path, pattern: str) -> list[str]:
    """What the whole walk gives: rg's listing from the root (as glob_search runs it), matched whole."""
    import subprocess

    from fermix_cli.core.search import engines
    from fermix_cli.core.search.globpat import compile_glob

    args = [engines.rg(), "--no-config", "--no-require-git", "--hidden", "-g", "!.git", "--files", "--null"]
    listed = subprocess.run(args, cwd=root, capture_output=True, check=True).stdout
    rx = compile_glob(pattern)
    return sorted(str(root / r) for r in (os.fsdecode(p) for p in listed.split(b"\0") if p) if rx.match(r))


def test_glob_literal_prefix_gives_the_answer_of_the_whole_walk(world: Env, invoke) -> None:
    """A pattern's literal directories (`build/` in `build/*.py`) are where rg starts, but the answer
    is the whole walk's: ignore rules from above apply to them, symlinks are not followed, `.git` is
    never listed, and every answer has the same fields."""
    tree(
        world.project,
        {
            ".gitignore": "build/\n",
            ".git/HEAD": "ref: refs/heads/main\n",
            "build/a.py": "x",
            "sub/build/b.py": "x",
            "real/a.py": "x",
            "a/.gitignore": "/deep/\n",
            "a/deep/x.py": "x",
            "a/b.py": "x",
        },
    )
    tree(world.root, {"outside/o.py": "x"})
    os.symlink(world.project / "real", world.project / "link")
    os.symlink(world.root / "outside", world.project / "out")
    fields = set(invoke("glob_search", {"pattern": "**/*.py"}))
    patterns = ["build/*.py", "sub/build/*.py", "link/*.py", "out/*", ".git/*", "a/deep/*.py", "a/deep/**"]
    patterns += ["real/*.py", "a/*.py", "./a/*.py", "nope/*.py", "real/a.py/x", "a/**/*.py"]
    for pattern in patterns:
        r = invoke("glob_search", {"pattern": pattern})
        assert r["paths"] == _rg_glob(world.project, pattern), pattern
        assert set(r) == fields and r["total_matched"] == len(r["paths"]) and r["complete"], pattern
    assert invoke("glob_search", {"pattern": "real/*.py"})["paths"] == [str(world.project / "real/a.py")]


def test_glob_literal_prefix_keeps_rules_with_paths_from_above(world: Env, invoke) -> None:
    """A rule naming a path deeper than the prefix (`/src/lib/gen/` in the root's .gitignore) is one
    rg would not apply in a walk started at `src/`: the answer is still the root walk's."""
    tree(world.project, {".gitignore": "/src/lib/gen/\n", "src/lib/gen/g.py": "x", "src/lib/a.py": "x"})
    for pattern in ("src/**/*.py", "src/*/gen/*.py", "src/lib/**/*.py", "src/lib/gen/*.py", "**/*.py"):
        r = invoke("glob_search", {"pattern": pattern})
        assert r["paths"] == _rg_glob(world.project, pattern), pattern
    assert invoke("glob_search", {"pattern": "src/**/*.py"})["paths"] == [str(world.project / "src/lib/a.py")]


def test_glob_literal_prefix_with_an_ignore_file_too_long_to_read_walks_from_the_root(
    world: Env, invoke
) -> None:
    """An ignore file above the prefix that is too long to read whole may hold a rule with a path past
    what was read: the answer is then the root walk's (never the prefix shortcut on a guess)."""
    filler = "".join(f"unused-{n}.tmp\n" for n in range(80_000))  # over 1 MiB of plain rules
    tree(
        world.project,
        {".gitignore": filler + "/src/lib/gen/\n", "src/lib/gen/g.py": "x", "src/lib/a.py": "x"},
    )
    assert invoke("glob_search", {"pattern": "src/**/*.py"})["paths"] == [str(world.project / "src/lib/a.py")]


def test_glob_literal_prefix_the_sandbox_refuses_is_an_error(world: Env, invoke) -> None:
    world.fermix_home.mkdir()
    (world.fermix_home / "config.toml").write_text(
        f'[sandbox]\nmode = "open"\nblocked_roots = ["{world.project / "keys"}"]\n'
    )
    tree(world.project, {"keys/id.txt": "k", "notes/id.txt": "n"})
    assert invoke("glob_search", {"pattern": "**/id.txt"})["paths"] == [str(world.project / "notes/id.txt")]
    with pytest.raises(ToolError) as e:
        invoke("glob_search", {"pattern": "keys/*.txt"})
    assert e.value.code == "blocked_root"


def test_names_that_are_not_utf8_are_counted_never_shown_lossily(world: Env, invoke) -> None:
    """A name that is not UTF-8 cannot be carried by JSON text or a tool argument: it is left out,
    counted in `omitted` and named with \\xNN escapes, never shown with U+FFFD (a file that does not
    exist) in a complete answer."""
    tree(world.project, {"good.txt": "needle\n", os.fsdecode(b"bad\xffname.txt"): "needle\nneedle\n"})
    tree(world.project, {os.fsdecode(b"d\xfe/x.txt"): "needle\n", os.fsdecode(b"z\xfe.bin"): b"\0needle"})
    r = invoke("content_search", {"pattern": "needle"})
    assert [m["path"] for m in r["matches"]] == [str(world.project / "good.txt")]
    assert r["complete"] is False and r["total_matches"] == 1
    gap = {o["reason"]: o for o in r["omitted"]}
    assert (gap["invalid_utf8_name"]["count"], gap["invalid_utf8_name"]["unit"]) == (3, "match")
    how = gap["invalid_utf8_name"]["how"]
    assert f"{world.project}/bad\\xffname.txt, {world.project}/d\\xfe/x.txt" in how
    # rg's log names binary files lossily: such a name in the sample is marked.
    assert f"{world.project}/z\ufffd.bin (its name is not UTF-8;" in gap["binary"]["how"]
    r = invoke("glob_search", {"pattern": "**/*.txt"})
    assert r["paths"] == [str(world.project / "good.txt")] and r["total_matched"] == 1
    (gap,) = r["omitted"]
    assert (gap["reason"], gap["count"], gap["unit"]) == ("invalid_utf8_name", 2, "path")
    # What the CLI prints is UTF-8 (text=True decodes it strictly) and says the same.
    out = world.tool("glob_search", {"pattern": "**/*.txt"})
    assert out.code == 0 and out.json()["omitted"] == r["omitted"]
    text = world.run("tool", "glob_search", "--text", "--pattern", "**/*.txt").stdout
    assert "[incomplete: 2 paths left out (invalid_utf8_name);" in text and "\ufffd" not in text
