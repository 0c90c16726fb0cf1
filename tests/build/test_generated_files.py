"""completions/, man/ and docs/tools/ are generated from the registry and the command tree; they must be current."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fermix_cli.build.docs import COMMAND, generated, stale
from fermix_cli.build.manpages import render_all
from fermix_cli.cli.clitree import build_model
from tests.conftest import REPO, Env


def test_committed_generated_files_are_current() -> None:
    out = stale(REPO)
    assert not out, f"generated files are out of date: {', '.join(out)}. Run: {COMMAND}"


def test_generation_is_deterministic() -> None:
    first = {str(p): t for p, t in generated(REPO).items()}
    second = {str(p): t for p, t in generated(REPO).items()}
    assert first == second


def test_check_mode_names_the_command_to_rerun(tmp_path: Path) -> None:
    # A copy of the checkout whose man page went stale: --check fails and says what to run.
    for name in ("pyproject.toml",):
        shutil.copy(REPO / name, tmp_path / name)
    shutil.copytree(
        REPO / "fermix_cli", tmp_path / "fermix_cli", ignore=shutil.ignore_patterns("__pycache__")
    )
    shutil.copytree(REPO / "man", tmp_path / "man")
    shutil.copytree(REPO / "completions", tmp_path / "completions")
    shutil.copytree(REPO / "docs" / "tools", tmp_path / "docs" / "tools")
    (tmp_path / "man" / "fermix-tool.1").write_text("stale\n")
    (tmp_path / "man" / "fermix-gone.1").write_text("left over\n")
    (tmp_path / "docs" / "tools" / "files.md").write_text("stale\n")
    (tmp_path / "docs" / "tools" / "gone.md").write_text("left over\n")
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    run = [sys.executable, "-m", "fermix_cli.build", "docs"]
    r = subprocess.run([*run, "--check"], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert r.returncode == 1
    assert "man/fermix-tool.1" in r.stderr and "fermix-gone.1" in r.stderr
    assert "docs/tools/files.md" in r.stderr and "docs/tools/gone.md (not generated any more)" in r.stderr
    assert f"run: {COMMAND}" in r.stderr
    assert subprocess.run(run, cwd=tmp_path, env=env, capture_output=True).returncode == 0
    assert not (tmp_path / "man" / "fermix-gone.1").exists()
    assert not (tmp_path / "docs" / "tools" / "gone.md").exists()
    r = subprocess.run([*run, "--check"], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_one_man_page_per_command_group() -> None:
    model = build_model()
    pages = set(render_all(model))
    expected = {"fermix.1"} | {f"fermix-{c.name}.1" for c in model.root.subcommands}
    assert pages == expected
    assert {"fermix-tool.1", "fermix-config.1", "fermix-sandbox.1", "fermix-state.1", "fermix-mcp.1"} <= pages
    assert {"fermix-doctor.1", "fermix-completions.1"} <= pages


def test_tool_page_documents_every_tool_with_policy_and_errors() -> None:
    model = build_model()
    page = render_all(model)["fermix-tool.1"]
    for tool in model.tools:
        section = page.split(f".SS {tool.name}\n", 1)[1].split(".SS ", 1)[0]
        assert f"Policy class: {tool.spec.policy_class}." in section
        for fm in tool.spec.failure_modes:
            assert f"\\fB{fm.tag}\\fR" in section
    assert "\\-\\-old\\-string" in page  # file_edit's flag, spelled as the CLI accepts it


def test_completions_command_prints_the_committed_scripts(world: Env) -> None:
    for shell, name in (("bash", "fermix.bash"), ("zsh", "_fermix"), ("fish", "fermix.fish")):
        r = world.run("completions", shell)
        assert r.code == 0, r.stderr
        assert r.stdout == (REPO / "completions" / name).read_text()
    assert world.run("completions", "tcsh").code == 2


MAN = shutil.which("man")


@pytest.mark.skipif(MAN is None, reason="man (man-db) is not installed; .ci/run installs it")
@pytest.mark.parametrize("page", sorted(p.name for p in (REPO / "man").glob("*.1")))
def test_man_page_renders_without_warnings(page: str) -> None:
    env = {**os.environ, "MANWIDTH": "100", "LC_ALL": "C.UTF-8"}
    r = subprocess.run(
        [MAN or "man", "--warnings", "-E", "UTF-8", "-P", "cat", "-l", str(REPO / "man" / page)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert r.returncode == 0, r.stderr
    assert r.stderr == "", r.stderr
    assert "NAME" in r.stdout and "SYNOPSIS" in r.stdout
    title = page.removesuffix(".1").upper()
    assert r.stdout.lstrip().startswith(f"{title}(1)")


def test_the_wheel_installs_every_man_page_and_completion_script_where_the_tools_look() -> None:
    """pyproject's data-files put man/*.1 and completions/* under <prefix>/share (see its comment)."""
    import tomllib
    from fnmatch import fnmatch

    data_files = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["data-files"]
    shipped = {
        (target, str(path.relative_to(REPO)))
        for target, patterns in data_files.items()
        for pattern in patterns
        for path in REPO.glob(pattern)
    }
    generated = [p for p in (*REPO.glob("man/*"), *REPO.glob("completions/*")) if p.is_file()]
    assert len(generated) >= 4
    for path in generated:
        assert any(rel == str(path.relative_to(REPO)) for _, rel in shipped), path
    wanted = {
        "share/man/man1": "man/fermix.1",
        "share/bash-completion/completions": "completions/fermix.bash",
        "share/zsh/site-functions": "completions/_fermix",
        "share/fish/vendor_completions.d": "completions/fermix.fish",
    }
    for target, rel in wanted.items():
        assert (target, rel) in shipped, (target, rel)
    assert all(fnmatch(rel, "man/*.1") for target, rel in shipped if target == "share/man/man1")
