"""The events tools: event_store, event_list, event_update, event_remove, reminder_snooze (seed "Events and
reminders"). Each works only on an attended, top-level owner turn; event_list also in the owner's jobs."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from ..core.context import ToolContext
from ..core.params import Field
from ..core.registry import Example, FailureMode, Hints, Params, ToolSpec, specs
from .gate import attended_gate, attended_turn, list_available, list_gate

Kind = Literal[
    "birthday", "anniversary", "appointment", "deadline", "event", "follow_up", "explicit_reminder"
]
LeapPolicy = Literal["feb_28", "mar_1"]
Obj = dict[Annotated[str, Field(max_length=32)], Any]

WHEN_DOC = (
    'One tagged time form: {"type":"date","date":"YYYY-MM-DD"}, {"type":"datetime","date":"YYYY-MM-DD",'
    '"time":"HH:MM:SS"} with an optional "utc_offset" when the local time is ambiguous, {"type":"relative",'
    '"amount":2,"unit":"days"} (also "weeks") with an optional "time" (and "utc_offset"), or {"type":"annual","month":9,"day":14}'
)
RULES_DOC = (
    'Explicit plan replacing the defaults, at most 10 rules: {"type":"days_before","days":7,"at":"09:00:00"}, '
    '{"type":"duration_before","minutes":60} or {"type":"at_time"}'
)
Rules = Annotated[list[Obj] | None, Field(description=RULES_DOC)]


class EventStoreParams(Params):
    title: Annotated[
        str, Field(max_length=4000, description="Short event title, for example `Sarah's birthday`")
    ]
    kind: Annotated[Kind, Field(description="The kind of date; it picks the default reminder plan")]
    when: Annotated[Obj, Field(description=WHEN_DOC)]
    description: Annotated[
        str | None, Field(max_length=20_000, description="Extra detail stored with the event")
    ] = None
    timezone: Annotated[
        str | None,
        Field(
            max_length=64,
            description="IANA zone, only when the owner named one; otherwise the configured "
            "[fermix_core.personalization] timezone is used",
        ),
    ] = None
    leap_day_policy: Annotated[
        LeapPolicy | None, Field(description="feb_28 or mar_1; required for a yearly February 29 date")
    ] = None
    reminders: Rules = None
    no_reminders: Annotated[bool | None, Field(description="Store the date with no notifications at all")] = (
        None
    )
    followup: Annotated[
        bool | None,
        Field(description="After each reminder is delivered, a short follow-up check-in may offer help"),
    ] = None


def event_store(p: EventStoreParams, ctx: ToolContext) -> dict[str, Any]:
    from .actions import store_event

    return store_event(ctx, p)


# `from` is a Python keyword, so event_list's parameters are declared as a class built from a namespace.
EventListParams: type[Params] = type(
    "EventListParams",
    (Params,),
    {
        "__module__": __name__,
        "__annotations__": {
            "text": Annotated[
                str | None, Field(max_length=500, description="Match against title and description")
            ],
            "kind": Annotated[Kind | None, Field(description="Restrict to one event kind")],
            "status": Annotated[
                Literal["active", "completed", "cancelled", "any"] | None,
                Field(
                    description="active (default), completed, cancelled or any; naming one drops the from-today floor"
                ),
            ],
            "from": Annotated[
                str | None,
                Field(max_length=10, description="Earliest occurrence date, YYYY-MM-DD (default today)"),
            ],
            "to": Annotated[
                str | None,
                Field(
                    max_length=10,
                    description="Latest occurrence date, YYYY-MM-DD; at most two years after from",
                ),
            ],
            "limit": Annotated[
                int | None, Field(ge=1, le=100, description="Rows per page (default 25, max 100)")
            ],
            "cursor": Annotated[
                str | None, Field(max_length=500, description="Opaque next-page cursor from a prior call")
            ],
        },
        **dict.fromkeys(("text", "kind", "status", "from", "to", "limit", "cursor")),
    },
)


def event_list(p: Any, ctx: ToolContext) -> dict[str, Any]:
    from .listing import list_events

    return list_events(ctx, p)


class EventUpdateParams(Params):
    event_id: Annotated[str, Field(max_length=64, description="The stored event's id, from event_list")]
    title: Annotated[str | None, Field(max_length=4000, description="New title")] = None
    description: Annotated[str | None, Field(max_length=20_000, description="New description")] = None
    kind: Annotated[Kind | None, Field(description="New event kind")] = None
    when: Annotated[
        Obj | None, Field(description="New time, in the same tagged forms event_store accepts")
    ] = None
    owner_direction: Annotated[
        str | None,
        Field(
            max_length=4000,
            description="Required with `when`: the owner's words that directed this date "
            "change, quoted near-verbatim (at most 240 bytes; refused, never trimmed)",
        ),
    ] = None
    timezone: Annotated[str | None, Field(max_length=64, description="New IANA zone for the event")] = None
    leap_day_policy: Annotated[LeapPolicy | None, Field(description="feb_28 or mar_1")] = None
    reminders: Rules = None
    no_reminders: Annotated[bool | None, Field(description="Drop every reminder for this date")] = None
    rebind_delivery_to_default: Annotated[
        bool | None,
        Field(
            description="Re-snapshot the configured default delivery target; only on the owner's explicit request"
        ),
    ] = None
    followup: Annotated[bool | None, Field(description="Set or clear the follow-up check-in")] = None


def event_update(p: EventUpdateParams, ctx: ToolContext) -> dict[str, Any]:
    from .actions import update_event

    return update_event(ctx, p)


class EventRemoveParams(Params):
    event_id: Annotated[
        str | None,
        Field(
            max_length=64,
            description='The event id; leave it out for "cancel that" (the event of the reminder '
            "most recently delivered into this conversation within 24 hours)",
        ),
    ] = None


def event_remove(p: EventRemoveParams, ctx: ToolContext) -> dict[str, Any]:
    from .actions import remove_event

    return remove_event(ctx, p.event_id)


class ReminderSnoozeParams(Params):
    snooze: Annotated[
        Obj,
        Field(
            description='{"type":"duration","amount":2,"unit":"hours"} (minutes, hours or days) or '
            '{"type":"datetime","date":"YYYY-MM-DD","time":"HH:MM:SS"} with an optional utc_offset'
        ),
    ]
    reminder_id: Annotated[
        str | None, Field(max_length=64, description='The reminder to defer; leave it out for "snooze that"')
    ] = None
    confirm_past_boundary: Annotated[
        bool | None,
        Field(description="Only after the owner confirms a reminder at or after the event itself"),
    ] = None


def reminder_snooze(p: ReminderSnoozeParams, ctx: ToolContext) -> dict[str, Any]:
    from .snooze import snooze_reminder

    return snooze_reminder(ctx, p)


def _render(result: dict[str, Any]) -> str:
    if "message" in result:
        return str(result["message"])
    import json

    return json.dumps(result, ensure_ascii=False, separators=(",", ":"))


_ATTENDED = FailureMode(
    "not_attended", "not an attended, top-level owner turn (job, subagent, skill, MCP, guest)"
)
_SENDING = FailureMode("delivery_in_progress", "a reminder of this event is being sent right now")
_TIME = (
    FailureMode("invalid_when", "when is not one of the four tagged forms"),
    FailureMode(
        "timezone_not_configured", "no timezone argument and none configured; fermix never assumes UTC"
    ),
    FailureMode("invalid_timezone", "not an IANA zone"),
    FailureMode("dst_gap", "the local time does not exist (the clocks skip it): ask the owner"),
    FailureMode("ambiguous_local_time", "the local time happens twice: ask which and pass utc_offset"),
    FailureMode("leap_day_policy_required", "a yearly 29 February needs feb_28 or mar_1"),
    FailureMode("too_many_rules", "more than 10 reminder rules"),
    FailureMode("duplicate_rule_id", "two rules with the same id"),
    FailureMode("invalid_rule_time", "a rule at or after the event, or a timed rule on a date"),
    FailureMode("empty_plan", "an empty plan without no_reminders, or a kind with no default for this form"),
)


def _spec(
    name: str,
    policy: Literal["read_only", "read_write"],
    description: str,
    params: type[Params],
    handler: Any,
    examples: tuple[Example, ...],
    failures: tuple[FailureMode, ...],
    hints: Hints,
    when: str,
) -> ToolSpec:
    listing = name == "event_list"
    return ToolSpec(
        name=name,
        category="events",
        policy_class=policy,
        owner_only=True,
        description=description,
        params=params,
        handler=handler,
        hints=hints,
        when_to_use=when,
        examples=examples,
        failure_modes=(_ATTENDED, *failures),
        render=_render,
        available=list_available if listing else attended_turn,
        gate=list_gate if listing else attended_gate(name),
        # Refused at dispatch with `not_attended` wherever refused, even where hidden (reference 9.1).
        gate_first=True,
    )


TOOLS = specs(
    _spec(
        "event_store",
        "read_write",
        "Store a personal date (birthday, appointment, deadline, ...) and the finite reminder plan fermix delivers "
        "for it. fermix owns the clock, the timezone and the delivery target; give a title, a kind and one time "
        "form. An ambiguous or non-existent local time is refused so you can ask the owner. Storing the same date "
        "twice returns the existing event.",
        EventStoreParams,
        event_store,
        (
            Example(
                {
                    "title": "Sarah's birthday",
                    "kind": "birthday",
                    "when": {"type": "annual", "month": 9, "day": 14},
                },
                "a yearly date with the default plan (a week before and on the day, 09:00)",
            ),
            Example(
                {
                    "title": "Dentist",
                    "kind": "appointment",
                    "when": {"type": "datetime", "date": "2027-03-14", "time": "09:30:00"},
                },
                "a timed appointment",
            ),
        ),
        (
            *_TIME,
            FailureMode("no_default_target", "no configured delivery target and none derivable"),
            FailureMode("identity_conflict", "the same kind and title is stored for another date"),
        ),
        Hints(),
        "The owner asks to remember a date or to be reminded of something at a time.",
    ),
    _spec(
        "event_list",
        "read_only",
        "List or search stored dates: what is coming up, when a birthday falls, which reminders are planned and "
        "whether one failed to deliver. With no window and no status it starts at today. Results page with an "
        "opaque cursor passed back verbatim.",
        EventListParams,
        event_list,
        (
            Example({}, "what is coming up"),
            Example({"text": "Sarah", "status": "any"}, "find a date by name"),
        ),
        (
            FailureMode("date_window_too_wide", "from/to span more than two years"),
            FailureMode("invalid_date_window", "to before from, or not YYYY-MM-DD"),
        ),
        Hints(read_only=True, idempotent=True),
        "Before storing or changing a date, or to answer what is coming up.",
    ),
    _spec(
        "event_update",
        "read_write",
        "Change a stored date: title, time, timezone or reminder plan. Omitted fields keep their values; a new plan "
        "replaces the stored one. Changing the date needs owner_direction (the owner's own words). Delivered "
        "reminders are kept; only unsent ones are regenerated.",
        EventUpdateParams,
        event_update,
        (
            Example(
                {
                    "event_id": "ev_0123456789ab",
                    "when": {"type": "date", "date": "2027-03-15"},
                    "owner_direction": "move the dentist to the 15th",
                },
                "move a date at the owner's word",
            ),
        ),
        (
            *_TIME,
            _SENDING,
            FailureMode("not_active", "the event is cancelled or completed"),
            FailureMode("overwrite_unconfirmed", "when without owner_direction"),
            FailureMode("owner_direction_too_long", "owner_direction over 240 bytes (refused, not trimmed)"),
        ),
        Hints(idempotent=True),
        "The owner explicitly asks to change a stored date or its reminders.",
    ),
    _spec(
        "event_remove",
        "read_write",
        "Cancel a stored date and its unsent reminders; delivered history stays. Without event_id it cancels the "
        'event behind the reminder most recently delivered into this conversation within 24 hours ("cancel that").',
        EventRemoveParams,
        event_remove,
        (
            Example({}, '"cancel that" after a reminder arrived'),
            Example({"event_id": "ev_0123456789ab"}, "by id"),
        ),
        (
            _SENDING,
            FailureMode("no_recent_reminder", "nothing was delivered into this conversation in 24 hours"),
            FailureMode("not_active", "already cancelled or completed"),
        ),
        Hints(destructive=True),
        "The owner asks to cancel a date or to stop reminders about it.",
    ),
    _spec(
        "reminder_snooze",
        "read_write",
        "Defer one reminder to a later time (at most 90 days ahead). Without reminder_id it takes the reminder most "
        'recently delivered into this conversation within 24 hours ("snooze that"). It never moves the event.',
        ReminderSnoozeParams,
        reminder_snooze,
        (
            Example(
                {"snooze": {"type": "duration", "amount": 2, "unit": "hours"}}, '"snooze that for two hours"'
            ),
        ),
        (
            FailureMode("snooze_in_past", "the time has passed"),
            FailureMode("snooze_too_far", "more than 90 days ahead"),
            FailureMode(
                "snooze_past_boundary_unconfirmed", "at or after the event without confirm_past_boundary"
            ),
            FailureMode("already_snoozed", "the same snooze again; nothing changed"),
            FailureMode("source_terminal", "the reminder failed, expired or was cancelled"),
            FailureMode("no_recent_reminder", "nothing was delivered into this conversation in 24 hours"),
        ),
        Hints(),
        "The owner asks to be reminded again later.",
    ),
)
