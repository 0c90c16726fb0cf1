"""`fermix jobs ...`: scheduled jobs for people. Every change goes through the job tools' own checks.

`fermix jobs run` (what cron calls) and `fermix jobs worker` take the fast path in `__main__`; they are
declared here only so that `fermix jobs --help` lists `run`.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from ..core.errors import ToolError
from .common import GLOBAL, context, emit_json, emit_result, handles_errors, invoke_tool

app = typer.Typer(
    help="Scheduled jobs: add, list, pause, resume, remove, run now, read runs; `jobs install` sets up cron.",
    no_args_is_help=True,
)

JsonOpt = Annotated[bool, typer.Option("--json", help="JSON output.")]
JobArg = Annotated[str, typer.Argument(metavar="JOB_ID", help="The job's id (see fermix jobs list).")]


def _job_block(job: dict[str, Any]) -> str:
    what = job["command"] if job["kind"] == "command" else job["task_prompt"]
    lines = [
        f"{job['id']}  [{job['state']}]  {job['name']}",
        f"  schedule   {job['schedule']} ({job['schedule_kind']}, {job['timezone']})",
        f"  next run   {job['next_run_at'] or '-'}"
        + (" (paused; computed on resume)" if job["state"] == "paused" else ""),
        f"  {'command ' if job['kind'] == 'command' else 'task    '}   {what}",
        f"  delivery   {job['delivery']['mode']}"
        + (f" {json.dumps(job['delivery']['target'])}" if job["delivery"]["target"] else ""),
    ]
    if job["route_pin"]:
        lines.append(f"  model      {job['route_pin']['provider']}/{job['route_pin']['model']}")
    if job["allowed_tools"] is not None:
        lines.append(f"  tools      {', '.join(job['allowed_tools']) or '(none)'}")
    if job["expires_at"]:
        lines.append(f"  expires    {job['expires_at']}")
    last = job["last_run"]
    if last:
        lines.append(
            f"  last run   {last['status'] or '-'} at {last['at'] or '-'}"
            + (f": {last['error']}" if last["error"] else "")
        )
    return "\n".join(lines)


def _run_line(r: dict[str, Any]) -> str:
    tail = ""
    if r["error"]:
        tail = f"  {r['error']['code']}: {r['error']['message']}"
    elif r["reason"]:
        tail = f"  {r['reason']}"
    elif r["final_response"]:
        text = r["final_response"].strip().replace("\n", " ")
        tail = f"  {text if len(text) <= 100 else text[:97] + '...'}"
    return f"{r['run_id']}  {r['status']:<8} {r['trigger']:<8} {r['scheduled_for']}{tail}"


@app.command("list")
@handles_errors
def list_cmd(
    state: Annotated[str | None, typer.Option("--state", help="Only jobs in this state.")] = None,
    limit: Annotated[int, typer.Option("--limit", min=1, max=1000, help="Show at most this many.")] = 100,
    as_json: JsonOpt = False,
) -> None:
    """List scheduled jobs, oldest first."""
    result = invoke_tool("list_jobs", {"state": state, "limit": limit})
    if as_json:
        emit_json(result)
        return
    if not result["jobs"]:
        typer.echo("No scheduled jobs. Add one with: fermix jobs add NAME --schedule EXPR --task TEXT")
        return
    for job in result["jobs"]:
        last = job["last_run"]
        outcome = f"last {last['status']}" if last and last["status"] else "never run"
        typer.echo(
            f"{job['id']:<24} {job['state']:<10} {job['schedule']:<20} next {job['next_run_at'] or '-':<28} {outcome}"
        )
    if result["more"]:
        typer.echo(f"Showing {len(result['jobs'])} of {result['total']}; raise --limit to see more.")
    _interrupted_note()


def _interrupted_note() -> None:
    """A line under the table when kept runs ended interrupted or lost (see `fermix jobs status`)."""
    from ..jobs.health import describe, interrupted_runs

    ctx = context()
    try:
        found = interrupted_runs(ctx.state.conn)
    finally:
        ctx.close()
    if found["count"]:
        typer.echo(f"Note: {describe(found)}")


@app.command("status")
@handles_errors
def status_cmd(as_json: JsonOpt = False) -> None:
    """Jobs by state, runs in flight, interrupted runs and reminders (failed deliveries named) in one look."""
    from ..events.health import reminder_counts
    from ..jobs.health import describe, interrupted_runs, job_state_counts

    ctx = context()
    try:
        db = ctx.state.conn
        jobs = job_state_counts(db, ctx.now())
        active = db.execute("SELECT count(*) FROM job_runs WHERE status IN ('queued', 'running')").fetchone()[
            0
        ]
        reminders = reminder_counts(db)
        interrupted = interrupted_runs(db)
    finally:
        ctx.close()
    if as_json:
        emit_json(
            {"jobs": jobs, "runs_in_flight": active, "interrupted_runs": interrupted, "reminders": reminders}
        )
        return
    states = ", ".join(f"{n} {s}" for s, n in sorted(jobs.items())) or "none"
    typer.echo(f"jobs        {states}; {active} run(s) in flight")
    if interrupted["count"]:
        typer.echo(f"interrupted {describe(interrupted)}")
    counts = reminders["counts"]
    summary = ", ".join(f"{n} {s}" for s, n in sorted(counts.items())) or "none"
    typer.echo(f"reminders   {summary}")
    for r in reminders["failed"]:
        typer.echo(
            f"  FAILED {r['id']} {r['title']!r} due {r['scheduled_for']}: {r['last_error_code'] or ''} "
            f"{r['last_error'] or ''}".rstrip()
        )
    if reminders["failed"]:
        typer.echo("  see: fermix events list --status any")


@app.command("show")
@handles_errors
def show_cmd(
    ident: Annotated[str, typer.Argument(metavar="JOB_ID|RUN_ID", help="A job id, or a run id (run_...).")],
    as_json: JsonOpt = False,
) -> None:
    """Show a job with its latest runs, or one run in full."""
    if ident.startswith("run_"):
        run = invoke_tool("get_job_run", {"run_id": ident})["run"]
        if as_json:
            emit_json(run)
            return
        for key in ("run_id", "job_id", "status", "reason", "trigger", "scheduled_for", "started_at", "finished_at",
                    "duration_ms", "session_id", "iterations", "usage", "delivery", "output_path"):  # fmt: skip
            if run.get(key) is not None:
                value = run[key] if isinstance(run[key], str | int | float) else json.dumps(run[key])
                typer.echo(f"{key:<14} {value}")
        if run["error"]:
            typer.echo(f"{'error':<14} {run['error']['code']}: {run['error']['message']}")
        if run["tool_failures"]:
            typer.echo(f"{'tool failures':<14} {json.dumps(run['tool_failures'])}")
        for a in run.get("attachments", []):
            code = f" ({a['detail']['code']})" if a["status"] != "sent" and a["detail"] else ""
            typer.echo(
                f"{'attachment ' + str(a['seq']):<14} {a['status']}{code} {a['filename']} ({a['kind']}, {a['bytes']} bytes)"
            )
        if run["final_response"]:
            typer.echo("\n" + run["final_response"])
        return
    from ..jobs.job import fetch_job

    ctx = context()
    try:
        job = fetch_job(ctx.state.conn, ident).as_dict(ctx.now())  # by id: not among the first N listed
    except ToolError as e:
        if e.code != "not_found":
            raise
        raise ToolError(
            "not_found", f"No job with id {ident!r}. Run: fermix jobs list", {"job_id": ident}
        ) from None
    finally:
        ctx.close()
    runs = invoke_tool("list_job_runs", {"job_id": ident, "limit": 5})
    if as_json:
        emit_json({"job": job, "runs": runs["runs"]})
        return
    typer.echo(_job_block(job))
    if runs["runs"]:
        typer.echo("\nLatest runs:")
        for r in runs["runs"]:
            typer.echo("  " + _run_line(r))


@app.command("add")
@handles_errors
def add_cmd(
    name: Annotated[str, typer.Argument(help="Job name; the id is its slug.")],
    schedule: Annotated[
        str,
        typer.Option(
            "--schedule", "-s", help="`every 15 minutes`, a 5-field cron, or an ISO-8601 instant with offset."
        ),
    ],
    task: Annotated[str | None, typer.Option("--task", help="What a model run should do.")] = None,
    command: Annotated[
        str | None,
        typer.Option("--command", help="Run this shell command instead of a model (no model needed)."),
    ] = None,
    timezone: Annotated[
        str | None, typer.Option("--timezone", "--tz", help="IANA zone for a cron (default UTC).")
    ] = None,
    description: Annotated[str | None, typer.Option("--description", help="Short description.")] = None,
    expires_at: Annotated[
        str | None, typer.Option("--expires-at", help="ISO-8601 instant with offset.")
    ] = None,
    allow: Annotated[
        list[str] | None,
        typer.Option("--allow", help="A tool the runs may use (repeat; default: your tools)."),
    ] = None,
    skill: Annotated[str | None, typer.Option("--skill", help="Bind the runs to an installed skill.")] = None,
    provider: Annotated[
        str | None, typer.Option("--provider", metavar="PROVIDER", help="Pin a provider (with --model).")
    ] = None,
    model: Annotated[str | None, typer.Option("--model", help="Pin a model (with --provider).")] = None,
    timeout: Annotated[int | None, typer.Option("--timeout", help="Seconds per run (default 1800).")] = None,
    inactivity_timeout: Annotated[
        int | None, typer.Option("--inactivity-timeout", help="Seconds without progress (default 600).")
    ] = None,
    delivery: Annotated[
        str | None, typer.Option("--delivery", help="none, local, origin or channel.")
    ] = None,
    inbox: Annotated[
        str | None,
        typer.Option("--inbox", help="Deliver to the local inbox NAME (read: fermix inbox NAME)."),
    ] = None,
    target: Annotated[str | None, typer.Option("--target", help="A channel target as JSON.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Add a scheduled job: a model task (--task) or a shell command (--command)."""
    if (task is None) == (command is None):
        raise typer.BadParameter("give exactly one of --task and --command", param_hint="--task/--command")
    if inbox is not None and target is not None:
        raise typer.BadParameter("give --inbox or --target, not both", param_hint="--inbox")
    parsed_target: dict[str, Any] | None = None
    if target is not None:
        try:
            parsed_target = json.loads(target)
        except ValueError:
            raise typer.BadParameter("not valid JSON", param_hint="--target") from None
        if not isinstance(parsed_target, dict):
            raise typer.BadParameter("must be a JSON object", param_hint="--target")
    if inbox is not None:
        parsed_target = {"platform": "inbox", "recipient": inbox}
    args: dict[str, Any] = {
        "name": name,
        "schedule": schedule,
        "task": task,
        "timezone": timezone,
        "description": description,
        "expires_at": expires_at,
        "allowed_tools": allow,
        "skill_name": skill,
        "provider": provider,
        "model": model,
        "timeout_seconds": timeout,
        "inactivity_timeout_seconds": inactivity_timeout,
        "delivery_mode": delivery,
        "delivery_target": parsed_target,
    }
    result = _add_command_job(args, command) if command is not None else invoke_tool("schedule_job", args)
    emit_result(result, as_json)


def _add_command_job(args: dict[str, Any], command: str) -> dict[str, Any]:
    """A command job: schedule_job's checks and policy, plus the exec class a shell command needs."""
    from ..core import policy
    from ..core.registry import default_registry
    from ..jobs import store
    from ..jobs.tools import ScheduleJobParams, describe_delivery, describe_schedule

    registry = default_registry()
    ctx = context()
    try:
        spec = registry.get("schedule_job")
        policy.check(spec, ctx)
        if "exec" not in policy.effective_classes(ctx):
            raise ToolError(
                "policy_denied", "a command job runs a shell command, which needs the exec policy class.", {}
            )
        params = registry.parse(spec, {k: v for k, v in {**args, "task": command}.items() if v is not None})
        assert isinstance(params, ScheduleJobParams)
        fields = params.model_dump()
        job = store.create_job(ctx, store.NewJob(kind="command", **fields))
    finally:
        ctx.close()
    message = (
        f"Scheduled command job {job.id} ({job.name}): {describe_schedule(job)}; next run {job.next_run_at}. "
        f"Delivery: {describe_delivery(job)}."
    )
    return {"job": job.as_dict(), "message": message}


def _simple(tool: str, job_id: str, as_json: bool) -> None:
    result = invoke_tool(tool, {"job_id": job_id})
    emit_result(result, as_json)


@app.command("pause")
@handles_errors
def pause_cmd(job_id: JobArg, as_json: JsonOpt = False) -> None:
    """Pause a job: it stops running until resumed."""
    _simple("pause_job", job_id, as_json)


@app.command("resume")
@handles_errors
def resume_cmd(job_id: JobArg, as_json: JsonOpt = False) -> None:
    """Resume a paused job; its next run is computed from now."""
    _simple("resume_job", job_id, as_json)


@app.command("rm")
@handles_errors
def rm_cmd(job_id: JobArg, as_json: JsonOpt = False) -> None:
    """Remove a job and its run history (refused while a run is in flight)."""
    _simple("remove_job", job_id, as_json)


@app.command("runs")
@handles_errors
def runs_cmd(
    job_id: JobArg,
    status: Annotated[
        str | None, typer.Option("--status", help="queued, running, ok, error or skipped.")
    ] = None,
    limit: Annotated[
        int, typer.Option("--limit", min=1, max=100, help="At most this many, newest first.")
    ] = 20,
    as_json: JsonOpt = False,
) -> None:
    """A job's runs, newest first."""
    result = invoke_tool("list_job_runs", {"job_id": job_id, "status": status, "limit": limit})
    if as_json:
        emit_json(result)
        return
    if not result["runs"]:
        typer.echo(f"No runs of {job_id} yet.")
        return
    for r in result["runs"]:
        typer.echo(_run_line(r))


@app.command("run-now")
@handles_errors
def run_now_cmd(
    job_id: JobArg,
    detach: Annotated[
        bool, typer.Option("--detach", help="Start it in the background and return at once.")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Run a job now (trigger manual) through the normal runner; waits for it unless --detach."""
    if detach:
        _simple("run_job_now", job_id, as_json)
        return
    from ..core import policy
    from ..core.registry import default_registry
    from ..jobs import runner as jobs_runner
    from ..jobs import store
    from ..jobs.liveness import Runner

    ctx = context()
    try:
        policy.check(default_registry().get("run_job_now"), ctx)
        claimant = Runner.start(ctx.paths)
        try:
            claimed = jobs_runner.enqueue_manual(ctx, job_id, claimant)
        except BaseException:
            claimant.release()
            raise
        code, _ = jobs_runner.run_claimed_now(ctx, claimant, claimed)
        run = store.get_run(ctx.state.conn, claimed.run_id)
    finally:
        ctx.close()
    if as_json:
        emit_json(run)
    else:
        typer.echo(_run_line(run))
        if run["final_response"] and not run["error"]:
            typer.echo("\n" + run["final_response"].rstrip())
    if code:
        raise typer.Exit(code)
    if run["status"] != "ok":
        raise typer.Exit(1)


@app.command("inbox")
def inbox_cmd(
    name: Annotated[str, typer.Argument(help="The inbox (a delivery target's recipient).")] = "owner",
    last: Annotated[int, typer.Option("-n", "--last", min=0, help="Show the last N messages (0: all).")] = 20,
    as_json: JsonOpt = False,
) -> None:
    """Read a local inbox (the same as `fermix inbox NAME`)."""
    from .inbox_cmd import inbox

    inbox(name, last, as_json)


@app.command("install")
@handles_errors
def install_cmd(
    systemd: Annotated[
        bool, typer.Option("--systemd", help="A systemd user timer instead of a crontab line.")
    ] = False,
    apply: Annotated[bool, typer.Option("--apply", help="Install it (default: only print it).")] = False,
    remove: Annotated[bool, typer.Option("--remove", help="With --apply: uninstall instead.")] = False,
) -> None:
    """Print (or with --apply, install) what calls `fermix jobs run` every minute."""
    from ..jobs import install

    ctx = context()
    if remove and not apply:
        raise typer.BadParameter("--remove only makes sense with --apply", param_hint="--remove")
    if systemd:
        if apply:
            files = install.apply_systemd(ctx.paths, ctx.os_home, remove=remove)
            verb = "Removed" if remove else "Installed and started"
            typer.echo(f"{verb} the {install.UNIT}.timer systemd user timer ({', '.join(files)}).")
            return
        units = install.systemd_units(ctx.paths, ctx.os_home)
        typer.echo(f"# {units.directory}/{install.UNIT}.service\n{units.service}")
        typer.echo(f"# {units.directory}/{install.UNIT}.timer\n{units.timer}")
        typer.echo(
            f"# then: systemctl --user daemon-reload && systemctl --user enable --now {install.UNIT}.timer\n"
            "# (or run: fermix jobs install --systemd --apply)"
        )
        return
    if apply:
        line = install.apply_cron(ctx.paths, remove=remove)
        typer.echo(
            "Removed the fermix line from your crontab." if remove else f"Installed in your crontab:\n{line}"
        )
        return
    typer.echo(install.cron_line(ctx.paths))
    typer.echo("# add it with `crontab -e`, or run: fermix jobs install --apply", err=True)


@app.command(
    "run",
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
    add_help_option=False,
)
def run_cmd(ctx: typer.Context) -> None:
    """Run every due job once, then exit (what cron calls every minute; see fermix jobs run --help)."""
    from .jobs_run import main_jobs_fast

    raise typer.Exit(main_jobs_fast(["run", *ctx.args], GLOBAL))  # type: ignore[arg-type]
