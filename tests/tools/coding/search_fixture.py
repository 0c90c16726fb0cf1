"""A small project tree for the search tools' golden tests, built from a dict."""

from __future__ import annotations

from pathlib import Path

FIXTURE: dict[str, str | bytes] = {
    ".git/HEAD": "ref: refs/heads/main\n",
    ".gitignore": "*.log\nbuild/\n",
    ".ignore": "vendor/\n",
    ".p4ignore": "*.tmp\n",
    "src/run.rs": (
        "use std::io;\n"
        "\n"
        "pub fn run(args: Args) -> Result<()> {\n"
        "    let cfg = load()?;\n"
        "    run_inner(args)?;\n"
        "    Ok(())\n"
        "}\n"
        "\n"
        "fn run_inner(args: Args) -> Result<()> {\n"
        "    run_step(1)\n"
        "}\n"
    ),
    "src/main.rs": "use crate::run::run;\n\nfn main() {\n    run(std::env::args());\n}\n",
    "src/lib/runner.py": (
        "import os\n"
        "from run import run\n"
        "\n"
        "class Runner:\n"
        "    def run(self):\n"
        "        return run()\n"
        "\n"
        "runner = Runner()\n"
    ),
    "src/app.ts": (
        'import { run } from "./run";\n'
        "export const runTwice = (x: number) => run(run(x));\n"
        "export function start() {\n"
        "  run(1);\n"
        "}\n"
    ),
    "docs/running.md": "# Running\n\nTo run the tool, call run.\n",
    "build/out.rs": "fn run() {}\n",
    "debug.log": "run\n",
    "vendor/x.rs": "fn run() {}\n",
    "scratch.tmp": "run\n",
    "target/debug/y.rs": "fn run() {}\n",
    ".hidden/h.rs": "fn run() {}\n",
    "bin/blob.dat": b"run\x00\x01",
    "bad.txt": b"run \xff\xfe\n",
}


def make_tree(root: Path, files: dict[str, str | bytes]) -> None:
    for rel, content in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            p.write_bytes(content)
        else:
            p.write_text(content)
