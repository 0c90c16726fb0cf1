"""`fermix skills list|view|reload|new|run|check`: the owner's view of the installed skills."""

from __future__ import annotations

import json
import os
import re
import stat
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ..core.errors import ToolError
from .common import context, emit_json, handles_errors, invoke_tool

if TYPE_CHECKING:
    from ..core.context import ToolContext

app = typer.Typer(
    help="SKILL.md skills: list, view, reload, scaffold, run and check them.", no_args_is_help=True
)

JsonOpt = Annotated[bool, typer.Option("--json", help="JSON output.")]
ProviderOpt = Annotated[
    str | None,
    typer.Option("--provider", help="Provider for the run (default: the skill's, else the agent's)."),
]
# A skill's evals/evals.json larger than this is refused (reported as invalid_evals), never read whole.
EVALS_MAX_BYTES = 1024 * 1024
ModelOpt = Annotated[str | None, typer.Option("--model", "-m", help="Model for the run.")]


@app.command("list")
@handles_errors
def list_cmd(as_json: JsonOpt = False) -> None:
    """The installed skills, and the ones that failed to load (with file and line)."""
    out = invoke_tool("skill_list", {})
    if as_json:
        emit_json(out)
        return
    for s in out["skills"]:  # a guest's list has no origin or errors
        typer.echo(f"{s['name']:<24} {s.get('origin', '-'):<8} {s['description']}")
    if not out["skills"]:
        typer.echo("No skills installed. Scaffold one: fermix skills new NAME --description TEXT")
    for e in out.get("errors", []):
        typer.echo(f"not loaded: {e['message']}", err=True)


@app.command("view")
@handles_errors
def view_cmd(
    name: Annotated[str, typer.Argument(help="The skill's name.")],
    file: Annotated[str | None, typer.Option("--file", help="A references/ file name (without .md).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """A skill's instructions, allowed tools and metadata, or one of its reference files."""
    out = invoke_tool("skill_view", {"name": name, "file": file})
    if as_json:
        emit_json(out)
    elif file is not None:
        typer.echo(out["content"])
    else:
        tools = (
            "the caller's" if out["allowed_tools"] is None else (", ".join(out["allowed_tools"]) or "none")
        )
        typer.echo(f"{out['name']}: {out['description']}\nallowed tools: {tools}\npath: {out['path']}\n")
        typer.echo(out["system_prompt"])


@app.command("reload")
@handles_errors
def reload_cmd(as_json: JsonOpt = False) -> None:
    """Re-scan the skill directories: the skills added, removed and changed since the last reload, and
    the ones that failed to load (with file and line). A skill that does not load is reported, never fatal."""
    out = invoke_tool("skill_reload", {})
    if as_json:
        emit_json(out)
        return
    for key in ("added", "removed", "changed"):
        if out[key]:
            typer.echo(f"{key}: {', '.join(out[key])}")
    if not (out["added"] or out["removed"] or out["changed"]):
        typer.echo("No change since the last reload.")
    typer.echo(f"{out['skills']} skill(s) loaded.")
    for e in out["errors"]:
        typer.echo(f"not loaded: {e['message']}", err=True)


@app.command("new")
@handles_errors
def new_cmd(
    name: Annotated[str, typer.Argument(help="The skill's name (its directory name).")],
    description: Annotated[str, typer.Option("--description", "-d", help="What the skill does.")],
    as_json: JsonOpt = False,
) -> None:
    """Scaffold <home>/skills/NAME/ with SKILL.md and evals/evals.json."""
    out = invoke_tool("skill_create", {"name": name, "description": description})
    if as_json:
        emit_json(out)
    else:
        typer.echo(
            f"Created {out['path']}. Write its instructions in SKILL.md and grant tools in allowed_tools."
        )


def _find(name: str) -> Any:
    from ..agent.skills.run import find_skill

    ctx = context()
    try:
        return find_skill(ctx, name)
    finally:
        ctx.close()


def _directories() -> dict[str, str]:
    """Skill name -> directory, for a caller whose skill_list does not say where skills live."""
    from ..core.skillrefs import discover

    ctx = context()
    try:
        return discover(ctx)
    finally:
        ctx.close()


def _check_may_run(ctx: Any) -> None:
    """Refuse as `fermix tool skill_run` does (`policy_denied`, exit 3) when this caller may not run a
    skill: policy is checked at every call, whoever makes it (the CLI runs skills without `invoke`, for
    its --provider and --model)."""
    from ..core import policy
    from ..core.registry import default_registry

    policy.check(default_registry().resolve("skill_run", ctx), ctx)


def _run(
    name: str, task: str, context_text: str | None, provider: str | None, model: str | None
) -> dict[str, Any]:
    from ..agent.skills.run import find_skill, run_skill
    from ..core.registry import default_registry

    ctx = context()
    try:
        _check_may_run(ctx)
        skill = find_skill(ctx, name)
        if provider is not None or model is not None:
            skill = skill.replace(provider=provider or skill.provider, model=model or skill.model)
        ctx.extras["registry"] = default_registry()
        return run_skill(ctx, skill, task, context_text)
    finally:
        ctx.close()


@app.command("run")
@handles_errors
def run_cmd(
    name: Annotated[str, typer.Argument(help="The skill's name.")],
    task: Annotated[str, typer.Argument(help="The work request.")],
    context_text: Annotated[
        str | None, typer.Option("--context", help="Extra context for the skill.")
    ] = None,
    provider: ProviderOpt = None,
    model: ModelOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Run a skill on a task, confined to its allowed tools; exit 1 unless it completed (130 when
    stopped by Ctrl-C or SIGTERM)."""
    from ..core.cancel import install_interrupt_flag

    restore = install_interrupt_flag()  # Ctrl-C and SIGTERM end the run `interrupted`, cleanly
    try:
        out = _run(name, task, context_text, provider, model)
    finally:
        restore()
    if as_json:
        emit_json(out)
    else:
        typer.echo(out["output"])
        if out["status"] != "completed":
            err = out.get("error") or {}
            typer.echo(f"skill {out['status']}: {err.get('code', '')}: {err.get('message', '')}", err=True)
    if out["status"] != "completed":
        raise typer.Exit(130 if (out.get("error") or {}).get("code") == "interrupted" else 1)


def _expectation_met(expectation: str, output: str) -> bool:
    """`regex:PATTERN` searches the output; any other expectation must appear in it (case-insensitive)."""
    if expectation.startswith("regex:"):
        return re.search(expectation[len("regex:") :], output) is not None
    return expectation.lower() in output.lower()


def _expectations(case: dict[str, Any], where: str) -> list[str]:
    """A case's expectations: a list of strings, each `regex:` pattern one that compiles."""
    expectations = case.get("expectations", [])
    if not isinstance(expectations, list) or not all(isinstance(x, str) for x in expectations):
        raise ValueError(f"{where}: expectations must be a list of strings")
    for x in expectations:
        if x.startswith("regex:"):
            try:
                re.compile(x[len("regex:") :])
            except re.error as e:
                raise ValueError(
                    f"{where}: expectation {x!r} is not a valid regular expression: {e}"
                ) from None
    return expectations


def _case(case: Any, where: str) -> dict[str, Any]:
    """One eval case, checked: an object with a non-empty string `prompt`, a string `name` if given,
    and valid expectations; ValueError naming the case otherwise."""
    if not isinstance(case, dict):
        raise ValueError(f"{where}: must be an object {{name, prompt, expectations}}")
    if not isinstance(case.get("prompt"), str) or not case["prompt"].strip():
        raise ValueError(f"{where}: prompt must be a non-empty string")
    if not isinstance(case.get("name", ""), str):
        raise ValueError(f"{where}: name must be a string")
    return {**case, "expectations": _expectations(case, where)}


def _read_evals(path: str, directory: str, ctx: ToolContext) -> bytes | None:
    """The bytes of a skill's `evals/evals.json` (None without one): a real file, not a symlink, FIFO or
    device, at most `EVALS_MAX_BYTES`; ValueError saying what is wrong otherwise, and `protected_path` (a
    ToolError, as for the skill's other files) for a protected file or a hard link to one."""
    from ..core.fsops import read_bytes
    from ..core.skillrefs import refuse_protected_skill_file

    for where in (os.path.dirname(path), path):
        try:
            st = os.lstat(where)
        except FileNotFoundError:
            return None
        except OSError as e:
            raise ValueError(f"{where}: cannot read it ({e.strerror or e})") from None
        if stat.S_ISLNK(st.st_mode):
            raise ValueError(f"{where} is a symbolic link; a skill's evals must be a real file and directory")
    refuse_protected_skill_file(ctx, path, directory, tool="skills check")
    try:
        data = read_bytes(path, EVALS_MAX_BYTES)
    except FileNotFoundError:
        return None
    except ToolError as e:  # not a regular file (a FIFO, a device, a socket), or swapped for a symlink
        raise ValueError(f"{e.message}; a skill's evals/evals.json must be a regular JSON file") from None
    except OSError as e:
        raise ValueError(f"{path}: cannot read it ({e.strerror or e})") from None
    if len(data) > EVALS_MAX_BYTES:
        raise ValueError(f"{path}: over {EVALS_MAX_BYTES} bytes; it is refused, not truncated")
    return data


def _evals(directory: str, ctx: ToolContext) -> list[dict[str, Any]]:
    """The cases of `evals/evals.json` (none without one); ValueError naming the file and every bad case,
    `protected_path` for a file the sandbox protects."""
    path = os.path.join(directory, "evals", "evals.json")
    raw = _read_evals(path, directory, ctx)
    if raw is None:
        return []
    try:
        data = json.loads(raw.decode("utf-8"))
    except (ValueError, RecursionError) as e:  # not UTF-8, not JSON, nested too deep
        raise ValueError(f"{path}: cannot read it as JSON: {e}") from None
    cases = data.get("cases") if isinstance(data, dict) else None
    if not isinstance(cases, list):
        raise ValueError(f"{path}: expected {{skill, cases: [...]}}")
    out, problems = [], []
    for n, case in enumerate(cases):
        try:
            out.append(_case(case, f"cases[{n}]"))
        except ValueError as e:
            problems.append(str(e))
    if problems:
        raise ValueError(f"{path}: " + "; ".join(problems))
    return out


def _own_errors(
    errors: list[dict[str, Any]], name: str, loaded: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The load errors of skill `name`: those in its own directory when it loaded, else (like
    `skills run|view`) those of a skill directory called `name`; never a skill root's."""
    errors = [e for e in errors if e["code"] != "invalid_skill_root"]
    if loaded:
        return [e for e in errors if os.path.dirname(e["path"]) == loaded[0]["path"]]
    return [e for e in errors if os.path.basename(os.path.dirname(e["path"])) == name]


@app.command("check")
@handles_errors
def check_cmd(
    name: Annotated[str | None, typer.Argument(help="Check only this skill.")] = None,
    provider: ProviderOpt = None,
    model: ModelOpt = None,
    no_evals: Annotated[bool, typer.Option("--no-evals", help="Only validate; run no evals.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Validate every skill, then run each evals/evals.json case and report pass/fail; exit 1 on any failure.

    A case passes when the run completes and every expectation appears in its output (case-insensitive;
    `regex:PATTERN` for a regular expression).
    """
    if not no_evals:  # the evals are skill runs: refused up front, as each run would be
        ctx = context()
        try:
            _check_may_run(ctx)
        finally:
            ctx.close()
    out = invoke_tool("skill_list", {})
    skills = [s for s in out["skills"] if name is None or s["name"] == name]
    listed = out.get("errors", [])  # a guest's list has no paths or errors
    errors = listed if name is None else _own_errors(listed, name, skills)
    directories = None if all("path" in s for s in skills) else _directories()
    if name is not None and not skills and not errors:
        _find(name)  # raises unknown_skill (or why a built-in tool shadows it), as `skills run|view` do
    cases_of: dict[str, list[dict[str, Any]]] = {}
    sandboxed = context()  # evals/evals.json is judged as the skill's other files are (skillrefs)
    try:
        for s in skills:
            directory = s["path"] if directories is None else directories[s["name"]]
            try:
                cases_of[s["name"]] = _evals(directory, sandboxed)
            except ValueError as e:
                errors.append({"path": directory, "code": "invalid_evals", "message": str(e)})
            except ToolError as e:  # protected_path: that skill's error; the other skills still run
                errors.append({"path": directory, "code": e.code, "message": e.message})
    finally:
        sandboxed.close()
    results: list[dict[str, Any]] = []
    for s in skills:
        for case in [] if no_evals else cases_of.get(s["name"], []):
            try:
                run = _run(s["name"], case["prompt"], None, provider, model)
            except ToolError as e:  # the run could not start (no provider ...): this case fails
                run = {"status": "failed", "output": "", "error": e.to_dict()}
            missed = [x for x in case["expectations"] if not _expectation_met(x, run["output"])]
            ok = run["status"] == "completed" and not missed
            results.append(
                {
                    "skill": s["name"],
                    "case": case.get("name", ""),
                    "passed": ok,
                    "status": run["status"],
                    "missed": missed,
                    "error": run.get("error"),
                }
            )
    report = {"skills": len(skills), "errors": errors, "evals": results}
    if as_json:
        emit_json(report)
    else:
        for err in errors:
            typer.echo(f"ERROR {err['message']}")
        for r in results:
            why = "" if r["passed"] else f" ({r['status']}; missed: {', '.join(r['missed']) or '-'})"
            typer.echo(f"{'PASS' if r['passed'] else 'FAIL'} {r['skill']}/{r['case']}{why}")
        typer.echo(
            f"{len(skills)} skills loaded, {len(errors)} errors, {sum(r['passed'] for r in results)}/{len(results)} evals passed."
        )
    if errors or not all(r["passed"] for r in results):
        raise typer.Exit(1)
