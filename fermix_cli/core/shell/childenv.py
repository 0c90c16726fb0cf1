"""The environment a shell or git child gets: replaced, not inherited, plus the `[sandbox.env]` names.

Base names come from fermix's own environment: PATH, HOME, USER, LANG, SHELL, TMPDIR and every
LC_*. Each allowed name is resolved per command from its source: fermix's environment (under its own
name or an alias) or a helper command. Helpers share one 5 s budget and must print a single line of
at most 8192 bytes. A name that cannot be resolved is reported, never fatal. Allowed values of 8
bytes or more are returned as secrets for redaction. Values travel only in the environment.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Mapping

from ..config import EnvVarSource, SandboxEnv
from ..records import Record, field
from .procgroup import SPAWN_MARKER, run_captured

BASE_NAMES = ("PATH", "HOME", "USER", "LANG", "SHELL", "TMPDIR")
HELPER_BUDGET_S = 5.0
HELPER_LINE_MAX = 8192
SECRET_MIN_BYTES = 8


class MissingVar(Record, frozen=True):
    name: str
    reason: str

    def note(self) -> str:
        return (
            f"environment variable {self.name} is allowed but was not passed ({self.reason}); "
            f"the command ran without it. Export {self.name} before starting fermix, or configure "
            f"[sandbox.env.vars.{self.name}]."
        )


class ChildEnv(Record):
    """The child's environment, the values to redact from its output, and what could not be resolved."""

    env: dict[str, str]
    secrets: list[str] = field(default_factory=list)
    missing: list[MissingVar] = field(default_factory=list)

    @property
    def missing_names(self) -> list[str]:
        return [m.name for m in self.missing]

    @property
    def notes(self) -> list[str]:
        return [m.note() for m in self.missing]


def base_env(source: Mapping[str, str]) -> dict[str, str]:
    """PATH, HOME, USER, LANG, SHELL, TMPDIR and LC_* from `source`, nothing else."""
    return {k: v for k, v in source.items() if k in BASE_NAMES or k.startswith("LC_")}


def allowed_names(cfg: SandboxEnv) -> list[str]:
    """`allow` plus every name with a `vars` entry, in order, minus `deny`."""
    out: list[str] = []
    for name in [*cfg.allow, *cfg.vars]:
        if name not in out and name not in cfg.deny:
            out.append(name)
    return out


def build_child_env(
    cfg: SandboxEnv,
    *,
    source: Mapping[str, str] | None = None,
    helper_cwd: str | None = None,
    only: str | None = None,
) -> ChildEnv:
    """Resolve the environment for one command (helpers run now, once each, within the budget).

    `only`: resolve that allowed name alone (no other helper runs), as `fermix sandbox env get` does.
    """
    source = dict(os.environ if source is None else source)
    source.pop(SPAWN_MARKER, None)
    if cfg.mode == "all":
        env = {k: v for k, v in source.items() if k not in cfg.deny}
    else:
        env = {k: v for k, v in base_env(source).items() if k not in cfg.deny}
    out = ChildEnv(env)
    budget_end = time.monotonic() + HELPER_BUDGET_S
    helper_env = base_env(source)
    for name in allowed_names(cfg):
        if only is not None and name != only:
            continue
        spec = cfg.vars.get(name, EnvVarSource())
        if spec.source == "command":
            value, why = _run_helper(spec, helper_env, helper_cwd, budget_end)
        else:
            alias = spec.name or name
            value = source.get(alias)
            why = "not set in fermix's environment" if alias == name else f"{alias} is not set"
        if value is None:
            env.pop(name, None)
            out.missing.append(MissingVar(name, why))
            continue
        env[name] = value
        if len(value.encode("utf-8", "surrogateescape")) >= SECRET_MIN_BYTES:
            out.secrets.append(value)
    return out


def _run_helper(
    spec: EnvVarSource, env: dict[str, str], cwd: str | None, budget_end: float
) -> tuple[str | None, str]:
    remaining = budget_end - time.monotonic()
    if remaining <= 0:
        return None, "the 5 s budget for helper commands was used up"
    command = spec.command or ""
    program = command if "/" in command else shutil.which(command, path=env.get("PATH", os.defpath))
    if not program:
        return None, f"helper command {command!r} was not found"
    run_dir = cwd if cwd and os.path.isdir(cwd) else (env.get("HOME") or "/")
    try:
        outcome = run_captured(
            [program, *spec.args],
            cwd=run_dir if os.path.isdir(run_dir) else "/",
            env=env,
            timeout_s=min(spec.timeout_ms / 1000, remaining),
            cap=HELPER_LINE_MAX + 2,
        )
    except OSError as e:
        return None, f"helper command {command!r} could not start ({e.strerror or e})"
    if outcome.timed_out:
        return None, f"helper command {command!r} timed out"
    if outcome.exit_code != 0:
        return None, f"helper command {command!r} exited with code {outcome.exit_code}"
    raw = outcome.output
    if raw.endswith(b"\n"):
        raw = raw[:-1]
    if b"\n" in raw or b"\0" in raw:
        return None, f"helper command {command!r} printed more than one line"
    if len(raw) > HELPER_LINE_MAX or outcome.truncated:
        return None, f"helper command {command!r} printed more than {HELPER_LINE_MAX} bytes"
    return raw.decode("utf-8", "surrogateescape"), ""
