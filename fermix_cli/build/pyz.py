"""Build dist/fermix.pyz with shiv, as zipapp.spec says."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path
from typing import Any

from ..core.records import Record, field


class PyzSpec(Record, frozen=True):
    output: str = "dist/fermix.pyz"
    entry_point: str = "fermix_cli.__main__:main"
    interpreter: str = "/usr/bin/env python3"
    cache_root: str = "~/.cache/fermix/pyz"
    compressed: bool = True
    compile_pyc: bool = True
    reproducible: bool = True
    requirements: tuple[str, ...] = (".",)
    pip_args: tuple[str, ...] = field(default_factory=tuple)


def load_spec(path: Path) -> PyzSpec:
    """Read zipapp.spec; unknown keys are errors, so a typo never builds something else."""
    with open(path, "rb") as f:
        doc: dict[str, Any] = tomllib.load(f)
    pyz = dict(doc.get("pyz", {}))
    pip = pyz.pop("pip", {})
    allowed = {
        "output",
        "entry_point",
        "interpreter",
        "cache_root",
        "compressed",
        "compile_pyc",
        "reproducible",
    }
    unknown = sorted(set(pyz) - allowed) + sorted(f"pip.{k}" for k in set(pip) - {"requirements", "args"})
    if unknown or set(doc) - {"pyz"}:
        raise SystemExit(f"{path}: unknown keys: {', '.join(unknown or sorted(set(doc) - {'pyz'}))}")
    return PyzSpec(
        **pyz,
        requirements=tuple(pip.get("requirements", (".",))),
        pip_args=tuple(pip.get("args", ())),
    )


def shiv_command(spec: PyzSpec, repo: Path, output: Path) -> list[str]:
    cmd = [
        sys.executable,
        "-m",
        "shiv",
        "--output-file",
        str(output),
        "--entry-point",
        spec.entry_point,
        "--python",
        spec.interpreter,
        "--root",
        spec.cache_root,
        "--compressed" if spec.compressed else "--uncompressed",
    ]
    if spec.reproducible:
        cmd.append("--reproducible")
    if spec.compile_pyc:
        cmd.append("--compile-pyc")
    reqs = [str(repo) if r == "." else r for r in spec.requirements]
    return [*cmd, *spec.pip_args, *reqs]


def build_pyz(spec: PyzSpec, repo: Path, output: Path | None = None) -> Path:
    """Run shiv; returns the path of the built file."""
    try:
        import shiv  # noqa: F401
    except ImportError:
        raise SystemExit("building fermix.pyz needs shiv: pip install 'shiv>=1,<2'") from None
    out = (output or repo / spec.output).resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, PIP_NO_INPUT="1")
    with tempfile.TemporaryDirectory(prefix="fermix-pyz-") as tmp:
        source = _clean_copy(repo, Path(tmp) / "src")
        record_python(source)
        subprocess.run(shiv_command(spec, source, out), check=True, cwd=source, env=env)
    return out


BUILT_FOR_LINE = "BUILT_FOR: tuple[str, int, int] | None = None"


def record_python(source: Path) -> None:
    """Write the building Python (whose wheels pip bundles) into the copy's `core/pyzbuild.py`.

    The bundle's entry point refuses any other Python with a line naming this one, and doctor fails."""
    module = source / "fermix_cli" / "core" / "pyzbuild.py"
    text = module.read_text(encoding="utf-8")
    if text.count(BUILT_FOR_LINE) != 1:
        raise SystemExit(f"{module}: expected one line `{BUILT_FOR_LINE}` to record the build's Python in")
    built = (sys.implementation.name, sys.version_info[0], sys.version_info[1])
    module.write_text(
        text.replace(BUILT_FOR_LINE, BUILT_FOR_LINE.replace("None = None", f"None = {built!r}"))
    )


# What a build never reads from the checkout: setuptools' own build/ (it copies a source file there
# only when the source is newer, so a file from another revision can survive a checkout and ship),
# earlier outputs, virtual environments and the git directory (at the top), and caches (anywhere).
TOP_LEFT_OUT = ("build", "dist", "*.egg-info", ".git", ".venv", "venv", ".hypothesis", ".benchmarks")
LEFT_OUT = ("__pycache__", ".*_cache")


def _clean_copy(repo: Path, dest: Path) -> Path:
    """The checkout without build products: what `pip install .` builds the bundled fermix from."""
    top = shutil.ignore_patterns(*TOP_LEFT_OUT, *LEFT_OUT)
    anywhere = shutil.ignore_patterns(*LEFT_OUT)

    def ignore(folder: str, names: list[str]) -> set[str]:
        return (top if Path(folder) == repo else anywhere)(folder, names)

    shutil.copytree(repo, dest, ignore=ignore, symlinks=True)
    return dest
