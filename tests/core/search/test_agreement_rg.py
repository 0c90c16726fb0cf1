"""Agreement with ripgrep itself: fermix's grep, content_search, glob_search and find return what `rg`
returns for the same question on generated trees, with the same counts, and say when they are
complete.

The reference is the rg fermix runs (`engines.rg()`), called directly with the flags fermix's scope
means: `--no-config --no-require-git`, `.git` and `target/` excluded for grep, hidden files included
for content_search. Binary files are handled as rg handles them; when rg stops reading a file at a
NUL byte after its first matches (it warns on stderr), fermix says so in the answer.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from fermix_cli.core.search import engines
from tests.conftest import Env, unreadable

GREP_FLAGS = ("--no-config", "--no-require-git", "-g", "!.git", "-g", "!target/")


def rg(root: Path, *args: str) -> list[str]:
    done = subprocess.run(
        [engines.rg(), *args], cwd=root, capture_output=True, text=True, stdin=subprocess.DEVNULL
    )
    assert done.returncode in (0, 1), done.stderr
    return [ln for ln in done.stdout.splitlines() if ln]


def rg_hits(root: Path, *args: str) -> set[tuple[str, int]]:
    """(path, line) of every matching line, from `rg -n --no-heading --with-filename`."""
    out = set()
    for ln in rg(root, *GREP_FLAGS, "-n", "--no-heading", "--with-filename", *args):
        if ": WARNING: " in ln:  # rg's note on a binary file it stopped searching
            continue
        path, line, _ = ln.split(":", 2)
        out.add((path.removeprefix("./"), int(line)))
    return out


def all_raw_hits(invoke: Any, args: dict[str, Any]) -> tuple[set[tuple[str, int]], dict[str, Any]]:
    """Every hit of a raw grep, paging through with offset (500 a page)."""
    hits: set[tuple[str, int]] = set()
    offset = 0
    while True:
        r = invoke("grep", {**args, "mode": "raw", "limit": 500, "offset": offset})
        hits |= {(h["path"], h["line"]) for h in r["hits"]}
        if not r["has_more"]:
            return hits, r
        offset = r["next_offset"]


def write(root: Path, files: dict[str, str | bytes]) -> None:
    for rel, content in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))


MIXED = {
    "src/a.py": "def alpha():\n    return 'Straße'\nALPHA = 1\n",
    "src/b.rs": 'fn alpha() {}\n// ÄLPHA in caps\nlet x = "αβγ";\n',
    "src/deep/c.txt": "alphabet soup\nnothing\nAlpha Centauri\n",
    "docs/readme.md": "# Alpha\nsee alpha() for details\n",
    "unicode.txt": "naïve café\nΣίσυφος\n日本語のテキスト\n",
    "crlf.txt": "alpha\r\nbeta\r\n",
    "noeol.txt": "last alpha",
    "bin/blob.bin": b"alpha\x00\x01\x02",
    "target/skip.rs": "fn alpha() {}\n",
    ".hidden/h.py": "alpha = 1\n",
}


@pytest.mark.parametrize(
    ("patterns", "extra", "rg_args"),
    [
        (["alpha"], {}, ["-e", "alpha"]),
        (["alpha", "Centauri"], {}, ["-e", "alpha", "-e", "Centauri"]),
        ([r"fn \w+\(\)"], {}, ["-e", r"fn \w+\(\)"]),
        ([r"^\w+ \w+$"], {}, ["-e", r"^\w+ \w+$"]),  # \w is Unicode: naïve café, Alpha Centauri
        ([r"\p{Greek}+"], {}, ["-e", r"\p{Greek}+"]),
        ([r"[\p{Han}\p{Hiragana}]{3}"], {}, ["-e", r"[\p{Han}\p{Hiragana}]{3}"]),
        (["alpha"], {"case_insensitive": True}, ["-i", "-e", "alpha"]),
        (["straße"], {"case_insensitive": True}, ["-i", "-e", "straße"]),
        (["alpha"], {"type": ["py"]}, ["-t", "py", "-e", "alpha"]),
        (["alpha"], {"glob": ["*.md", "src/deep/**"]}, ["-g", "*.md", "-g", "src/deep/**", "-e", "alpha"]),
        (["alpha"], {"glob": ["!src/**"]}, ["-g", "!src/**", "-e", "alpha"]),
    ],
)
def test_grep_agrees_with_rg(
    world: Env, invoke: Any, patterns: list[str], extra: dict[str, Any], rg_args: list[str]
) -> None:
    write(world.project, MIXED)
    want = rg_hits(world.project, *rg_args)
    got, last = all_raw_hits(invoke, {"patterns": patterns, **extra})
    assert got == want and want
    assert last["primary_total"] == len(want) and last["total_exact"] is True
    ranked = invoke("grep", {"patterns": patterns, **extra, "limit": 500})
    assert ranked["hits_total"] == len(want)


def test_content_search_agrees_with_rg(world: Env, invoke: Any) -> None:
    write(world.project, MIXED)
    for pattern, regex, ci, args in [
        ("alpha", False, False, ["-F", "-e", "alpha"]),
        ("alpha()", False, False, ["-F", "-e", "alpha()"]),
        (r"\bAlpha\b", True, False, ["-e", r"\bAlpha\b"]),
        ("ALPHA", False, True, ["-F", "-i", "-e", "ALPHA"]),
    ]:
        want = {
            (ln.split(":", 2)[0].removeprefix("./"), int(ln.split(":", 2)[1]))
            for ln in rg(
                world.project, "--no-config", "--no-require-git", "--hidden", "-n", "--with-filename", *args
            )
        }
        r = invoke("content_search", {"pattern": pattern, "regex": regex, "case_insensitive": ci})
        got = {(str(Path(m["path"]).relative_to(world.project)), m["line"]) for m in r["matches"]}
        assert got == want and r["total_matches"] == len(want), pattern
        # bin/blob.bin is binary from its first bytes: rg does not search it, and the answer says so.
        assert r["complete"] is False
        [binary] = r["omitted"]
        assert (binary["reason"], binary["count"]) == ("binary", 1)
        assert (
            "1 holds binary data from the start (a NUL byte) and was not searched" in binary["how"]
            and "bin/blob.bin" in binary["how"]
        )


IGNORES = {
    ".gitignore": "*.log\nbuild/\n!keep.log\n/rootonly.txt\n",
    "keep.log": "hit\n",
    "drop.log": "hit\n",
    "rootonly.txt": "hit\n",
    "sub/rootonly.txt": "hit\n",
    "build/out.txt": "hit\n",
    "sub/.gitignore": "*.txt\n!want.txt\n",
    "sub/want.txt": "hit\n",
    "sub/other.txt": "hit\n",
    "sub/inner/.gitignore": "!other.txt\n",
    "sub/inner/other.txt": "hit\n",
    "sub/inner/x.md": "hit\n",
    "vend/.ignore": "*.md\n",
    "vend/a.md": "hit\n",
    "vend/b.py": "hit\n",
    ".ignore": "!drop.log\n",  # .ignore outranks .gitignore
}


def test_ignore_files_agree_with_rg(world: Env, invoke: Any) -> None:
    write(world.project, IGNORES)
    want_files = set(rg(world.project, "--no-config", "--no-require-git", "--files", "-g", "!.git"))
    assert "drop.log" in want_files and "sub/other.txt" not in want_files
    assert "sub/inner/other.txt" in want_files and "vend/a.md" not in want_files
    got, _ = all_raw_hits(invoke, {"patterns": ["hit"]})
    assert {p for p, _ in got} == want_files
    found = invoke("find", {"query": "t", "limit": 200})
    listed = set(rg(world.project, "--no-config", "--no-require-git", "--files"))
    assert {r["path"] for r in found["results"]} == {p for p in listed if "t" in p.lower()}
    globbed = invoke("glob_search", {"pattern": "**/*.txt"})
    # (rg's own `-g '*.txt'` would whitelist ignored files too: the glob is matched on rg's listing.)
    hidden_too = rg(world.project, "--no-config", "--no-require-git", "--hidden", "--files")
    want_txt = {p for p in hidden_too if p.endswith(".txt")}
    assert {str(Path(p).relative_to(world.project)) for p in globbed["paths"]} == want_txt


@pytest.mark.parametrize("p4_rules", [False, True])
def test_hidden_entries_an_ignore_rule_brings_back_are_found_as_rg_lists_them(
    world: Env, invoke: Any, p4_rules: bool
) -> None:
    """A negation in an ignore file (`!.github/`) brings a hidden entry back into rg's walk. find's
    listing (which also looks for Perforce rule files) lists exactly what rg lists, whether or not
    the tree holds a rule file; it used to drop such entries unless one turned up."""
    files = {
        ".github/ci.py": "print(2)\n",
        ".hidden/no.py": "print(3)\n",
        ".eslintrc.js": "x\n",
        ".other.js": "x\n",
        "a.py": "print(1)\n",
        ".gitignore": "!.github/\n!.eslintrc.js\n",
    }
    if p4_rules:
        files["x/.p4ignore"] = "nothing.txt\n"
    write(world.project, files)
    listed = set(rg(world.project, "--no-config", "--no-require-git", "--files"))
    assert {".github/ci.py", ".eslintrc.js", "a.py"} <= listed and ".hidden/no.py" not in listed
    found = invoke("find", {"query": ".", "limit": 200})  # every listed name holds a dot
    assert all("." in p for p in listed)
    assert {r["path"] for r in found["results"]} == listed and found["complete"] is True
    ci = invoke("find", {"query": "ci"})
    assert [r["path"] for r in ci["results"]] == [".github/ci.py"]


def test_symlinks_are_not_followed_as_rg_does(world: Env, invoke: Any) -> None:
    write(world.project, {"real/a.txt": "hit\n", "top.txt": "hit\n"})
    os.symlink(world.project / "real", world.project / "dirlink")
    os.symlink(world.project / "top.txt", world.project / "filelink.txt")
    want = rg_hits(world.project, "-e", "hit")
    got, _ = all_raw_hits(invoke, {"patterns": ["hit"]})
    assert got == want == {("real/a.txt", 1), ("top.txt", 1)}
    assert {r["path"] for r in invoke("find", {"query": "a"})["results"]} == {"real/a.txt"}


def rg_binary_files(root: Path, *args: str) -> set[str]:
    """The files rg's own debug log says it met binary data in (a NUL byte), for a search."""
    done = subprocess.run(
        [engines.rg(), *args, "--debug"], cwd=root, capture_output=True, text=True, stdin=subprocess.DEVNULL
    )
    out = set()
    for ln in done.stderr.splitlines():
        if "found binary data at offset" in ln:
            out.add(ln.split(": ignoring ", 1)[1].rsplit(": found binary", 1)[0].removeprefix("./"))
    return out


def test_binary_files_are_left_out_as_rg_does_and_every_one_is_counted(world: Env, invoke: Any) -> None:
    write(
        world.project,
        {
            "text.txt": "hit\n",
            "head.bin": b"\x00hit\n",
            "late.bin": b"hit\n" + b"y" * 100_000 + b"\x00",
            "nomatch.bin": b"\x00\x01\x02",
            "sub/deep.dat": b"\x00\x00",
            "ignored/x.bin": b"\x00",
            ".gitignore": "ignored/\n",
        },
    )
    want = rg_hits(world.project, "-e", "hit")
    got, last = all_raw_hits(invoke, {"patterns": ["hit"]})
    # rg prints late.bin's first line (its NUL is past the first block rg reads) and stops there;
    # head.bin, nomatch.bin and sub/deep.dat are binary from their first block, so rg does not search
    # them at all (and --json does not mention them): fermix counts all four, as rg's log has them.
    assert got == want == {("text.txt", 1), ("late.bin", 1)}
    binary = rg_binary_files(world.project, *GREP_FLAGS, "-e", "hit")
    assert binary == {"head.bin", "late.bin", "nomatch.bin", "sub/deep.dat"}
    assert last["skipped"]["binary"] == len(binary) and last["complete"] is False
    [omission] = last["omitted"]
    assert (omission["reason"], omission["count"], omission["unit"]) == ("binary", 4, "file")
    assert "3 hold binary data from the start (a NUL byte) and were not searched" in omission["how"]
    assert "1 was searched only up to a NUL byte after the first matches" in omission["how"]
    assert "rg -a" in omission["how"] and "head.bin, late.bin, nomatch.bin" in omission["how"]
    assert "[incomplete: 4 files left out (binary)" in last["output"]
    cs = invoke("content_search", {"pattern": "hit"})
    assert [(o["reason"], o["count"]) for o in cs["omitted"]] == [("binary", 4)]
    # A text-only tree is complete: no binary file, nothing to report.
    (world.project / "head.bin").unlink()
    (world.project / "late.bin").unlink()
    (world.project / "nomatch.bin").unlink()
    (world.project / "sub/deep.dat").unlink()
    assert invoke("grep", {"patterns": ["hit"]})["complete"] is True
    assert invoke("content_search", {"pattern": "hit"})["complete"] is True


@pytest.mark.parametrize("tool", ["grep", "content_search"])
def test_a_binary_file_named_as_path_is_read_as_a_walk_reads_it(world: Env, invoke: Any, tool: str) -> None:
    """rg reads a file named on its command line past its NUL bytes, as text; fermix's search tools
    skip binary data wherever the file comes from, so a named file gets the walk's answer: no lines
    from after a NUL (none of them with a NUL in it), the same count and the same note."""
    files = {
        "head.bin": b"\x00\x01PNG\nhit after the NUL\n",
        "late.bin": b"hit\n" + b"y" * 100_000 + b"\n\x00hit after\nhit again\n",
        "mixed.bin": b"hit\x00hit\nhit\n",
        "clean.bin": b"no nul here, hit\n",
    }
    write(world.project, files)

    def lines(r: dict[str, Any]) -> list[tuple[str, int, str]]:
        if tool == "grep":
            return [(os.path.basename(h["path"]), h["line"], h["text"]) for h in r["hits"]]
        return [(os.path.basename(m["path"]), m["line"], m["text"]) for m in r["matches"]]

    def ask(path: str | None) -> dict[str, Any]:
        args: dict[str, Any] = {"patterns": ["hit"], "mode": "raw"} if tool == "grep" else {"pattern": "hit"}
        return invoke(tool, {**args, "path": path} if path else args)

    whole = ask(None)
    assert lines(whole) == [("clean.bin", 1, "no nul here, hit"), ("late.bin", 1, "hit")]
    for name in files:
        r = ask(name)
        assert lines(r) == [x for x in lines(whole) if x[0] == name], name
        assert all("\x00" not in x[2] for x in lines(r))
        assert r["complete"] is (name == "clean.bin"), name
        if name != "clean.bin":
            [o] = r["omitted"]
            assert (o["reason"], o["count"]) == ("binary", 1)
            why = "after the first matches" if name == "late.bin" else "from the start"
            assert why in o["how"], (name, o["how"])


def test_the_binary_count_does_not_depend_on_the_log_pipe_s_size(
    world: Env, invoke: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """rg's log goes to a pipe enlarged to 1 MiB where the system allows it and is drained every
    10 ms: with the pipe held to one page, a log of 600 binary files (about 60 KiB) fills it over and
    over, rg waits for each drain, and still every binary file is counted and the matches are the same."""
    from fermix_cli.core.search import ripgrep

    files: dict[str, str | bytes] = {"a.txt": "hit\n", "c.bin": b"hit\n" + b"y" * 100_000 + b"\x00"}
    files.update({f"bin/{i:04d}-{'x' * 40}.dat": b"\x00hit\n" for i in range(599)})
    write(world.project, files)
    enlarged = invoke("content_search", {"pattern": "hit"})
    monkeypatch.setattr(ripgrep, "_PIPE_SIZE", 4096)
    small = invoke("content_search", {"pattern": "hit"})
    for r in (enlarged, small):
        assert [(o["reason"], o["count"]) for o in r["omitted"]] == [("binary", 600)]
        assert r["complete"] is False
    assert enlarged["matches"] == small["matches"] != []


def test_a_binary_count_past_the_log_s_cap_says_it_is_a_floor(
    world: Env, invoke: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """rg's log is kept to a cap (64 MiB, some 500,000 binary files): past it the count is what the
    log named before the cap, and grep and content_search say there are more, never a plain number."""
    from fermix_cli.core.search import ripgrep

    files: dict[str, str | bytes] = {"a.txt": "hit\n"}
    files.update({f"bin/{i:04d}-{'x' * 40}.dat": b"\x00hit\n" for i in range(300)})
    write(world.project, files)
    monkeypatch.setattr(ripgrep, "_LOG_CAP", 8 << 10)  # about 60 of the 300 lines
    for r, text in (
        (invoke("content_search", {"pattern": "hit"}), None),
        (grep := invoke("grep", {"patterns": ["hit"]}), "output"),
    ):
        [binary] = [o for o in r["omitted"] if o["reason"] == "binary"]
        assert 0 < binary["count"] < 300 and r["complete"] is False
        assert binary["how"].startswith(
            f"at least {binary['count']:,} files: rg's log of binary files passed"
        )
        if text:
            assert "at least" in r[text]
    assert grep["hits"][0]["path"] == "a.txt"  # the text file is found all the same


def test_perforce_rule_files_are_found_by_the_search_itself(world: Env, invoke: Any) -> None:
    """No listing runs beside the search: the rule files are seen as rg walks past them (also with a
    caller's exclusion globs), and the search runs again with their rules."""
    write(
        world.project,
        {
            "keep.txt": "hit\n",
            "scratch.txt": "hit\n",
            "sub/p4ignore.txt": "*.txt\n!keep2.txt\n",
            "sub/drop.txt": "hit\n",
            "sub/keep2.txt": "hit\n",
            "other/.p4ignore": "gone.py\n",
            "other/gone.py": "hit\n",
            "other/stay.py": "hit\n",
        },
    )
    for args in ({}, {"glob": ["!*.md"]}, {"case_insensitive": True}):
        got, last = all_raw_hits(invoke, {"patterns": ["hit"], **args})
        assert got == {("keep.txt", 1), ("scratch.txt", 1), ("sub/keep2.txt", 1), ("other/stay.py", 1)}, args
        assert last["complete"] is True
    # The rule file itself is searched, as any text file is, when its rules do not exclude it.
    (world.project / "sub/p4ignore.txt").write_text("drop.txt\n# hit\n")
    got, _ = all_raw_hits(invoke, {"patterns": ["hit"]})
    assert ("sub/p4ignore.txt", 2) in got and ("sub/drop.txt", 1) not in got


@pytest.mark.slow
def test_a_200_mb_file_is_searched_to_both_ends(world: Env, invoke: Any) -> None:
    big = world.project / "big.txt"
    block = (b"filler line of text that never matches\n" * 26_000)[: 1 << 20]
    block = block[: block.rfind(b"\n") + 1]
    with open(big, "wb") as f:
        f.write(b"needle at the start\n")
        for _ in range(200):
            f.write(block)
        f.write(b"needle at the end\n")
    try:
        want = rg_hits(world.project, "-e", "needle")
        got, last = all_raw_hits(invoke, {"patterns": ["needle"]})
        assert got == want and len(want) == 2
        assert last["scan_complete"] is True and last["complete"] is True
        assert last["bytes_scanned"] == big.stat().st_size > 200_000_000
        r = invoke("content_search", {"pattern": "needle"})
        assert [m["line"] for m in r["matches"]] == sorted(line for _, line in want)
        assert r["complete"] is True
    finally:
        big.unlink()


@pytest.mark.slow
def test_100_000_entries_in_one_directory(world: Env, invoke: Any) -> None:
    d = world.project / "flat"
    d.mkdir()
    markers = {7, 50_000, 99_999}
    for i in range(100_000):
        fd = os.open(d / f"f{i}", os.O_WRONLY | os.O_CREAT, 0o644)
        if i in markers:
            os.write(fd, b"marker\n")
        os.close(fd)
    want = rg_hits(world.project, "-e", "marker")
    got, last = all_raw_hits(invoke, {"patterns": ["marker"]})
    assert got == want == {(f"flat/f{i}", 1) for i in markers}
    assert last["complete"] is True
    r = invoke("find", {"query": "f99999"})
    assert r["results"][0]["path"] == "flat/f99999" and r["entries_scanned"] == 100_000
    assert r["scan_complete"] is True
    g = invoke("glob_search", {"pattern": "flat/f9999?"})
    assert len(g["paths"]) == 10 and g["complete"] is True


def _remove_chain(top: Path, depth: int) -> None:
    """Remove top/d/d/…/d (depth levels) and its files bottom-up; rmtree would recurse once per level."""
    rel = "/".join(["d"] * depth)
    for level in range(depth, 0, -1):
        d = top / "/".join(["d"] * level) if level < depth else top / rel
        for name in os.listdir(d):
            if name != "d":
                os.unlink(d / name)
        os.rmdir(d)


@pytest.mark.slow
def test_1000_levels_of_nesting(world: Env, invoke: Any) -> None:
    rel = "/".join(["d"] * 1000)
    deep = world.project / rel
    fd = os.open(world.project, os.O_RDONLY)
    for _ in range(1000):  # pathlib's mkdir(parents=True) recurses once per level
        os.mkdir("d", dir_fd=fd)
        inner = os.open("d", os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = inner
    out = os.open("bottom.txt", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
    os.write(out, b"deep marker\n")
    os.close(out)
    os.close(fd)
    try:
        want = rg_hits(world.project, "-e", "deep marker")
        got, _ = all_raw_hits(invoke, {"patterns": ["deep marker"]})
        assert got == want == {(f"{rel}/bottom.txt", 1)}
        r = invoke("find", {"query": "bottom"})
        assert r["results"][0]["path"] == f"{rel}/bottom.txt"
        g = invoke("glob_search", {"pattern": "**/bottom.txt"})
        assert g["paths"] == [str(deep / "bottom.txt")]
    finally:
        _remove_chain(world.project, 1000)


def test_nested_perforce_rule_files_apply_below_their_directory(
    world: Env, invoke: Any, monkeypatch: Any
) -> None:
    # rg does not know .p4ignore: fermix translates each file's rules to root-relative gitignore lines.
    for var in ("P4IGNORE", "P4CONFIG", "P4ENVIRO"):
        monkeypatch.delenv(var, raising=False)
    write(
        world.project,
        {
            "a.tmp": "hit\n",
            "keep.log": "hit\n",
            "sub/.p4ignore": "*.tmp\n/only_here.txt\n!keep.tmp\n",
            "sub/b.tmp": "hit\n",
            "sub/keep.tmp": "hit\n",
            "sub/only_here.txt": "hit\n",
            "sub/deeper/only_here.txt": "hit\n",
            "sub/deeper/c.tmp": "hit\n",
        },
    )
    got, _ = all_raw_hits(invoke, {"patterns": ["hit"]})
    assert {p for p, _ in got} == {"a.tmp", "keep.log", "sub/keep.tmp", "sub/deeper/only_here.txt"}
    found = invoke("find", {"query": "tmp"})
    assert {r["path"] for r in found["results"]} == {"a.tmp", "sub/keep.tmp"}


def test_only_a_directory_named_target_is_skipped(world: Env, invoke: Any) -> None:
    """grep skips the `target/` build directory, not a file that happens to be named `target`."""
    write(
        world.project,
        {"target": "hit\n", "sub/target": "hit\n", "deep/target/in.txt": "hit\n", "x.txt": "hit\n"},
    )
    got, last = all_raw_hits(invoke, {"patterns": ["hit"]})
    assert got == rg_hits(world.project, "-e", "hit") == {("target", 1), ("sub/target", 1), ("x.txt", 1)}
    assert last["complete"] is True


def test_perforce_rules_below_a_directory_whose_name_holds_glob_characters(
    world: Env, invoke: Any, monkeypatch: Any
) -> None:
    for var in ("P4IGNORE", "P4CONFIG", "P4ENVIRO"):
        monkeypatch.delenv(var, raising=False)
    files: dict[str, str | bytes] = {}
    for d in ("x[1]", "br{a,b}", "st*r", "plain"):
        files |= {f"{d}/.p4ignore": "*.log\n", f"{d}/a.log": "hit\n", f"{d}/keep.txt": "hit\n"}
    write(world.project, files)
    got, _ = all_raw_hits(invoke, {"patterns": ["hit"]})
    assert {p for p, _ in got} == {"x[1]/keep.txt", "br{a,b}/keep.txt", "st*r/keep.txt", "plain/keep.txt"}
    assert invoke("find", {"query": "a.log"})["results"] == []


def test_names_with_line_breaks_do_not_confuse_the_reading_of_rg_s_log(world: Env, invoke: Any) -> None:
    """rg's stderr names paths raw, so a name with a line break spans two lines of its log: the hidden
    file rg notes it skipped, a binary file, must not read as an error or lose their names."""
    write(
        world.project,
        {
            ".h\nidden": "hit\n",
            "rg: fake": "hit\n",
            "bin\nary.dat": b"hit\x00\x01",
            "new\nline.txt": "hit\n",
            "sep\u2028arated\rname.txt": "hit\n",
        },
    )
    got, last = all_raw_hits(invoke, {"patterns": ["hit"]})
    assert {p for p, _ in got} == {"rg: fake", "new\nline.txt", "sep\u2028arated\rname.txt"}
    assert [(o["reason"], o["count"]) for o in last["omitted"]] == [("binary", 1)]
    assert "bin\\x0aary.dat" in last["omitted"][0]["how"]  # a note is one line: the name is escaped
    found = invoke("content_search", {"pattern": "hit"})
    shown = {os.path.relpath(m["path"], world.project) for m in found["matches"]}
    assert shown == {".h\nidden", "rg: fake", "new\nline.txt", "sep\u2028arated\rname.txt"}
    assert [o["reason"] for o in found["omitted"]] == ["binary"]


def test_an_unreadable_directory_with_a_line_break_in_its_name(
    world: Env, invoke: Any, monkeypatch: Any, tmp_path: Path
) -> None:
    write(world.project, {"ok.txt": "hit\n", "lock\ned/in.txt": "hit\n"})
    with unreadable(monkeypatch, "rg", tmp_path, world.project / "lock\ned"):
        results = [invoke("grep", {"patterns": ["hit"]}), invoke("find", {"query": "txt"})]
    for r in results:
        (o,) = r["omitted"]
        assert (o["reason"], o["count"]) == ("unreadable", 1) and "lock\\x0aed: Permission denied" in o["how"]


@pytest.mark.parametrize("pattern", ["a\x00b", "two\nlines"])
def test_a_pattern_rg_cannot_take_at_all_is_a_typed_error(world: Env, invoke: Any, pattern: str) -> None:
    from fermix_cli.core.errors import ToolError

    write(world.project, {"a.txt": "a b\n"})
    for tool, args in (("grep", {"patterns": [pattern]}), ("content_search", {"pattern": pattern})):
        for extra in ({}, {"regex": True} if tool == "content_search" else {"mode": "raw"}):
            with pytest.raises(ToolError) as e:
                invoke(tool, {**args, **extra})
            assert e.value.code == "invalid_pattern", (tool, extra)
            assert ("NUL" if "\x00" in pattern else "line break") in e.value.message


@pytest.mark.parametrize("pattern", ["[a-z&&[^aeiou]]{3}", "[[a-c][x-z]]{2}", "fo{1, 2}", "fo{ 1 , 2 }"])
def test_regexes_rg_takes_as_written_are_not_repaired(world: Env, invoke: Any, pattern: str) -> None:
    write(world.project, {"r.txt": "bcd\naei\nfoo\nxyz\nabc\n"})
    got, last = all_raw_hits(invoke, {"patterns": [pattern]})
    assert got == rg_hits(world.project, "-e", pattern) and got
    assert last["matchers"][0]["kind"] == "regex"


def test_regexes_that_clash_only_together_are_searched_without_their_group_names(
    world: Env, invoke: Any
) -> None:
    """rg joins a set of patterns into one regex, where two capture groups of one name clash (it was a
    crash): the groups lose their names (`regex_repaired`, the source shown), so every pattern still
    matches as the regex it is, as rg finds each one alone."""
    write(world.project, {"a.txt": "run\npass\nid=12\nname=bob\n<a\n"})
    patterns = ["(?P<n>ru)n", "(?<n>pa)ss", "(?P<v>\\d+)", "(?P<v>[a-z]+b)", "[(?P<x>]a"]
    r = invoke("grep", {"patterns": patterns, "mode": "raw"})
    kinds = [(m["kind"], m.get("repaired")) for m in r["matchers"]]
    assert kinds == [
        ("regex_repaired", "(ru)n"),
        ("regex_repaired", "(pa)ss"),
        ("regex_repaired", "(\\d+)"),
        ("regex_repaired", "([a-z]+b)"),
        ("regex", None),  # `(?P<x>` inside a class is no group
    ]
    want: set[tuple[str, int]] = set()
    for p in patterns:
        want |= rg_hits(world.project, "-e", p)
    got, _ = all_raw_hits(invoke, {"patterns": patterns})
    assert got == want == {("a.txt", n) for n in (1, 2, 3, 4, 5)}


@pytest.mark.parametrize(
    ("pattern", "why"),
    [
        ("run\\n", 'the literal "\\n" is not allowed in a regex'),
        ("\\w{3000}", "compiled regex exceeds size limit"),
        ("a\\x00", 'pattern contains "\\0" but it is impossible to match'),
    ],
)
def test_every_regex_rg_refuses_is_a_pattern_error(world: Env, invoke: Any, pattern: str, why: str) -> None:
    """Not only syntax errors: each regex rg will not search falls back to a literal in grep and is
    `invalid_regex` in content_search, with rg's reason and none of its advice on flags fermix lacks."""
    from fermix_cli.core.errors import ToolError

    write(world.project, {"a.txt": "run\\n here\n"})
    r = invoke("grep", {"patterns": [pattern], "mode": "raw"})
    (m,) = r["matchers"]
    assert m["kind"] == "literal_fallback" and why in m["error"] and "--" not in m["error"]
    assert r["primary_total"] == len(rg_hits(world.project, "-F", "-e", pattern))
    with pytest.raises(ToolError) as e:
        invoke("content_search", {"pattern": pattern, "regex": True})
    assert e.value.code == "invalid_regex" and why in e.value.message
    assert "--multiline" not in e.value.message and "--text" not in e.value.message


def test_a_gitignore_above_a_repository_hides_nothing_inside_it(world: Env, invoke: Any) -> None:
    """As in Git (and rg's default), a repository's ignore rules start at its top: `*` in the
    `.gitignore` of a directory above it (a home directory's, say) leaves every search inside complete.
    Outside any repository a `.gitignore` still counts, parents' included, as fermix has it."""
    write(
        world.project,
        {
            "outer/.gitignore": "*\n",
            "outer/repo/notes.md": "needle\n",
            "outer/repo/sub/x.md": "needle\n",
            "outer/repo/.gitignore": "skip.md\n",
            "outer/repo/skip.md": "needle\n",
            "outer/plain/y.md": "needle\n",
        },
    )
    repo = world.project / "outer" / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    ignored = subprocess.run(
        ["git", "-C", str(repo), "status", "--porcelain", "--ignored", "--untracked-files=all"],
        capture_output=True, text=True, check=True,
    ).stdout.splitlines()  # fmt: skip
    assert "!! skip.md" in ignored and "?? notes.md" in ignored and "?? sub/x.md" in ignored
    want = {("outer/repo/notes.md", 1), ("outer/repo/sub/x.md", 1)}
    for path in ("outer/repo", "outer/repo/sub"):
        got, last = all_raw_hits(invoke, {"patterns": ["needle"], "path": path})
        assert got == {h for h in want if h[0].startswith(path + "/")} and last["complete"], path
        r = invoke("content_search", {"pattern": "needle", "path": path})
        assert {(m["path"], m["line"]) for m in r["matches"]} == {
            (str(world.project / p), n) for p, n in want if p.startswith(path + "/")
        }
    r = invoke("glob_search", {"pattern": "**/*.md", "path": "outer/repo"})
    assert r["paths"] == [str(repo / "notes.md"), str(repo / "sub" / "x.md")]
    r = invoke("find", {"query": "md", "path": "outer/repo"})
    assert sorted(x["path"] for x in r["results"]) == ["outer/repo/notes.md", "outer/repo/sub/x.md"]
    assert sorted(rg(repo, "--no-config", "-l", "needle")) == ["notes.md", "sub/x.md"]  # rg's default
    got, last = all_raw_hits(invoke, {"patterns": ["needle"], "path": "outer/plain"})
    assert got == set() and last["complete"]  # outside a repository the parent's `*` applies


GLOB_NAMES = ["star*.py", "starfoo.py", "[ab", "a]b", "c.py", "a}b", "x{y", "q?.py", "br{a}.py", "ab"]


@pytest.mark.parametrize(
    "pattern",
    [
        "star\\*.py", "*.{py}", "[!]]*", "[[]*", "a}b", "q\\?.py", "br\\{a\\}.py", "[\\]]*", "{}", "a{}b",
        "[a-c]*", "[]a]*", "a\\b", "[^a-s]*", "*.py", "?b",
    ],
)  # fmt: skip
def test_glob_search_reads_a_pattern_as_rg_does(world: Env, invoke: Any, pattern: str) -> None:
    """Escapes, one-item groups, classes that start with `]`, stray braces: the files glob_search
    finds are those `rg --files -g PATTERN` lists (the names lie in the root, where rg's basename
    globs and glob_search's path globs agree)."""
    write(world.project, dict.fromkeys(GLOB_NAMES, "x\n"))
    want = set(rg(world.project, "--no-config", "--no-require-git", "--files", "-g", pattern))
    r = invoke("glob_search", {"pattern": pattern})
    assert {os.path.basename(p) for p in r["paths"]} == want, pattern


@pytest.mark.parametrize("pattern", ["[!]", "{a,b", "\\", "*\\", "x{y", "[z-a]*"])
def test_a_glob_rg_cannot_parse_is_invalid_for_glob_search_too(world: Env, invoke: Any, pattern: str) -> None:
    from fermix_cli.core.errors import ToolError

    write(world.project, dict.fromkeys(GLOB_NAMES, "x\n"))
    done = subprocess.run(
        [engines.rg(), "--no-config", "--files", "-g", pattern],
        cwd=world.project,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2 and "error parsing glob" in done.stderr
    with pytest.raises(ToolError) as e:
        invoke("glob_search", {"pattern": pattern})
    assert e.value.code == "invalid_pattern" and "Invalid pattern" in e.value.message
    assert "position" not in e.value.message  # not a Python regex internal


@pytest.mark.parametrize("pattern", ["*/", "**/", "src/*/", "a.py/"])
def test_a_glob_ending_in_a_slash_names_directories_so_no_file(world: Env, invoke: Any, pattern: str) -> None:
    write(world.project, {"a.py": "x\n", "src/x.py": "x\n", "src/sub/y.py": "x\n"})
    assert rg(world.project, "--no-config", "--files", "-g", pattern) == []
    assert invoke("glob_search", {"pattern": pattern})["paths"] == []


def test_fifos_and_sockets_a_walk_passes_over_are_counted_symlinks_are_not(world: Env, invoke: Any) -> None:
    """rg's walk reads no FIFO, socket or device (it would block or never end) and says so only in its
    log: both search tools count them in `special` and name them, so the answer is not silently short.
    Symlinks, not followed by choice, are no omission."""
    import socket

    write(world.project, {"a.txt": "hit\n", "d/b.txt": "hit\n"})
    os.mkfifo(world.project / "fifo")
    os.mkfifo(world.project / "d" / "pipe")
    os.symlink("a.txt", world.project / "link.txt")
    os.symlink("/nonexistent", world.project / "dangling")
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.bind(str(world.project / "sock"))
        got, last = all_raw_hits(invoke, {"patterns": ["hit"]})
        assert got == rg_hits(world.project, "-e", "hit") == {("a.txt", 1), ("d/b.txt", 1)}
        assert last["skipped"]["special"] == 3 and last["complete"] is False
        special = [o for o in last["omitted"] if o["reason"] == "special"]
        assert [(o["count"], o["unit"]) for o in special] == [(3, "file")]
        assert "(e.g. d/pipe, fifo, sock)" in special[0]["how"]
        cs = invoke("content_search", {"pattern": "hit"})
        assert [(o["reason"], o["count"]) for o in cs["omitted"]] == [("special", 3)]
        assert cs["total_matches"] == 2
    finally:
        sock.close()
    for name in ("fifo", "d/pipe", "sock"):
        (world.project / name).unlink()
    r = invoke("grep", {"patterns": ["hit"]})
    assert r["complete"] is True and r["skipped"]["special"] == 0  # the symlinks alone: complete


@pytest.mark.parametrize(
    ("pattern", "plain"),
    [
        ("(?P<a>x)(?<b>y)", "(x)(y)"),
        ("\\(?P<a>x)", "\\(?P<a>x)"),  # an escaped `(` opens no group
        ("\\\\(?P<a>x)", "\\\\(x)"),  # an escaped backslash, then a group
        ("[(?P<a>]x", "[(?P<a>]x"),  # nor one in a class
        ("[[a](?P<a>x)]", "[[a](?P<a>x)]"),  # nor one in a nested class
        ("(?:x)(?i)(?P<n>y)", "(?:x)(?i)(y)"),
    ],
)
def test_group_names_come_off_only_where_they_name_a_group(pattern: str, plain: str) -> None:
    from fermix_cli.core.search.regexsource import unnamed_groups

    assert unnamed_groups(pattern) == plain
