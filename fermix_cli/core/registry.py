"""The tool registry: each tool declared once, as data plus a handler; `invoke` is the one entry point.

Tool family modules are imported only when one of their tools is needed, so a machine call pays
for exactly one family. The generated catalog (`core/catalog.py`) maps names to modules. `invoke`
finds a name through the context's toolsets (`core/toolsets.py`): the built-ins here, then the toolsets
families declare (MCP servers, ...).
"""

from __future__ import annotations

import importlib
import json
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from functools import cache
from typing import TYPE_CHECKING, Any, Literal

from . import policy
from .context import POLICY_CLASSES, ToolContext
from .errors import ExitClass, ToolError
from .jsonin import parse_object
from .params import Params, ValidationError  # tool modules import Params from here
from .records import Record, field

if TYPE_CHECKING:
    from .toolsets import Toolset

PolicyClass = Literal["read_only", "read_write", "exec", "network", "external_api", "gui_control"]


class NoParams(Params):
    """For tools that take no parameters."""


class Example(Record, frozen=True):
    args: Mapping[str, Any]
    note: str


class FailureMode(Record, frozen=True):
    tag: str
    description: str


class Hints(Record, frozen=True):
    """MCP-style hints about a tool's effects."""

    read_only: bool = False
    destructive: bool = False
    idempotent: bool = False
    open_world: bool = False


_NO_HINTS = Hints()

Handler = Callable[[Any, ToolContext], Any]


class ToolSpec(Record, frozen=True):
    """A tool, declared once. Everything else (CLI flags, schemas, docs, listings) derives from it."""

    name: str
    category: str
    policy_class: PolicyClass
    description: str
    params: type[Params]
    handler: Handler
    owner_only: bool = False
    hints: Hints = _NO_HINTS
    when_to_use: str = ""
    examples: tuple[Example, ...] = ()
    failure_modes: tuple[FailureMode, ...] = ()
    toolsets: frozenset[str] = frozenset({"fermix"})
    kind: Literal["builtin", "skill", "mcp", "plugin"] = "builtin"
    deferred: bool = False
    hidden_from_agent: bool = False
    available: Callable[[ToolContext], bool] | None = None
    # False where a model may call the tool by name but should not be shown it (neither its schema nor
    # its name): the coding harness's second vendor next to `default_vendor`. None: shown when available.
    advertise: Callable[[ToolContext], bool] | None = None
    gate: Callable[[ToolContext], None] | None = None
    # True where the gate decides who may call the tool at all and its refusal is what every caller it
    # refuses is told, checked before the policy checks: a context the tool is hidden from (a scheduled
    # job, a subagent, a guest) then hears the gate's typed refusal instead of "unknown tool" (the
    # events tools' `not_attended`, reference 9.1). Other hidden tools keep answering as unknown.
    gate_first: bool = False
    render: Callable[[Any], str] | None = None
    # The schema a model is shown in a given context, when the context changes it (a channel's own set of
    # reactions, computer_use's live posture); `invoke` still validates against `params`.
    live_schema: Callable[[ToolContext, dict[str, Any]], dict[str, Any]] | None = None
    # The Params a call in a given context is validated against (and its schema what a model there is
    # shown), when the context sets the limits (subagents' /ultra caps): the reference's per-turn
    # `dynamic_parameters`. `params` is what a context without such a mode gets, and what `--schema`, the
    # docs and MCP publish.
    live_params: Callable[[ToolContext], type[Params]] | None = None
    # Image files a result carries (a screenshot): a model loop sends them to the model as images.
    images: Callable[[Any], Sequence[str]] | None = None
    # input_schema()'s cache; MCP tools come with theirs
    _schema: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.policy_class not in POLICY_CLASSES:
            raise ValueError(f"{self.name}: unknown policy class {self.policy_class!r}")

    def input_schema(self) -> dict[str, Any]:
        """The JSON schema models and scripts see: refs inlined, titles dropped, null == absent."""
        if not self._schema:
            self._schema.update(published_schema(self.params))
        return self._schema

    def params_for(self, ctx: ToolContext | None) -> type[Params]:
        """The Params a call in `ctx` is validated against (`live_params`, else `params`)."""
        if ctx is None or self.live_params is None:
            return self.params
        return self.live_params(ctx)

    def schema_for(self, ctx: ToolContext | None) -> dict[str, Any]:
        """The input schema as a model in `ctx` sees it: its `live_params`' where the context sets them,
        and a changed copy where the tool's `live_schema` says."""
        params = self.params_for(ctx)
        schema = self.input_schema() if params is self.params else live_params_schema(params)
        if ctx is None or self.live_schema is None:
            return schema
        import copy

        return self.live_schema(ctx, copy.deepcopy(schema))

    @property
    def declared_read_only(self) -> bool:
        """Read-only both ways the registry declares it: the policy class and the MCP-style hint.

        Anything else (a command, a write, a send, a network request, another server's tool) leaves a
        start record before it runs when calls are recorded (`core/callstarts.py`).
        """
        return self.policy_class == "read_only" and self.hints.read_only

    def render_for_model(self, result: Any) -> str:
        if self.render is not None:
            return self.render(result)
        return json.dumps(result, ensure_ascii=False, separators=(",", ":"))

    def result_images(self, result: Any) -> tuple[str, ...]:
        """The image files `result` carries (none unless the tool declares `images`)."""
        return tuple(self.images(result)) if self.images is not None else ()


def published_schema(params: type[Params]) -> dict[str, Any]:
    """`params`' JSON schema as fermix publishes it: refs inlined, titles dropped, null == absent."""
    schema = clean_schema(params.model_json_schema())
    return publish_nulls(schema, getattr(params, "null_means_absent", frozenset()))


_LIVE_SCHEMAS: dict[int, tuple[type[Params], dict[str, Any]]] = {}


def live_params_schema(params: type[Params]) -> dict[str, Any]:
    """`published_schema` of a `live_params` class, built once (callers only read it)."""
    found = _LIVE_SCHEMAS.get(id(params))
    if found is None or found[0] is not params:
        found = _LIVE_SCHEMAS[id(params)] = (params, published_schema(params))
    return found[1]


def publish_nulls(schema: dict[str, Any], names: frozenset[str]) -> dict[str, Any]:
    """`schema` with null listed for the properties where null stands for an omitted field."""
    props = schema.get("properties", {})
    for name in sorted(names & props.keys()):
        prop = props[name]
        if "anyOf" in prop:
            if {"type": "null"} not in prop["anyOf"]:
                prop["anyOf"] = [*prop["anyOf"], {"type": "null"}]
            continue
        # Only the type moves into the union: bounds and items apply to their own kind of value
        # anyway, and an enum lists null too.
        inner = {k: prop[k] for k in ("type", "items") if k in prop}
        outer = {k: v for k, v in prop.items() if k not in inner}
        if "enum" in outer:
            outer["enum"] = [*outer["enum"], None]
        props[name] = {"anyOf": [inner, {"type": "null"}], **outer}
    return schema


def without_null(prop: dict[str, Any]) -> dict[str, Any]:
    """A property as its non-null values read (what a flag or a completion offers): null unlisted."""
    members = prop.get("anyOf")
    if not isinstance(members, list) or {"type": "null"} not in members or len(members) != 2:
        return prop
    (inner,) = [m for m in members if m != {"type": "null"}]
    out = {**{k: v for k, v in prop.items() if k != "anyOf"}, **inner}
    if "enum" in out:
        out["enum"] = [v for v in out["enum"] if v is not None]
    return out


def clean_schema(schema: dict[str, Any]) -> dict[str, Any]:
    defs = schema.pop("$defs", {})

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            if "$ref" in node:
                target = defs[node["$ref"].rsplit("/", 1)[-1]]
                merged = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
                return walk(merged)
            out = {}
            for k, v in node.items():
                if k == "title" and isinstance(v, str):
                    continue
                out[k] = walk(v) if k != "properties" else {pk: walk(pv) for pk, pv in v.items()}
            any_of = out.get("anyOf")
            if isinstance(any_of, list):
                non_null = [s for s in any_of if s != {"type": "null"}]
                if len(non_null) == 1 and len(non_null) < len(any_of):
                    out.pop("anyOf")
                    out = {**non_null[0], **out}
                    if out.get("default", 0) is None:
                        out.pop("default")
            return out
        if isinstance(node, list):
            return [walk(x) for x in node]
        return node

    return walk(schema)


def _field_name(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(input)"


def _validation_error(tool: str, e: ValidationError) -> ToolError:
    errors: list[dict[str, Any]] = []
    for err in e.errors(include_url=False):
        name = _field_name(tuple(p for p in err["loc"] if not str(p).startswith("function-")))
        got = err.get("input")
        errors.append({"field": name, "message": err["msg"], "type": err["type"]})
        if err["type"] not in ("missing", "extra_forbidden") and isinstance(got, bool | int | float):
            errors[-1]["got"] = got
    first = errors[0]
    extra = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    hint = f". Run: fermix tool {tool} --schema"
    return ToolError(
        "invalid_input", f"{first['field']}: {first['message']}{extra}{hint}", {"errors": errors}
    )


class Registry:
    """Name → ToolSpec, with family modules imported on first use; the built-in toolset's store."""

    def __init__(
        self,
        modules: Mapping[str, str] | None = None,
        aliases: Mapping[str, Mapping[str, str]] | None = None,
        toolset_modules: Sequence[str] | None = None,
    ) -> None:
        if modules is None:
            from .catalog import default_catalog

            catalog = default_catalog()
            modules = catalog.tool_modules
            aliases = catalog.toolset_aliases if aliases is None else aliases
            toolset_modules = catalog.toolset_modules if toolset_modules is None else toolset_modules
        self._modules = dict(modules)
        self._aliases = {ts: dict(table) for ts, table in (aliases or {}).items()}
        self._specs: dict[str, ToolSpec] = {}
        self._loaded: set[str] = set()
        self._toolset_modules = tuple(toolset_modules or ())
        self._sources: Toolset | None = None
        self._toolsets: dict[str | None, Toolset] = {}

    def _load_module(self, module: str) -> None:
        if module in self._loaded:
            return
        mod = importlib.import_module(module)
        self._loaded.add(module)
        for spec in getattr(mod, "TOOLS", ()):
            self._specs.setdefault(spec.name, spec)

    def toolset(self, membership: str | None = None) -> Toolset:
        """Every source of tools as one toolset: the built-ins first, then the declared toolsets (MCP ...).

        `membership` names a toolset (`coding`) whose aliases apply (coding's `shell`/`cmd` mean `bash`).
        The declared toolsets' modules are imported only when a name misses the built-ins, or on a listing.
        """
        found = self._toolsets.get(membership)
        if found is None:
            from .toolsets import CombinedToolset, DeclaredToolsets, RegistryToolset, RenamedToolset

            if self._sources is None:
                self._sources = CombinedToolset(
                    [RegistryToolset(self), DeclaredToolsets(self._toolset_modules)]
                )
            found = self._sources
            aliases = self._aliases.get(membership or "", {})
            if aliases:
                found = RenamedToolset(found, aliases)
            self._toolsets[membership] = found
        return found

    def names(self) -> list[str]:
        return sorted(set(self._modules) | set(self._specs))

    def find(self, name: str) -> ToolSpec | None:
        """The registered tool `name` (its family imported on first use), or None."""
        spec = self._specs.get(name)
        if spec is None and name in self._modules:
            self._load_module(self._modules[name])
            spec = self._specs.get(name)
        return spec

    def get(self, name: str) -> ToolSpec:
        spec = self.find(name)
        if spec is None:
            raise unknown_tool(name)
        return spec

    def all(self) -> list[ToolSpec]:
        for module in sorted(set(self._modules.values())):
            self._load_module(module)
        return [self._specs[n] for n in sorted(self._specs)]

    def register(self, spec: ToolSpec) -> None:
        """Add a tool at run time (MCP, skills, plugins). The first registration of a name stays."""
        if spec.name in self._specs or spec.name in self._modules:
            raise ToolError(
                "duplicate_name", f"a tool named {spec.name} is already registered", {"tool": spec.name}
            )
        self._specs[spec.name] = spec

    def visible(self, ctx: ToolContext, *, toolset: str | None = None) -> list[ToolSpec]:
        """The registered tools `ctx` may see (and so run), optionally within one toolset."""
        from .toolsets import RegistryToolset, member_of, policy_visible

        tools: Toolset = RegistryToolset(self)
        if toolset is not None:
            tools = member_of(tools, toolset)
        return policy_visible(tools).tools(ctx)

    def resolve(self, name: str, ctx: ToolContext) -> ToolSpec:
        """The tool `name` stands for in `ctx`, found through the context's toolsets."""
        if ctx.toolsets is None:
            # The built-ins come first in every toolset the registry combines, after the membership's
            # aliases: a built-in name needs no other toolset (and a machine call imports none).
            spec = self.find(self._aliases.get(ctx.toolset or "", {}).get(name, name))
            if spec is not None:
                return spec
        spec = (ctx.toolsets or self.toolset(ctx.toolset)).get(name, ctx)
        if spec is None:
            raise unknown_tool(name)
        return spec

    def parse(
        self, spec: ToolSpec, raw_args: str | bytes | Mapping[str, Any] | None, ctx: ToolContext | None = None
    ) -> Params:
        """Strictly parse and validate arguments for `spec` (as called in `ctx`, when it sets the limits)."""
        if raw_args is None:
            raw_args = {}
        data = parse_object(raw_args) if isinstance(raw_args, str | bytes) else dict(raw_args)
        try:
            return spec.params_for(ctx).model_validate(data)
        except ValidationError as e:
            raise _validation_error(spec.name, e) from None

    def invoke(self, name: str, raw_args: str | bytes | Mapping[str, Any] | None, ctx: ToolContext) -> Any:
        """Parse, validate, check policy, run, and (when `ctx` asks) record one tool call."""
        started = time.time()
        t0 = time.perf_counter()
        result: Any = None
        error: ToolError | None = None
        call_id: str | None = None
        try:
            # A long-lived context (a session, a server) sees `fermix grant|revoke|sandbox mode` at once.
            ctx.refresh_config()
            spec = self.resolve(name, ctx)
            policy.check(spec, ctx)
            params = self.parse(spec, raw_args, ctx)
            if ctx.record_calls and not spec.declared_read_only:
                call_id = _note_start(ctx, name, raw_args, started)
            result = to_jsonable(spec.handler(params, ctx))
            return result
        except ToolError as e:
            error = e
            raise
        except (KeyboardInterrupt, SystemExit) as e:
            # Recorded as what it was: stopped while it ran (what it did before that stands).
            why = "Ctrl-C or a stop signal" if isinstance(e, KeyboardInterrupt) else "the process exiting"
            error = ToolError("interrupted", f"{name} was stopped by {why} while it ran", {"tool": name})
            raise
        except Exception as e:
            from .errors import environment_error
            from .logs import logger

            logger("fermix.registry").exception("internal error in tool %s", name)
            error = environment_error(e) or ToolError(
                "internal_error",
                f"{name} failed unexpectedly ({type(e).__name__}); details are in the fermix log",
                {"tool": name},
                exit_class=ExitClass.INTERNAL,
            )
            raise error from e
        finally:
            if ctx.record_calls:
                _record(ctx, name, raw_args, result, error, started, time.perf_counter() - t0, call_id)

    def invoke_for_model(self, name: str, raw_args: Any, ctx: ToolContext) -> tuple[bool, str, Any]:
        """(ok, text a model sees, result or error dict); tool errors become `tag: message` text."""
        try:
            result = self.invoke(name, raw_args, ctx)
        except ToolError as e:
            return False, e.model_text(), e.to_dict()
        return True, self.resolve(name, ctx).render_for_model(result), result


def to_jsonable(result: Any) -> Any:
    pydantic = sys.modules.get("pydantic")  # a handler can only return a model if pydantic is loaded
    if pydantic is not None and isinstance(result, pydantic.BaseModel):
        return result.model_dump(mode="json")
    if isinstance(result, Params):
        return result.model_dump(mode="json")
    return result


# The ctx.extras key under which a model loop collects the record of the call it is about to make, to
# store it in the same transaction as the turn that carries the call's result (agent/loop.py).
HELD_RECORDS = "held_call_records"
# The ctx.extras key under which a model loop names the step (one model response) whose call it is
# running, while that call runs; absent outside a loop. Tools that allow one effect per step (the channel
# tools) compare it with the step of their last effect.
MODEL_STEP = "model_step"

# A tool_calls row: its eleven columns, then STARTED when the call left a start record (callstarts.py).
CallRecord = tuple[Any, ...]
RECORD_COLUMNS = 11
STARTED = "started"


def insert_call_records(db: Any, rows: Sequence[CallRecord]) -> None:
    """Insert tool_calls rows inside the caller's transaction; their calls' start records go with it."""
    db.executemany(
        "INSERT INTO tool_calls (id, session_id, tool, origin, trust, args_json, ok, error_code,"
        " result_json, started_at, duration_ms) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
        [row[:RECORD_COLUMNS] for row in rows],
    )
    started = [row[0] for row in rows if row[RECORD_COLUMNS:] == (STARTED,)]
    if started:  # a read-only call's record costs no statement more than it did
        from .callstarts import forget_starts

        forget_starts(db, started)


def _args_json(raw_args: Any) -> str:
    return raw_args if isinstance(raw_args, str) else json.dumps(raw_args, default=str)


def _call_id(ctx: ToolContext) -> str:
    import uuid

    found = ctx.extras.get("call_id")
    return found if isinstance(found, str) and found else f"call_{uuid.uuid4().hex}"


def _note_start(ctx: ToolContext, name: str, raw_args: Any, started: float) -> str:
    """Record, before it runs, that call `name` starts; its id (the id its tool_calls row will have)."""
    call_id = _call_id(ctx)
    step = ctx.extras.get(MODEL_STEP)
    run_id = step[0] if isinstance(step, tuple) and step and isinstance(step[0], str) else None
    try:
        from .callstarts import note_start

        note_start(ctx, call_id, name, _args_json(raw_args), started, run_id)
    except Exception:  # as with the call's own record: never a reason not to run it
        from .logs import logger

        logger("fermix.registry").exception("could not record the start of tool call %s", name)
    return call_id


def _record(
    ctx: ToolContext,
    name: str,
    raw_args: Any,
    result: Any,
    error: ToolError | None,
    started: float,
    seconds: float,
    call_id: str | None = None,
) -> None:
    from datetime import UTC, datetime

    try:
        args_json = _args_json(raw_args)
        row: CallRecord = (
            call_id or _call_id(ctx),
            ctx.session_id,
            name,
            ctx.origin,
            ctx.trust,
            args_json,
            int(error is None),
            error.code if error else None,
            json.dumps(result if error is None else error.to_dict(), default=str),
            datetime.fromtimestamp(started, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
            seconds * 1000,
        )
        if call_id is not None:
            row += (STARTED,)
        held = ctx.extras.get(HELD_RECORDS)
        if isinstance(held, list):  # the loop stores it with the call's result, in one transaction
            held.append(row)
            return
        with ctx.state.write() as db:
            insert_call_records(db, [row])
    except Exception:  # recording must never turn a finished call into a failure
        from .logs import logger

        logger("fermix.registry").exception("could not record tool call %s", name)


@cache
def default_registry() -> Registry:
    """fermix's own registry (the catalog's families), built once per process."""
    return Registry()


def registry_of(ctx: ToolContext) -> Registry:
    """The registry serving `ctx`: the one a model loop put in `ctx.extras`, else the default."""
    reg = ctx.extras.get("registry")
    return reg if isinstance(reg, Registry) else default_registry()


def toolset_of(ctx: ToolContext) -> Toolset:
    """The toolsets `ctx` sees, as one: those a run put in the context, else its registry's."""
    return ctx.toolsets or registry_of(ctx).toolset(ctx.toolset)


def unknown_tool(name: str) -> ToolError:
    return ToolError("unknown_tool", f"Unknown tool: {name}. Run: fermix tool list", {"tool": name})


def specs(*items: ToolSpec) -> tuple[ToolSpec, ...]:
    """Collect a family's specs, refusing duplicates within the family."""
    seen: set[str] = set()
    for s in items:
        if s.name in seen:
            raise ValueError(f"duplicate tool {s.name}")
        seen.add(s.name)
    return tuple(items)
