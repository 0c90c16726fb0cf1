"""The coding-agent tools (seed 000 "Coding agents"): codex_run, claude_code_run, codex_cloud_run,
list_coding_runs, get_coding_run, cancel_coding_run, stop_tracking_coding_run. Gated twice (registration, advertisement) and authorized at dispatch.

codex_cloud_run and stop_tracking_coding_run are registered only with `cloud_enabled = true`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from ..core.context import ToolContext
from ..core.errors import ToolError
from ..core.params import AfterValidator, Field
from ..core.registry import Example, FailureMode, Hints, Params, ToolSpec, specs
from .gates import advertised, gate, shown_by_default

PROMPT_MAX = 10 * 1024 * 1024
Path = Annotated[str, Field(min_length=1, max_length=4096)]
Paths = Annotated[list[Path] | None, Field(max_length=64)]
Timeout = Annotated[
    int | None, Field(ge=1, le=240, description="Wall-clock timeout in minutes (default 30, max 240)")
]
Progress = Annotated[
    Literal["quiet", "milestones"] | None,
    Field(description="`quiet` (default) or `milestones`: throttled progress notices, at most one per 60 s"),
]
RunId = Annotated[str, Field(pattern=r"^hr_[0-9a-f]{12}$", description="The coding run id (`hr_…`)")]


def _not_a_flag(value: str) -> str:
    # Every Word becomes one argv element of the vendor CLI: one starting with a dash would be read as
    # a flag of its own (`--dangerously-skip-permissions`), whatever option it was meant as the value of.
    if value.startswith("-"):
        raise ValueError(
            "must not start with '-': the value is passed to the vendor CLI as an argument, where it would "
            "be read as a flag; give the name or id itself"
        )
    return value


WORD_PATTERN = r"^[^\x00-\x1f]+$"
Word = Annotated[str, Field(min_length=1, max_length=200, pattern=WORD_PATTERN), AfterValidator(_not_a_flag)]

CODEX_POSTURES = ("read-only", "workspace-write")
CODEX_REFUSED = ("danger-full-access",)
CLAUDE_MODES = ("acceptEdits", "auto", "manual", "dontAsk", "plan")
CLAUDE_REFUSED = ("bypassPermissions",)
CLAUDE_EFFORTS = ("low", "medium", "high", "xhigh", "max")


class CodexRunParams(Params):
    prompt: Annotated[
        str, Field(min_length=1, max_length=PROMPT_MAX, description="The coding task for Codex to carry out")
    ]
    cwd: Annotated[Path, Field(description="Absolute path of the repository or working directory")]
    model: Annotated[Word | None, Field(description="Codex model override")] = None
    effort: Annotated[
        str | None,
        Field(pattern=r"^[a-z]{1,16}$", description="Reasoning-effort override (e.g. low, medium, high)"),
    ] = None
    sandbox: Annotated[
        str | None,
        Field(
            max_length=64,
            description="Codex sandbox mode: `read-only` or `workspace-write`. Omit to inherit the operator's "
            "configured posture (`danger-full-access` is refused)",
        ),
    ] = None
    add_dirs: Annotated[
        Paths,
        Field(description="Extra writable directories, each sandbox-checked and locked; refused on `resume`"),
    ] = None
    ephemeral: Annotated[
        bool | None, Field(description="Write no session files (not resumable); conflicts with `resume`")
    ] = None
    profile: Annotated[Word | None, Field(description="Named Codex profile; refused on `resume`")] = None
    images: Annotated[Paths, Field(description="Image file paths to attach; sandbox-read-checked")] = None
    output_schema: Annotated[
        Path | None, Field(description="Path to a JSON output-schema file; sandbox-read-checked")
    ] = None
    resume: Annotated[Word | None, Field(description="Resume a prior Codex thread by id")] = None
    timeout_minutes: Timeout = None
    progress: Progress = None


def _codex_launch(p: CodexRunParams, ctx: ToolContext) -> Any:
    from .launch import Launch, admit_cwd, admit_dirs, admit_files, refuse_posture

    tool = "codex_run"
    if p.sandbox in CODEX_REFUSED:
        raise refuse_posture(tool, "sandbox", p.sandbox)
    if p.sandbox is not None and p.sandbox not in CODEX_POSTURES:
        raise ToolError(
            "invalid_input",
            f"sandbox must be read-only or workspace-write, got {p.sandbox!r}",
            {"sandbox": p.sandbox},
        )
    if p.resume is not None:
        for name, value in (("add_dirs", p.add_dirs), ("profile", p.profile), ("ephemeral", p.ephemeral)):
            if value:
                raise ToolError(
                    "invalid_resume",
                    f"{name} cannot be combined with resume: a resumed thread keeps its directories and profile"
                    + (" (and an ephemeral run is not resumable)" if name == "ephemeral" else ""),
                    {"param": name},
                )
    cwd = admit_cwd(ctx, tool, p.cwd)
    add_dirs = admit_dirs(ctx, tool, p.add_dirs or [])
    images = admit_files(ctx, tool, p.images or [], "images")
    schema = admit_files(ctx, tool, [p.output_schema], "output_schema")[0] if p.output_schema else None
    options = ["exec", "--json", "--cd", cwd]
    if p.model:
        options += ["--model", p.model]
    if p.effort:
        options += ["-c", f"model_reasoning_effort={p.effort}"]
    if p.sandbox:
        options += ["--sandbox", p.sandbox]
    for d in add_dirs:
        options += ["--add-dir", d]
    if p.ephemeral:
        options.append("--ephemeral")
    if p.profile:
        options += ["--profile", p.profile]
    for img in images:
        options += ["--image", img]
    if schema:
        options += ["--output-schema", schema]
    return Launch(
        tool=tool,
        vendor="codex",
        prompt=p.prompt,
        cwd=cwd,
        add_dirs=add_dirs,
        options=options,
        trailer=["resume", p.resume] if p.resume else [],
        posture=p.sandbox,
        resume_of=p.resume,
        ephemeral=bool(p.ephemeral),
        timeout_minutes=p.timeout_minutes or 30,
        progress=p.progress or "quiet",
    )


def codex_run(p: CodexRunParams, ctx: ToolContext) -> dict[str, Any]:
    from .launch import start

    return start(ctx, _codex_launch(p, ctx))


ClaudeRunParams: type[Params] = type(
    "ClaudeRunParams",
    (Params,),
    {
        "__module__": __name__,
        "__annotations__": {
            "prompt": Annotated[
                str,
                Field(
                    min_length=1,
                    max_length=PROMPT_MAX,
                    description="The coding task for Claude Code to carry out",
                ),
            ],
            "cwd": Annotated[Path, Field(description="Absolute path of the repository or working directory")],
            "model": Annotated[Word | None, Field(description="Claude model override")],
            "effort": Annotated[
                Literal["low", "medium", "high", "xhigh", "max"] | None,
                Field(description="Reasoning effort: `low`, `medium`, `high`, `xhigh`, or `max`"),
            ],
            "permission_mode": Annotated[
                str | None,
                Field(
                    max_length=64,
                    description="`acceptEdits`, `auto`, `manual`, `dontAsk`, or `plan`. Omit to inherit the operator's "
                    "configured posture (`bypassPermissions` is refused)",
                ),
            ],
            "allowed_tools": Annotated[
                list[Word] | None, Field(max_length=200, description="Tool names to allow in the run")
            ],
            "disallowed_tools": Annotated[
                list[Word] | None, Field(max_length=200, description="Tool names to disallow")
            ],
            "append_system_prompt": Annotated[
                str | None, Field(max_length=100_000, description="Extra system-prompt text to append")
            ],
            "append_system_prompt_file": Annotated[
                Path | None,
                Field(
                    description="Path to a file whose contents append to the system prompt; sandbox-read-checked"
                ),
            ],
            "add_dirs": Annotated[
                Paths, Field(description="Extra writable directories, each sandbox-checked and locked")
            ],
            "max_turns": Annotated[int | None, Field(ge=1, le=10_000, description="Maximum agent turns")],
            "json_schema": Annotated[
                str | None, Field(max_length=100_000, description="JSON schema for structured output")
            ],
            "resume": Annotated[
                Word | None,
                Field(description="Resume a prior Claude session by id; mutually exclusive with `continue`"),
            ],
            "continue": Annotated[bool | None, Field(description="Continue the most recent session")],
            "bare": Annotated[
                bool | None,
                Field(description="Skip the OAuth/keychain login and read `ANTHROPIC_API_KEY` only"),
            ],
            "timeout_minutes": Timeout,
            "progress": Progress,
        },
        **{
            name: None
            for name in (
                "model",
                "effort",
                "permission_mode",
                "allowed_tools",
                "disallowed_tools",
                "append_system_prompt",
                "append_system_prompt_file",
                "add_dirs",
                "max_turns",
                "json_schema",
                "resume",
                "continue",
                "bare",
                "timeout_minutes",
                "progress",
            )
        },
    },
)


def _claude_launch(p: Any, ctx: ToolContext) -> Any:
    from .launch import Launch, admit_cwd, admit_dirs, admit_files, refuse_posture

    tool = "claude_code_run"
    mode = p.permission_mode
    if mode in CLAUDE_REFUSED:
        raise refuse_posture(tool, "permission_mode", mode)
    if mode is not None and mode not in CLAUDE_MODES:
        raise ToolError(
            "invalid_input",
            f"permission_mode must be one of {', '.join(CLAUDE_MODES)}, got {mode!r}",
            {"permission_mode": mode},
        )
    again = getattr(p, "continue")
    if p.resume is not None and again:
        raise ToolError(
            "invalid_resume", "resume and continue are mutually exclusive: give one", {"param": "continue"}
        )
    if p.json_schema is not None:
        import json

        try:
            json.loads(p.json_schema)
        except ValueError as e:
            raise ToolError("invalid_json_schema", f"json_schema is not valid JSON: {e}", {}) from None
    cwd = admit_cwd(ctx, tool, p.cwd)
    add_dirs = admit_dirs(ctx, tool, p.add_dirs or [])
    sp_file = (
        admit_files(ctx, tool, [p.append_system_prompt_file], "append_system_prompt_file")[0]
        if p.append_system_prompt_file
        else None
    )
    options = ["-p", "--output-format", "stream-json", "--verbose"]
    if p.model:
        options += ["--model", p.model]
    if p.effort:
        options += ["--effort", p.effort]
    if mode:
        options += ["--permission-mode", mode]
    if p.allowed_tools:
        options += ["--allowedTools", *p.allowed_tools]
    if p.disallowed_tools:
        options += ["--disallowedTools", *p.disallowed_tools]
    # Free text goes in the `--flag=value` form, so text starting with a dash is never read as a flag.
    if p.append_system_prompt is not None:
        options.append(f"--append-system-prompt={p.append_system_prompt}")
    if sp_file:
        options += ["--append-system-prompt-file", sp_file]
    if add_dirs:
        options += ["--add-dir", *add_dirs]
    if p.max_turns is not None:
        options += ["--max-turns", str(p.max_turns)]
    if p.json_schema is not None:
        options.append(f"--json-schema={p.json_schema}")
    if p.resume:
        options += ["--resume", p.resume]
    if again:
        options.append("--continue")
    if p.bare:
        options.append("--bare")
    return Launch(
        needs_env=["ANTHROPIC_API_KEY"] if p.bare else [],
        tool=tool,
        vendor="claude_code",
        prompt=p.prompt,
        cwd=cwd,
        add_dirs=add_dirs,
        options=options,
        posture=mode,
        resume_of=p.resume,
        timeout_minutes=p.timeout_minutes or 30,
        progress=p.progress or "quiet",
    )


def claude_code_run(p: Any, ctx: ToolContext) -> dict[str, Any]:
    from .launch import start

    return start(ctx, _claude_launch(p, ctx))


class CloudRunParams(Params):
    query: Annotated[
        str,
        Field(
            min_length=1,
            max_length=PROMPT_MAX,
            description="The coding task for the Codex cloud run to carry out",
        ),
    ]
    env_id: Annotated[
        str,
        Field(
            min_length=1,
            max_length=200,
            pattern=WORD_PATTERN,
            description="The Codex cloud environment id to run in",
        ),
        AfterValidator(_not_a_flag),
    ]
    branch: Annotated[
        Word | None, Field(description="Branch to run against (defaults to the environment's)")
    ] = None
    attempts: Annotated[int | None, Field(ge=1, le=4, description="Number of vendor attempts, 1–4")] = None


def codex_cloud_run(p: CloudRunParams, ctx: ToolContext) -> dict[str, Any]:
    from .cloud import submit

    return submit(ctx, p.query, p.env_id, p.branch, p.attempts)


class ListRunsParams(Params):
    status: Annotated[
        Literal["starting", "running", "completed", "failed", "cancelled", "timed_out", "lost", "untracked"]
        | None,
        Field(description="Status filter, e.g. `running`, `completed`, `failed`"),
    ] = None


LIST_LIMIT = 50


def list_coding_runs(p: ListRunsParams, ctx: ToolContext) -> dict[str, Any]:
    from .store import describe, settle

    settle(ctx)
    where, args = ("WHERE status = ?", (p.status,)) if p.status else ("", ())
    rows = ctx.state.query(
        f"SELECT * FROM coding_runs {where} ORDER BY created_at DESC LIMIT ?", (*args, LIST_LIMIT + 1)
    )
    more = len(rows) > LIST_LIMIT
    runs = [describe(r, full=False) for r in rows[:LIST_LIMIT]]
    return {
        "active": [r for r in runs if r["status"] in ("starting", "running")],
        "recent": [
            r
            for r in runs
            if r["status"] not in ("starting", "running") and r["delivery"]["state"] != "dead_letter"
        ],
        "dead_lettered": [r for r in runs if r["delivery"]["state"] == "dead_letter"],
        "complete": not more,
    }


class RunIdParams(Params):
    run_id: RunId


def get_coding_run(p: RunIdParams, ctx: ToolContext) -> dict[str, Any]:
    from .store import describe, get_row, settle

    settle(ctx)
    return describe(get_row(ctx, p.run_id), full=True)


def cancel_coding_run(p: RunIdParams, ctx: ToolContext) -> dict[str, Any]:
    from .store import cancel

    return cancel(ctx, p.run_id)


def stop_tracking_coding_run(p: RunIdParams, ctx: ToolContext) -> dict[str, Any]:
    from .cloud import stop_tracking

    return stop_tracking(ctx, p.run_id)


_AUTH = (
    FailureMode("not_attended", "not a live attended owner turn (an unattended run, a skill, an MCP caller)"),
    FailureMode("subagent_refused", "called from a delegated subagent"),
    FailureMode("job_not_allowed", "a scheduled job whose allowed_tools does not name this tool"),
)
_RUN_FAILS = (
    FailureMode("harness_not_approved", "the owner has not approved coding agents on this machine"),
    FailureMode("too_many_runs", "2 runs (max_concurrent_runs) are already running"),
    FailureMode(
        "worktree_busy",
        "another run is working in the same git worktree, or in a non-checkout directory above or below it",
    ),
    FailureMode("unsafe_posture", "danger-full-access / bypassPermissions is refused"),
    FailureMode(
        "outside_root",
        "cwd or a path is outside the sandbox; run fermix grant path or request_directory_access",
    ),
    FailureMode("invalid_resume", "a resume combined with options it cannot take"),
    FailureMode(
        "argument_too_long", "a value is over the OS cap on one command-line argument (128 KiB on Linux)"
    ),
)
_BACKGROUND = (
    " Background-only: returns a run id (`hr_` + 12 hex) at once; the outcome re-enters the conversation on its "
    "own when the run ends. At most 2 runs at once and 1 per git worktree."
)


def _spec(
    name: str, policy: Any, description: str, params: type[Params], handler: Any, **kw: Any
) -> ToolSpec:
    return ToolSpec(
        name=name,
        category="harness",
        policy_class=policy,
        owner_only=True,
        description=description,
        params=params,
        handler=handler,
        available=advertised(name),
        advertise=shown_by_default(name),
        gate=gate(name),
        **kw,
    )


TOOLS = specs(
    _spec(
        "codex_run",
        "exec",
        "Run a background coding task in a repository via the Codex CLI (`codex exec`). cwd, add_dirs, images and "
        "output_schema must clear the sandbox; omitting sandbox sends no posture flag (the operator's Codex config "
        "applies). Prompts over 200 KB (120 KiB on Linux, which caps one argument at 128 KiB) spill to a brief file."
        + _BACKGROUND,
        CodexRunParams,
        codex_run,
        hints=Hints(destructive=True, open_world=True),
        when_to_use="Hand repository work (review, fix, implement, refactor) to Codex; it runs on the live branch.",
        examples=(
            Example(
                {
                    "prompt": "Fix the failing test in tests/test_api.py",
                    "cwd": "/home/me/src/app",
                    "sandbox": "workspace-write",
                },
                "a fix",
            ),
        ),
        failure_modes=(*_AUTH, *_RUN_FAILS),
    ),
    _spec(
        "claude_code_run",
        "exec",
        "Run a background coding task in a repository via the Claude Code CLI (`claude -p`). cwd, add_dirs and "
        "append_system_prompt_file must clear the sandbox; omitting permission_mode sends no posture flag. "
        "bare skips the OAuth/keychain login and reads ANTHROPIC_API_KEY only, which [sandbox.env] must pass."
        + _BACKGROUND,
        ClaudeRunParams,
        claude_code_run,
        hints=Hints(destructive=True, open_world=True),
        when_to_use="Hand repository work (review, fix, implement, refactor) to Claude Code; it runs on the live branch.",
        examples=(
            Example(
                {
                    "prompt": "Review the last commit for bugs",
                    "cwd": "/home/me/src/app",
                    "permission_mode": "plan",
                },
                "a review",
            ),
        ),
        failure_modes=(
            *_AUTH,
            *_RUN_FAILS,
            FailureMode(
                "missing_credentials", "bare: true, and [sandbox.env] does not pass ANTHROPIC_API_KEY"
            ),
        ),
    ),
    _spec(
        "codex_cloud_run",
        "exec",
        "Submit a coding task to a pre-configured Codex cloud environment (`codex cloud exec`); nothing runs "
        "locally. fermix tracks it by polling every 120 s up to 90 minutes, then delivers the task URL. The query "
        "is one command-line argument of at most 200 KB (120 KiB on Linux); a longer one is refused, never truncated. Registered only "
        "with [fermix_core.harness] cloud_enabled.",
        CloudRunParams,
        codex_cloud_run,
        hints=Hints(open_world=True),
        when_to_use="Long repository work that should run on Codex cloud rather than this machine.",
        examples=(
            Example(
                {"query": "Upgrade the test suite to pytest 8", "env_id": "env_123", "attempts": 2},
                "a cloud task",
            ),
        ),
        failure_modes=(
            *_AUTH,
            FailureMode("harness_not_approved", "the owner has not approved coding agents on this machine"),
            FailureMode(
                "query_too_long", "the query exceeds the one-argument cap (200 KB; 120 KiB on Linux)"
            ),
            FailureMode("cloud_submit_failed", "codex cloud exec did not submit the task"),
        ),
    ),
    _spec(
        "list_coding_runs",
        "read_only",
        "List coding runs, their status and delivery state: active, recent, and dead-lettered (outcomes whose "
        "delivery gave up; raise those to the owner).",
        ListRunsParams,
        list_coding_runs,
        hints=Hints(read_only=True, idempotent=True),
        when_to_use="See what coding runs are going on or finished.",
        examples=(Example({"status": "running"}, "the runs in flight"),),
        failure_modes=_AUTH,
    ),
    _spec(
        "get_coding_run",
        "read_only",
        "Fetch one coding run in full: vendor, rail, status and reason, cwd, resumability, delivery, timestamps and "
        "duration, usage, exit code, a diagnostics tail and `result_tail` (the deliverable or the vendor's error "
        "text, at most 4,096 bytes).",
        RunIdParams,
        get_coding_run,
        hints=Hints(read_only=True, idempotent=True),
        when_to_use="Read a run's outcome or check on one in flight.",
        examples=(Example({"run_id": "hr_0123456789ab"}, "one run"),),
        failure_modes=(*_AUTH, FailureMode("not_found", "no run with that id")),
    ),
    _spec(
        "cancel_coding_run",
        "read_write",
        "Cancel an active local coding run: its whole process group is ended, then it is marked `cancelled`; the "
        "outcome arrives as a plain message and never continues the conversation.",
        RunIdParams,
        cancel_coding_run,
        hints=Hints(destructive=True, idempotent=False),
        when_to_use="Stop a coding run that is no longer wanted or has gone astray.",
        examples=(Example({"run_id": "hr_0123456789ab"}, "stop a run"),),
        failure_modes=(
            *_AUTH,
            FailureMode("not_found", "no run with that id"),
            FailureMode("run_finished", "the run already ended"),
        ),
    ),
    _spec(
        "stop_tracking_coding_run",
        "read_write",
        "Stop tracking an active Codex cloud run and deliver its task URL. The vendor-side task keeps running on "
        "ChatGPT; nothing claims it stopped. Registered only with [fermix_core.harness] cloud_enabled.",
        RunIdParams,
        stop_tracking_coding_run,
        hints=Hints(idempotent=False),
        when_to_use="A cloud run you no longer want fermix to watch (it cannot be cancelled).",
        examples=(Example({"run_id": "hr_0123456789ab"}, "stop watching a cloud run"),),
        failure_modes=(
            *_AUTH,
            FailureMode("not_found", "no run with that id"),
            FailureMode("not_cloud_run", "the run is local (use cancel_coding_run)"),
            FailureMode("run_starting", "the run is still being submitted; try again in a moment"),
            FailureMode("run_finished", "the run is no longer tracked"),
        ),
    ),
)
