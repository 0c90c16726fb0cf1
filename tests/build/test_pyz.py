"""fermix.pyz: built from zipapp.spec with shiv, run from an empty virtualenv with only python3 on PATH."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from fermix_cli.build.pyz import load_spec, shiv_command
from tests.conftest import REPO


def test_spec_drives_the_shiv_command() -> None:
    spec = load_spec(REPO / "zipapp.spec")
    assert spec.output == "dist/fermix.pyz"
    cmd = shiv_command(spec, REPO, REPO / spec.output)
    assert cmd[cmd.index("--root") + 1] == "~/.cache/fermix/pyz"
    assert cmd[cmd.index("--entry-point") + 1] == "fermix_cli.__main__:main"
    assert cmd[cmd.index("--python") + 1] == "/usr/bin/env python3"
    assert "--compile-pyc" in cmd and "--reproducible" in cmd
    assert str(REPO) == cmd[-1]


def test_spec_refuses_unknown_keys(tmp_path: Path) -> None:
    bad = tmp_path / "zipapp.spec"
    bad.write_text('[pyz]\noutput = "x.pyz"\nentrypoint = "typo:main"\n')
    with pytest.raises(SystemExit, match="entrypoint"):
        load_spec(bad)


@pytest.fixture(scope="session")
def pyz(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The built zipapp: $FERMIX_PYZ when CI already built it, else a fresh build of this checkout."""
    prebuilt = os.environ.get("FERMIX_PYZ")
    if prebuilt:
        yield Path(prebuilt).resolve()
        return
    out = tmp_path_factory.mktemp("pyz") / "fermix.pyz"
    r = subprocess.run(
        [sys.executable, "-m", "fermix_cli.build", "pyz", "--output", str(out)],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert r.returncode == 0, r.stderr[-4000:]
    yield out


@pytest.fixture(scope="session")
def empty_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    venv = tmp_path_factory.mktemp("venv") / "v"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    return venv


def _run(
    pyz: Path, venv: Path, home: Path, *args: str, input: str | None = None
) -> subprocess.CompletedProcess:
    env = {"PATH": str(venv / "bin"), "HOME": str(home), "FERMIX_HOME": str(home / ".fermix")}
    return subprocess.run(
        [str(pyz), *args], env=env, cwd=home, capture_output=True, text=True, input=input, timeout=300
    )


@pytest.mark.slow
def test_pyz_runs_a_real_tool_call_from_an_empty_venv(pyz: Path, empty_venv: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    # The venv has no fermix and no pip: everything comes from the one file.
    assert not (empty_venv / "bin" / "pip").exists()
    r = _run(pyz, empty_venv, home, "tool", "file_write", "--json", '{"path":"hello.txt","content":"hi\\n"}')
    assert r.returncode == 0, r.stderr
    written = json.loads(r.stdout)
    assert Path(written["path"]).read_text() == "hi\n"

    # Extracted once, into the user cache dir, under a content-hash name.
    cache = home / ".cache" / "fermix" / "pyz"
    extracted = sorted(p.name for p in cache.iterdir() if p.is_dir())
    assert len(extracted) == 1 and extracted[0].startswith("fermix.pyz_")
    stamp = (cache / extracted[0]).stat().st_mtime_ns
    # Byte-compiled while extracting, so later runs never compile source.
    assert any((cache / extracted[0] / "site-packages" / "fermix_cli").rglob("*.pyc"))

    r = _run(pyz, empty_venv, home, "tool", "file_read", "--path", "hello.txt")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["content"].startswith("hi")
    assert (cache / extracted[0]).stat().st_mtime_ns == stamp  # not extracted again

    r = _run(pyz, empty_venv, home, "tool", "file_read", "--path", "missing.txt")
    assert r.returncode == 1 and json.loads(r.stderr)["error"]["code"] == "not_found"

    # The pyz carries rg and ast-grep (the wheels' binaries, extracted with their mode) and searches
    # with them even though PATH holds nothing but the empty venv.
    r = _run(pyz, empty_venv, home, "tool", "grep", "--json", '{"patterns":["hi"],"mode":"raw"}')
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["output"] == "hello.txt:1:hi"
    r = _run(pyz, empty_venv, home, "doctor", "--json")
    engines = {c["name"]: c for c in json.loads(r.stdout)["checks"]}
    assert engines["ripgrep"]["data"]["source"] == "bundled", engines["ripgrep"]
    # The skills fermix ships (package data, not modules) are installed with it.
    r = _run(pyz, empty_venv, home, "tool", "skill_list", "--json", "{}")
    assert r.returncode == 0, r.stderr
    assert "repo_overview" in [s["name"] for s in json.loads(r.stdout)["skills"]], r.stdout


@pytest.mark.slow
def test_pyz_carries_the_human_commands_and_mcp(pyz: Path, empty_venv: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    r = _run(pyz, empty_venv, home, "doctor", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["ok"] is True
    r = _run(pyz, empty_venv, home, "mcp", "serve", "--list")
    assert r.returncode == 0, r.stderr
    assert "file_read" in json.loads(r.stdout)
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }
    r = _run(pyz, empty_venv, home, "mcp", "serve", input=json.dumps(init) + "\n")
    assert r.returncode == 0, r.stderr
    reply = json.loads(r.stdout.splitlines()[0])
    assert reply["result"]["serverInfo"]["name"] == "fermix"


def test_the_bundle_is_built_from_the_sources_never_from_a_stale_build_directory(tmp_path: Path) -> None:
    """setuptools keeps a build/lib file newer than its source: a file of another revision would ship."""
    from fermix_cli.build.pyz import _clean_copy

    repo = tmp_path / "repo"
    (repo / "fermix_cli" / "build").mkdir(parents=True)
    (repo / "fermix_cli" / "build" / "pyz.py").write_text("# the build package itself ships\n")
    (repo / "fermix_cli" / "__pycache__").mkdir()
    (repo / "build" / "lib" / "fermix_cli").mkdir(parents=True)
    (repo / "build" / "lib" / "fermix_cli" / "stale.py").write_text("import gone\n")
    (repo / "dist").mkdir()
    (repo / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    copy = _clean_copy(repo, tmp_path / "copy")
    shipped = sorted(str(p.relative_to(copy)) for p in copy.rglob("*"))
    assert shipped == ["fermix_cli", "fermix_cli/build", "fermix_cli/build/pyz.py", "pyproject.toml"]
