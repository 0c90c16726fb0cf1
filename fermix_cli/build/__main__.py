"""`python -m fermix_cli.build docs [--check]` and `python -m fermix_cli.build pyz [--spec FILE]`.

docs: regenerate completions/, man/ and docs/tools/ from the command tree and the tool registry, and
core/net/transport_async.py from core/net/transport.py (run it after adding or changing a tool, a command
or the sync transport; a test fails while they are out of date). pyz: build
dist/fermix.pyz as zipapp.spec says.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path


def repo_root() -> Path:
    """The checkout this package was imported from (the folder holding pyproject.toml)."""
    here = Path(__file__).resolve().parent.parent.parent
    if not (here / "pyproject.toml").exists():
        raise SystemExit(
            "fermix_cli.build runs from a source checkout (no pyproject.toml next to fermix_cli/)"
        )
    return here


def main(argv: list[str] | None = None) -> int:
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    parser = argparse.ArgumentParser(prog="python -m fermix_cli.build", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="what", required=True)
    docs = sub.add_parser("docs", help="regenerate completions/, man/, docs/tools/ and the async transport")
    docs.add_argument("--check", action="store_true", help="exit 1 if any generated file is out of date")
    pyz = sub.add_parser("pyz", help="build dist/fermix.pyz from zipapp.spec")
    pyz.add_argument("--spec", default=None, help="spec file (default: zipapp.spec in the checkout)")
    pyz.add_argument("--output", default=None, help="override the spec's output path")
    args = parser.parse_args(argv)
    root = repo_root()
    if args.what == "docs":
        from .docs import COMMAND, stale, write

        if args.check:
            out = stale(root)
            for line in out:
                print(f"out of date: {line}", file=sys.stderr)
            if out:
                print(f"run: {COMMAND}", file=sys.stderr)
            return 1 if out else 0
        for line in write(root):
            print(f"wrote {line}")
        return 0
    from .pyz import build_pyz, load_spec

    spec = load_spec(Path(args.spec) if args.spec else root / "zipapp.spec")
    out_path = build_pyz(spec, root, Path(args.output) if args.output else None)
    print(out_path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
