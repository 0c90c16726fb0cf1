"""fermix.pyz: built from zipapp.spec with shiv, run from an empty virtualenv with only python3 on PATH."""

from __future__ import annotations

import json
import os
import shutil
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


# ----- the Python a pyz was built for ------------------------------------------------------------


@pytest.mark.parametrize(
    ("built_for", "implementation", "version", "needs"),
    [
        (None, "cpython", (3, 12, 1), None),  # not a pyz: nothing to refuse
        (("cpython", 3, 11), "cpython", (3, 11, 9), None),  # another patch release is the same ABI
        (("cpython", 3, 11), "cpython", (3, 12, 1), "python3.11"),
        (("cpython", 3, 11), "cpython", (3, 10, 13), "python3.11"),
        (("cpython", 3, 12), "cpython", (3, 11, 7), "python3.12"),
        (("cpython", 3, 11), "pypy", (3, 11, 0), "python3.11"),
    ],
)
def test_a_pyz_names_the_python_it_needs(
    built_for: tuple[str, int, int] | None,
    implementation: str,
    version: tuple[int, int, int],
    needs: str | None,
) -> None:
    from fermix_cli.core.pyzbuild import wrong_python

    why = wrong_python(built_for, implementation, version, "/opt/py/bin/python3", "/srv/fermix.pyz")
    if needs is None:
        assert why is None
        return
    assert why is not None and "\n" not in why
    assert f"run it with {needs} ({needs} /srv/fermix.pyz ...)" in why
    assert f"{'.'.join(map(str, version))} (/opt/py/bin/python3)" in why
    assert "/opt/py/bin/python3 -m fermix_cli.build pyz" in why


def test_the_build_records_its_python_in_the_copy_it_bundles(tmp_path: Path) -> None:
    from fermix_cli.build.pyz import _clean_copy, record_python

    copy = _clean_copy(REPO, tmp_path / "copy")
    record_python(copy)
    recorded = (copy / "fermix_cli" / "core" / "pyzbuild.py").read_text()
    built = (sys.implementation.name, sys.version_info[0], sys.version_info[1])
    assert f"BUILT_FOR: tuple[str, int, int] | None = {built!r}\n" in recorded
    assert (
        "BUILT_FOR: tuple[str, int, int] | None = None\n"
        in (REPO / "fermix_cli/core/pyzbuild.py").read_text()
    )


def _run_on(python: str, pyz: Path, home: Path, shiv_root: Path, *args: str) -> subprocess.CompletedProcess:
    env = {
        "PATH": os.path.dirname(python),
        "HOME": str(home),
        "FERMIX_HOME": str(home / ".fermix"),
        "SHIV_ROOT": str(shiv_root),
    }
    return subprocess.run(
        [python, str(pyz), *args], env=env, cwd=home, capture_output=True, text=True, timeout=300
    )


def _assert_refused(r: subprocess.CompletedProcess, needs: str) -> None:
    assert r.returncode == 1 and r.stdout == "", r.stderr
    assert len(r.stderr.splitlines()) == 1, r.stderr  # one line: no traceback
    error = json.loads(r.stderr)["error"]
    assert error["code"] == "wrong_python" and f"run it with {needs} " in error["message"]


@pytest.mark.slow
def test_a_pyz_on_another_python_minor_is_refused_and_doctor_fails(pyz: Path, tmp_path: Path) -> None:
    """Simulated: the extracted copy's record says another minor (3.10), this interpreter runs it."""
    home, shiv_root = tmp_path / "home", tmp_path / "cache"
    home.mkdir()
    r = _run_on(sys.executable, pyz, home, shiv_root, "--version")  # extracts it
    assert r.returncode == 0, r.stderr
    (record,) = shiv_root.glob(f"{pyz.name}_*/site-packages/fermix_cli/core/pyzbuild.py")
    text = record.read_text()
    built = (sys.implementation.name, sys.version_info[0], sys.version_info[1])
    record.write_text(text.replace(f"= {built!r}", f"= {(sys.implementation.name, 3, 10)!r}"))
    for stale in record.parent.glob("__pycache__/pyzbuild.*"):
        stale.unlink()
    _assert_refused(
        _run_on(sys.executable, pyz, home, shiv_root, "tool", "read", "--json", "{}"), "python3.10"
    )
    r = _run_on(sys.executable, pyz, home, shiv_root, "doctor", "--json")
    assert r.returncode == 1, r.stderr
    python = next(c for c in json.loads(r.stdout)["checks"] if c["name"] == "python")
    assert python["status"] == "fail" and "run it with python3.10" in python["detail"]


def _other_pythons() -> list[str]:
    """Interpreters of another minor version on this machine (pyenv's, or python3.N on PATH)."""
    import glob
    import shutil

    found = glob.glob(os.path.expanduser("~/.pyenv/versions/3.*/bin/python3"))
    found += [p for n in range(8, 16) if (p := shutil.which(f"python3.{n}"))]
    out: dict[tuple[int, int], str] = {}
    for path in found:
        r = subprocess.run(
            [path, "-c", "import sys; print(*sys.version_info[:2])"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        if r.returncode == 0:
            minor = tuple(map(int, r.stdout.split()))
            if minor != sys.version_info[:2] and minor >= (3, 8):
                out.setdefault(minor, path)  # type: ignore[arg-type]
    return [out[k] for k in sorted(out)]


@pytest.mark.slow
def test_a_pyz_on_the_other_pythons_here_is_refused_with_the_python_it_needs(
    pyz: Path, tmp_path: Path
) -> None:
    pythons = _other_pythons()
    if not pythons:
        pytest.skip("no Python of another minor version on this machine")
    needs = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    for python in pythons:
        home, shiv_root = (
            tmp_path / python.replace("/", "_") / "home",
            tmp_path / python.replace("/", "_") / "c",
        )
        home.mkdir(parents=True)
        _assert_refused(_run_on(python, pyz, home, shiv_root, "tool", "read", "--json", "{}"), needs)
        r = _run_on(python, pyz, home, shiv_root, "doctor")
        if subprocess.run([python, "-c", "import sys; assert sys.version_info >= (3, 11)"]).returncode:
            _assert_refused(r, needs)  # fermix cannot even import there: the same refusal
        else:
            assert r.returncode == 1
            line = next(x for x in r.stdout.splitlines() if " python " in x)
            assert line.startswith("[FAIL]") and f"run it with {needs} " in line


@pytest.mark.slow
def test_a_pyz_whose_extracted_engine_is_gone_says_to_extract_it_again(
    pyz: Path, empty_venv: Path, tmp_path: Path
) -> None:
    home, cache = tmp_path / "home", tmp_path / "cache"
    project = home / "project"
    project.mkdir(parents=True)

    def run(*args: str) -> subprocess.CompletedProcess:
        env = {
            "PATH": str(empty_venv / "bin"),  # no rg anywhere but inside the pyz
            "HOME": str(home),
            "FERMIX_HOME": str(home / ".fermix"),
            "SHIV_ROOT": str(cache),
        }
        return subprocess.run(
            [str(pyz), *args], env=env, cwd=project, capture_output=True, text=True, timeout=300
        )

    (project / "notes.txt").write_text("hi\n")
    grep = ("tool", "grep", "--json", '{"patterns":["hi"],"mode":"raw"}')
    r = run(*grep)  # extracted, with rg
    assert r.returncode == 0 and json.loads(r.stdout)["output"] == "notes.txt:1:hi", r.stderr
    (extracted,) = cache.glob(f"{pyz.name}_*")
    bundled = extracted / "site-packages" / "bin"
    (bundled / "rg").unlink()  # a damaged cache: a cleaner took the binary

    r = run(*grep)
    assert r.returncode == 1 and r.stdout == "", r.stderr
    error = json.loads(r.stderr)["error"]
    assert error["code"] == "search_engine_missing"
    assert f"rm -rf {extracted}" in error["message"] and "pip install" not in error["message"]
    assert str(bundled / "rg") in error["details"]["looked_in"]
    r = run("doctor", "--json")
    check = next(c for c in json.loads(r.stdout)["checks"] if c["name"] == "ripgrep")
    assert check["status"] == "fail" and str(bundled / "rg") in check["detail"], check
    assert f"rm -rf {extracted}" in check["detail"] and "pip install" not in check["detail"]

    shutil.rmtree(extracted)  # what the message says to do (the cache is this test's own)
    r = run(*grep)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["output"] == "notes.txt:1:hi"
