"""Reading rg's `--debug` log: the binary files and Perforce rule files it names, and rg's own messages.

These cases pin down what the names may hold (the separators rg prints around them), and check the
reading against the log of a real rg run.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from fermix_cli.core.search import engines
from fermix_cli.core.search.p4ignore import P4Rules
from fermix_cli.core.search.ripgrep import Run, Scope

LOG = "\n".join(
    [
        "rg: DEBUG|rg::flags::parse|crates/core/flags/parse.rs:89: not reading config files",
        "rg: DEBUG|grep_printer::json|crates/printer/src/json.rs:702: ignoring ./a.bin: found binary data at offset 0",
        "rg: DEBUG|grep_printer::json|crates/printer/src/json.rs:702: ignoring ./odd: ignoring x.bin: "
        "found binary data at offset 9: found binary data at offset 12",
        "rg: DEBUG|grep_printer::json|crates/printer/src/json.rs:702: ignoring sub/é.dat: found binary data at offset 3",
        "rg: DEBUG|ignore::walk|crates/ignore/src/walk.rs:1790: ignoring ./d/.p4ignore: "
        'Ignore(IgnoreMatch(Override(Glob { glob: "!.p4ignore" })))',
        "rg: DEBUG|ignore::walk|crates/ignore/src/walk.rs:1790: ignoring ./d/other: "
        'Ignore(IgnoreMatch(Override(Glob { glob: "!other" })))',
        "rg: ./gone.txt: No such file or directory (os error 2)",
        "rg: DEBUG|globset|crates/globset/src/lib.rs:453: built glob set; 0 literals",
    ]
)


def read(log: str, p4: P4Rules | None = None) -> tuple[Run, str]:
    run = Run(Scope(root="/", p4=p4), [], deadline=0.0)
    rest = run._read_debug(log)
    return run, rest


def test_binary_files_rule_files_and_rgs_own_messages_are_told_apart() -> None:
    run, rest = read(LOG, P4Rules(ignore_names=(".p4ignore",)))
    assert run.stats.binary == [
        "a.bin",
        "odd: ignoring x.bin: found binary data at offset 9",  # first ": ignoring ", last ": found …"
        "sub/é.dat",
    ]
    assert run.stats.p4_seen == ["d/.p4ignore"]  # "other" is excluded by a glob that is not a rule file
    assert rest == "rg: ./gone.txt: No such file or directory (os error 2)"


def test_without_perforce_rules_no_rule_file_is_noted() -> None:
    run, _ = read(LOG)
    assert run.stats.p4_seen == [] and len(run.stats.binary) == 3


def test_a_log_without_debug_lines_is_returned_as_it_is() -> None:
    run, rest = read("rg: x: Permission denied (os error 13)\n")
    assert rest == "rg: x: Permission denied (os error 13)\n" and run.stats.binary == []


def test_the_real_log_of_a_real_run(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    for name in ("a.bin", "sub/b.bin", "c: ignoring d.bin"):
        (tmp_path / name).write_bytes(b"\x00hit\n")
    (tmp_path / "t.txt").write_text("hit\n")
    done = subprocess.run(
        [engines.rg(), "--no-config", "--json", "--debug", "-e", "hit"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    run, rest = read(done.stderr)
    assert sorted(run.stats.binary) == ["a.bin", "c: ignoring d.bin", "sub/b.bin"]
    assert "DEBUG" not in rest


def test_read_back_returns_what_was_written_up_to_the_cap() -> None:
    from fermix_cli.core.search.ripgrep import read_back, scratch_file

    with scratch_file() as f:
        assert read_back(f, 64 << 20) == b""
        f.write(b"0123456789")
        f.flush()
        assert read_back(f, 64 << 20) == b"0123456789"
        assert read_back(f, 4) == b"0123"
