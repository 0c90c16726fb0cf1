"""The generated completion scripts, driven by real bash, zsh and fish."""

from __future__ import annotations

import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from fermix_cli.cli.clitree import build_model
from fermix_cli.cli.completions import nodes
from fermix_cli.cli.toolcall import parse_tool_argv
from fermix_cli.core.errors import ToolError
from fermix_cli.core.registry import without_null
from tests.conftest import REPO

COMPLETIONS = REPO / "completions"

# (words typed, the cursor word last) -> candidates that must be offered / must not be.
CASES: list[tuple[list[str], set[str], set[str]]] = [
    (["fermix", ""], {"tool", "config", "doctor", "mcp", "completions", "sandbox", "state"}, {"file_read"}),
    (["fermix", "to"], {"tool"}, {"config"}),
    (["fermix", "tool", "file_r"], {"file_read"}, {"file_write"}),
    (["fermix", "tool", ""], {"list", "file_read", "file_write", "content_search"}, {"config"}),
    (
        ["fermix", "tool", "file_write", "--"],
        {"--path", "--content", "--mkdir", "--no-mkdir", "--json"},
        set(),
    ),
    (["fermix", "tool", "file_write", "--no-"], {"--no-mkdir"}, {"--path"}),
    (["fermix", "tool", "file_edit", "--old"], {"--old-string"}, {"--old_string"}),  # one spelling offered
    (["fermix", "tool", "file_edit", "--old_string", ""], set(), {"--path"}),  # the other still takes a value
    (["fermix", "ask", "--toolset", ""], {"fermix", "coding"}, set()),
    (["fermix", "ask", "--provider", ""], {"openai", "anthropic", "echo", "mock"}, set()),
    (["fermix", "jobs", "add", "x", "--provider", "o"], {"openai"}, set()),
    (["fermix", "tool", "content_search", "--regex", "--pat"], {"--path", "--pattern"}, set()),
    (["fermix", "--trust", ""], {"operator", "guest"}, {"tool"}),
    (["fermix", "--home", "/tmp", "tool", "l"], {"list"}, set()),
    (["fermix", "--session", "s1", "--"], {"--home", "--cwd", "--trust"}, {"--path"}),
    (["fermix", "sandbox", "mode", ""], {"strict", "standard", "open"}, set()),
    (["fermix", "sandbox", ""], {"status", "explain", "mode", "grant", "revoke"}, set()),
    (["fermix", "config", "get", "sandbox."], {"sandbox.mode", "sandbox.allowed_roots"}, set()),
    (["fermix", "completions", ""], {"bash", "zsh", "fish"}, set()),
    (["fermix", "mcp", "serve", "--"], {"--allow", "--list"}, set()),
    (["fermix", "mcp", "serve", "--allow", "file_"], {"file_write", "file_edit"}, set()),
    (["fermix", "doctor", "--"], {"--json", "--help"}, set()),
]


def _check(got: set[str], want: set[str], unwanted: set[str], words: list[str]) -> None:
    assert want <= got, f"{' '.join(words)!r}: missing {sorted(want - got)}; got {sorted(got)}"
    assert not (unwanted & got), f"{' '.join(words)!r}: unexpected {sorted(unwanted & got)}"


def _bash(words: list[str]) -> set[str]:
    script = (
        f"source {shlex.quote(str(COMPLETIONS / 'fermix.bash'))}\n"
        f"COMP_WORDS=({' '.join(shlex.quote(w) for w in words)})\n"
        f"COMP_CWORD={len(words) - 1}\n"
        "_fermix\n"
        'printf "%s\\n" "${COMPREPLY[@]}"\n'
    )
    r = subprocess.run(["bash", "--norc", "-c", script], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    return set(r.stdout.split())


@pytest.mark.parametrize(("words", "want", "unwanted"), CASES)
def test_bash(words: list[str], want: set[str], unwanted: set[str]) -> None:
    _check(_bash(words), want, unwanted, words)


def test_bash_splits_option_values_at_equals(tmp_path: Path) -> None:
    (tmp_path / "somedir").mkdir()
    got = _bash(["fermix", "--home", "=", f"{tmp_path}/some"])
    assert got == {f"{tmp_path}/somedir"}


ZSH_STUBS = r"""
compdef() { : }
compset() { : }
_describe() {
  local -a entries; entries=("${(@P)4}")
  local e; for e in "${entries[@]}"; do print -r -- "${e%%:*}"; done
}
_values() { shift; local v; for v in "$@"; do print -r -- "$v"; done }
_files() { print -r -- "<files $*>" }
"""


@pytest.mark.skipif(shutil.which("zsh") is None, reason="zsh is not installed; .ci/run installs it")
@pytest.mark.parametrize(("words", "want", "unwanted"), CASES)
def test_zsh(words: list[str], want: set[str], unwanted: set[str]) -> None:
    # zsh's _describe filters by the typed prefix itself; the stub prints everything, so filter here.
    script = (
        ZSH_STUBS
        + f"source {shlex.quote(str(COMPLETIONS / '_fermix'))}\n"
        + f"words=({' '.join(shlex.quote(w) for w in words)})\n"
        + f"CURRENT={len(words)}\n"
        + "_fermix\n"
    )
    r = subprocess.run(["zsh", "-f", "-c", script], capture_output=True, text=True, timeout=30)
    assert r.returncode in (0, 1), r.stderr
    prefix = words[-1]
    got = {w for w in r.stdout.split() if w.startswith(prefix)}
    _check(got, want, unwanted, words)


@pytest.mark.skipif(shutil.which("fish") is None, reason="fish is not installed; .ci/run installs it")
def test_fish(tmp_path: Path) -> None:
    lines = [" ".join(words) for words, _, _ in CASES]
    script = f"source {shlex.quote(str(COMPLETIONS / 'fermix.fish'))}\n" + "".join(
        f"echo '@@ {i}'; complete -C {shlex.quote(line)}\n" for i, line in enumerate(lines)
    )
    r = subprocess.run(
        ["fish", "--no-config", "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"},
    )
    assert r.returncode == 0, r.stderr
    blocks = r.stdout.split("@@ ")[1:]
    for block, (words, want, unwanted) in zip(blocks, CASES, strict=True):
        got = {line.split("\t")[0] for line in block.splitlines()[1:] if line}
        # fish completes `--trust=` style and bare words alike; compare bare candidates.
        _check(got, want, unwanted, words)


def test_fish_wraps_the_pyz() -> None:
    text = (COMPLETIONS / "fermix.fish").read_text()
    assert "complete -c fermix.pyz -w fermix" in text


# ----- exactly what the CLI accepts ------------------------------------------------------------


def test_tool_flags_offered_are_exactly_those_the_parser_accepts() -> None:
    model = build_model()
    for node in nodes(model):
        if not node.key.startswith("tool ") or node.key == "tool list":
            continue
        tool = next(t for t in model.tools if f"tool {t.name}" == node.key)
        schema = tool.spec.input_schema()
        offered = {f for o in node.opts for f in o.flags}
        accepted = {f for o in node.opts for f in o.spellings}
        for o in node.opts:
            for flag in o.spellings:
                if flag in ("-h", "--help", "--json", "--jsonl", "--schema", "--pretty", "--text"):
                    continue
                argv = [flag, _sample(schema, flag)] if o.takes_value else [flag]
                parse_tool_argv(argv, lambda s=schema: s)  # raises unknown_flag if not accepted
        for name, prop in schema.get("properties", {}).items():
            if name in ("json", "jsonl", "schema", "pretty", "text", "help"):
                continue
            assert f"--{name.replace('_', '-')}" in offered and f"--{name}" in accepted
            assert "_" not in name or f"--{name}" not in offered  # --timeout-ms, not both spellings
            if without_null(prop).get("type") == "boolean":
                assert f"--no-{name.replace('_', '-')}" in offered
        with pytest.raises(ToolError) as e:
            parse_tool_argv(["--not-a-parameter", "x"], lambda s=schema: s)
        assert e.value.code == "unknown_flag"
        assert "--not-a-parameter" not in accepted


def _sample(schema: dict, flag: str) -> str:
    name = flag[2:].replace("-", "_")
    prop = without_null(schema["properties"][name])  # a nullable field's flag takes its non-null values
    if "enum" in prop:
        return str(prop["enum"][0])
    return {"integer": "1", "number": "1.5", "array": "[]", "object": "{}"}.get(prop.get("type", ""), "x")
