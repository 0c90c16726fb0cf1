"""place_search: structured place records from Brave Place Search, one request per lookup, nothing stored.

Validation (reference section 6.2) never echoes a value back: a message names the parameter and the rule.
Anchoring parameters (`location`, `latitude`, `longitude`, `radius_meters`) fail with `invalid_location`;
every other parameter with `invalid_query`.
"""

from __future__ import annotations

import math
import re
from typing import Annotated, Any

from ...core.context import ToolContext
from ...core.errors import ToolError
from ...core.params import Field
from ...core.records import Record
from ...core.registry import Example, FailureMode, Hints, Params, ToolSpec
from .providers import changed, clean_text, missing_key, object_list, request_json, resolve_key

MAX_BODY = 1_048_576
CLIENT_LIMITS: dict[str, Any] = {
    "connect_timeout": 3.0,
    "read_timeout": 15.0,
    "total_timeout": 30.0,
    "max_body": MAX_BODY,
}
SELF_ANCHORED = (
    "near me", "nearest to me", "nearby", "near here", "around me", "around here", "close to me",
    "closest to me", "close by", "in my area", "in my neighborhood", "in my neighbourhood",
    "walking distance", "walkable from here",
)  # fmt: skip
_SELF_ANCHORED = re.compile(
    r"(?<![\w])(" + "|".join(p.replace(" ", r"\s+") for p in SELF_ANCHORED) + r")(?![\w])", re.IGNORECASE
)


class PlaceSearchParams(Params):
    query: Annotated[
        str,
        Field(
            description='What to look for ("quiet coffee shop", "pharmacy open now"); max 400 characters',
            json_schema_extra={"maxLength": 400},
        ),
    ]
    location: Annotated[
        str | None,
        Field(
            description='Area to search, as you would say it ("SoHo, New York", "10115"); max 200 '
            "characters; mutually exclusive with coordinates",
            json_schema_extra={"maxLength": 200},
        ),
    ] = None
    latitude: Annotated[
        float | None,
        Field(
            description="Explicit coordinate anchor, -90 to 90; give longitude too",
            json_schema_extra={"minimum": -90, "maximum": 90},
        ),
    ] = None
    longitude: Annotated[
        float | None,
        Field(
            description="Explicit coordinate anchor, -180 to 180; give latitude too",
            json_schema_extra={"minimum": -180, "maximum": 180},
        ),
    ] = None
    radius_meters: Annotated[
        int | None,
        Field(
            description="Ranking bias around the coordinates (1-50000), not a hard filter; only with coordinates",
            json_schema_extra={"minimum": 1, "maximum": 50000},
        ),
    ] = None
    count: Annotated[
        int | None,
        Field(
            description="Results to return, 1-10 (default 5)", json_schema_extra={"minimum": 1, "maximum": 10}
        ),
    ] = None
    country: Annotated[str | None, Field(description="Two-letter country code, e.g. DE")] = None
    language: Annotated[
        str | None, Field(description="Result language code, e.g. en or pt-br (2-12 chars)")
    ] = None
    units: Annotated[
        str | None,
        Field(
            description="metric or imperial, for distances",
            json_schema_extra={"enum": ["metric", "imperial"]},
        ),
    ] = None


class Lookup(Record, frozen=True):
    """A validated lookup: what Brave is asked, and the anchor reported back."""

    query: str
    params: dict[str, Any]
    anchor: dict[str, Any]
    count: int


def _bad_query(message: str, field: str) -> ToolError:
    return ToolError("invalid_query", message, {"field": field})


def _bad_location(message: str, field: str) -> ToolError:
    return ToolError("invalid_location", message, {"field": field})


def validate(p: PlaceSearchParams) -> Lookup:
    """Apply every rule of the reference table, in order; values are never echoed."""
    query = p.query.strip()
    if not query:
        raise _bad_query("query is blank; say what kind of place to look for", "query")
    if len(query) > 400:
        raise _bad_query(f"query is {len(query)} characters; the limit is 400", "query")
    has_lat, has_lon = p.latitude is not None, p.longitude is not None
    if has_lat != has_lon:
        raise _bad_location(
            "latitude and longitude must be given together", "latitude" if has_lat else "longitude"
        )
    if p.latitude is not None and not (math.isfinite(p.latitude) and -90 <= p.latitude <= 90):
        raise _bad_location("latitude must be a number from -90 to 90", "latitude")
    if p.longitude is not None and not (math.isfinite(p.longitude) and -180 <= p.longitude <= 180):
        raise _bad_location("longitude must be a number from -180 to 180", "longitude")
    location = None
    if p.location is not None:
        location = p.location.strip()
        if not location:
            raise _bad_location("location is blank; name an area or leave it out", "location")
        if len(location) > 200:
            raise _bad_location(f"location is {len(location)} characters; the limit is 200", "location")
        if has_lat:
            raise _bad_location("give either location or latitude/longitude, not both", "location")
    if p.radius_meters is not None:
        if not 1 <= p.radius_meters <= 50_000:
            raise _bad_location("radius_meters must be from 1 to 50000", "radius_meters")
        if not has_lat:
            raise _bad_location("radius_meters needs latitude and longitude", "radius_meters")
    count = 5 if p.count is None else p.count
    if not 1 <= count <= 10:
        raise _bad_query("count must be from 1 to 10", "count")
    params: dict[str, Any] = {"q": query, "count": count}
    if p.country is not None:
        country = p.country.strip()
        if len(country) != 2:
            raise _bad_query("country must be a two-letter code such as DE or US", "country")
        params["country"] = country.upper()
    if p.language is not None:
        language = p.language.strip()
        if not 2 <= len(language) <= 12:
            raise _bad_query("language must be a code of 2 to 12 characters such as en or pt-br", "language")
        params["search_lang"] = language.lower()
    if p.units is not None:
        if p.units not in ("metric", "imperial"):
            raise _bad_query("units must be metric or imperial", "units")
        params["units"] = p.units
    anchor: dict[str, Any]
    if p.latitude is not None and p.longitude is not None:
        params.update(latitude=p.latitude, longitude=p.longitude)
        anchor = {"source": "coordinates", "latitude": p.latitude, "longitude": p.longitude}
        if p.radius_meters is not None:
            params["radius"] = p.radius_meters
            anchor["radius_meters"] = p.radius_meters
    elif location is not None:
        params["location"] = location
        anchor = {"source": "location", "location": location}
    else:
        # Every lookup needs an anchor (the seed's rule): Brave would otherwise guess one from the
        # caller's IP address, and answer for a place nobody asked about.
        why = (
            "the query asks for places near the user but gives no area"
            if self_anchored(query)
            else "a place lookup needs an area and none was given"
        )
        raise ToolError(
            "location_required",
            f"{why}; pass location (a neighborhood, city or postal code the user named) or "
            "latitude/longitude, or ask the user which area",
            {"field": "location"},
        )
    return Lookup(query, params, anchor, count)


def self_anchored(query: str) -> bool:
    """Whether a query leans on the user's own position ("near me", "walking distance", ...)."""
    return _SELF_ANCHORED.search(query) is not None


def brave_key(ctx: ToolContext) -> str | None:
    return resolve_key(ctx.config.fermix_core.tools.web_search, "brave")


def advertised(ctx: ToolContext) -> bool:
    """place_search is offered only when a Brave key resolves (an unreadable config hides it too)."""
    try:
        return brave_key(ctx) is not None
    except ToolError:
        return False


def place_search(p: PlaceSearchParams, ctx: ToolContext) -> dict[str, Any]:
    lookup = validate(p)
    key = brave_key(ctx)
    if key is None:
        raise missing_key("brave", tool="place_search")
    endpoint = ctx.config.fermix_core.tools.web_search.brave_place_url
    with ctx.http_client(**CLIENT_LIMITS) as client:
        data = request_json(
            client,
            "brave",
            "GET",
            endpoint,
            key=key,
            headers={"x-subscription-token": key},
            params=lookup.params,
            too_large_code="response_too_large",
        )
    items = object_list(data, "results", backend="brave")
    anchor = dict(lookup.anchor)
    resolved = data.get("location") if isinstance(data, dict) else None
    if isinstance(resolved, dict):
        anchor["resolved"] = {
            "name": resolved.get("name"),
            "coordinates": _coordinates(resolved.get("coordinates")),
            "country": resolved.get("country"),
        }
    places = [_place(item) for item in items[: lookup.count]]
    return {"query": lookup.query, "search_anchor": anchor, "places": places}


def _coordinates(value: Any) -> dict[str, float] | None:
    if (
        isinstance(value, list)
        and len(value) == 2
        and all(isinstance(v, int | float) and not isinstance(v, bool) for v in value)
    ):
        return {"latitude": float(value[0]), "longitude": float(value[1])}
    return None


def _obj(item: dict[str, Any], name: str) -> dict[str, Any]:
    value = item.get(name)
    return value if isinstance(value, dict) else {}


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


def _place(item: dict[str, Any]) -> dict[str, Any]:
    if not isinstance(item.get("title"), str):
        raise changed("brave", "a place has no title")
    address, rating, contact = _obj(item, "postal_address"), _obj(item, "rating"), _obj(item, "contact")
    distance, thumbnail = _obj(item, "distance"), _obj(item, "thumbnail")
    categories = item.get("categories")
    return {
        "name": clean_text(item["title"], 300),
        "address": _text(address.get("displayAddress"))
        or ", ".join(
            v
            for v in (
                address.get("streetAddress"),
                address.get("addressLocality"),
                address.get("addressRegion"),
                address.get("postalCode"),
                address.get("country"),
            )
            if isinstance(v, str) and v
        )
        or None,
        "coordinates": _coordinates(item.get("coordinates")),
        "hours": _weekly_hours(item.get("opening_hours")),
        "rating": rating.get("ratingValue"),
        "best_rating": rating.get("bestRating"),
        "review_count": rating.get("reviewCount"),
        "price_range": _text(item.get("price_range")),
        "phone": _text(contact.get("telephone")),
        "email": _text(contact.get("email")),
        "distance": {"value": distance.get("value"), "units": distance.get("units")} if distance else None,
        "categories": [c for c in categories if isinstance(c, str)] if isinstance(categories, list) else [],
        "thumbnail": _text(thumbnail.get("src")) or _text(thumbnail.get("original")),
        "url": _text(item.get("url")) or _text(item.get("provider_url")),
        "description": clean_text(item.get("description"), 500) or None,
        "timezone": _text(item.get("timezone")),
    }


def _weekly_hours(hours: Any) -> list[dict[str, str | None]] | None:
    """Opening hours as one entry per open interval: `{day, opens, closes}`; the week when Brave has it."""
    if not isinstance(hours, dict):
        return None
    days = hours.get("days")
    intervals: list[Any] = []
    if isinstance(days, list) and days:
        for day in days:
            intervals.extend(day if isinstance(day, list) else [day])
    elif isinstance(hours.get("current_day"), list):
        intervals = hours["current_day"]
    out = [
        {"day": i.get("full_name") or i.get("abbr_name"), "opens": i.get("opens"), "closes": i.get("closes")}
        for i in intervals
        if isinstance(i, dict)
    ]
    return out or None


PLACE_SEARCH = ToolSpec(
    name="place_search",
    category="web",
    policy_class="network",
    description=(
        "Look up real-world places (businesses, landmarks, addresses) and get structured records: name, "
        "address, coordinates, weekly hours, rating and review count, price range, phone, distance, "
        "categories, a thumbnail and the place's page link. Backed by Brave Place Search, one request per "
        "lookup; offered only when a Brave Search API key is configured. Every lookup needs an anchor, "
        "location or latitude/longitude; without one it is refused with location_required. "
        "Nothing is stored and returned links are never fetched; there is no fallback to another provider."
    ),
    params=PlaceSearchParams,
    handler=place_search,
    available=advertised,
    hints=Hints(read_only=True, open_world=True),
    when_to_use=(
        "Businesses, opening hours, addresses. Always fill location from an area the user named "
        "(neighborhood, city or postal code, never a street address) or ask which area to search."
    ),
    examples=(
        Example({"query": "quiet coffee shop", "location": "SoHo, New York"}, "places in a named area"),
        Example(
            {"query": "pharmacy", "latitude": 52.52, "longitude": 13.405, "radius_meters": 1500, "count": 3},
            "three places ranked around a coordinate",
        ),
    ),
    failure_modes=(
        FailureMode("invalid_query", "query blank or over 400 characters, count, country, language or units"),
        FailureMode(
            "invalid_location",
            "location blank/too long/with coordinates, half or out-of-range coordinates, radius",
        ),
        FailureMode(
            "location_required", "neither location nor coordinates were given (every lookup needs an area)"
        ),
        FailureMode("auth_failed", "no Brave key is configured, or Brave rejected it"),
        FailureMode("rate_limited", "Brave is throttling requests (HTTP 429)"),
        FailureMode("provider_error", "Brave failed (HTTP 402, 5xx, ...)"),
        FailureMode("parser_changed", "Brave's response format changed"),
        FailureMode("response_too_large", "Brave's response exceeded 1048576 bytes"),
        FailureMode("network", "Brave answered HTTP N or dropped the exchange"),
        FailureMode(
            "dns_failure", "the host name did not resolve (offline, or no such name); exit 1, retry later"
        ),
        FailureMode("connect_failed", "nothing accepted the connection; exit 1, retry later"),
        FailureMode("timeout", "no connection, or no reply, within the time limit"),
    ),
)
