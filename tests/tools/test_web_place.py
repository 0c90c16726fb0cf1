"""place_search: every validation rule (values never echoed), location_required, Brave's format, no fallback."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from fermix_cli.core.errors import ToolError
from fermix_cli.core.registry import default_registry
from fermix_cli.tools.web.place import SELF_ANCHORED, self_anchored
from tests.conftest import Env
from tests.tools.webfakes import ENDPOINTS, FakeWeb, Reply, brave_error, configure, json_reply, running


@pytest.fixture
def fake_web(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeWeb]:
    with running(monkeypatch) as server:
        yield server


PLACE = ENDPOINTS["brave_place_url"]
KEY = "brave-key-abc"


def brave_places(n: int = 2) -> dict[str, Any]:
    """A Brave Place Search answer in its documented shape."""
    results = []
    for i in range(n):
        results.append(
            {
                "type": "location_result",
                "title": f"Blue Bottle {i}",
                "url": f"https://places.example.com/blue-bottle-{i}",
                "provider_url": f"https://provider.example.com/{i}",
                "id": f"loc4CQWMJWLD4VBEBZ62XQLJTGK6YCJEEJDNAAAAA{i}=",
                "description": "Specialty <strong>coffee</strong> roaster",
                "postal_address": {
                    "type": "PostalAddress",
                    "displayAddress": f"{66 + i} Mint St, San Francisco, CA 94103",
                    "streetAddress": f"{66 + i} Mint St",
                    "addressLocality": "San Francisco",
                    "addressRegion": "CA",
                    "postalCode": "94103",
                    "country": "US",
                },
                "contact": {"telephone": "+1 510-653-3394"},
                "thumbnail": {
                    "src": f"https://img.example.com/{i}.jpg",
                    "original": "https://img.example.com/o.jpg",
                },
                "rating": {
                    "ratingValue": 4.3,
                    "bestRating": 5.0,
                    "reviewCount": 587,
                    "is_tripadvisor": False,
                },
                "opening_hours": {
                    "current_day": [
                        {"abbr_name": "Wed", "full_name": "Wednesday", "opens": "07:00", "closes": "18:00"}
                    ],
                    "days": [
                        [{"abbr_name": "Mon", "full_name": "Monday", "opens": "07:00", "closes": "18:00"}],
                        [
                            {"abbr_name": "Tue", "full_name": "Tuesday", "opens": "07:00", "closes": "12:00"},
                            {"abbr_name": "Tue", "full_name": "Tuesday", "opens": "13:00", "closes": "18:00"},
                        ],
                    ],
                },
                "coordinates": [37.7821, -122.4065],
                "distance": {"value": 0.8, "units": "km"},
                "categories": ["Coffee & Tea", "Cafes"],
                "price_range": "$$",
                "timezone": "America/Los_Angeles",
            }
        )
    return {
        "type": "locations",
        "query": {"original": "coffee", "altered": None, "spellcheck_off": False},
        "results": results,
        "location": {"coordinates": [37.7749, -122.4194], "name": "San Francisco", "country": "US"},
    }


@pytest.fixture
def brave(world: Env, fake_web: FakeWeb) -> FakeWeb:
    configure(world, fake_web, web_search={"brave_api_key": KEY})
    fake_web.routes[PLACE] = json_reply(brave_places())
    return fake_web


# ----- validation -------------------------------------------------------------------------------

# (arguments, tag, field); every secret-looking value below must not appear in the error.
INVALID = [
    ({"query": "   "}, "invalid_query", "query"),
    ({"query": "Q" * 401}, "invalid_query", "query"),
    ({"query": "cafe", "latitude": 48.137154}, "invalid_location", "latitude"),
    ({"query": "cafe", "longitude": 11.576124}, "invalid_location", "longitude"),
    ({"query": "cafe", "latitude": 90.000001, "longitude": 11.576124}, "invalid_location", "latitude"),
    ({"query": "cafe", "latitude": -90.5, "longitude": 11.576124}, "invalid_location", "latitude"),
    ({"query": "cafe", "latitude": 48.137154, "longitude": 180.000001}, "invalid_location", "longitude"),
    ({"query": "cafe", "latitude": 48.137154, "longitude": -181.25}, "invalid_location", "longitude"),
    ({"query": "cafe", "location": "  "}, "invalid_location", "location"),
    ({"query": "cafe", "location": "Zyx" * 67}, "invalid_location", "location"),
    (
        {"query": "cafe", "location": "Zyxwvut Street 7", "latitude": 48.137154, "longitude": 11.576124},
        "invalid_location",
        "location",
    ),
    (
        {"query": "cafe", "latitude": 48.137154, "longitude": 11.576124, "radius_meters": 0},
        "invalid_location",
        "radius_meters",
    ),
    (
        {"query": "cafe", "latitude": 48.137154, "longitude": 11.576124, "radius_meters": 50001},
        "invalid_location",
        "radius_meters",
    ),
    ({"query": "cafe", "location": "Berlin", "radius_meters": 1234}, "invalid_location", "radius_meters"),
    ({"query": "cafe", "radius_meters": 1234}, "invalid_location", "radius_meters"),
    ({"query": "cafe", "count": 0}, "invalid_query", "count"),
    ({"query": "cafe", "count": 11}, "invalid_query", "count"),
    ({"query": "cafe", "country": "QZX"}, "invalid_query", "country"),
    ({"query": "cafe", "country": "Q"}, "invalid_query", "country"),
    ({"query": "cafe", "language": "X"}, "invalid_query", "language"),
    ({"query": "cafe", "language": "XYZWVUTSRQPON"}, "invalid_query", "language"),
    ({"query": "cafe", "units": "furlongs"}, "invalid_query", "units"),
    ({"query": "cafe", "units": "Metric"}, "invalid_query", "units"),
]


@pytest.mark.parametrize(("args", "code", "field"), INVALID)
def test_every_rule_is_enforced_without_echoing_values(
    invoke: Any, brave: FakeWeb, args: dict[str, Any], code: str, field: str
) -> None:
    with pytest.raises(ToolError) as e:
        invoke("place_search", args)
    assert e.value.code == code
    assert e.value.details == {"field": field}
    shown = json.dumps(e.value.to_dict())
    for name, value in args.items():
        if name == "query" and value == "cafe":
            continue
        if isinstance(value, str) and value.strip():
            assert value.strip() not in shown and value.strip()[:6] not in shown
        elif isinstance(value, float):
            assert str(value) not in shown
    assert brave.hits == []


@pytest.mark.parametrize(
    ("args", "sent"),
    [
        ({"query": "  cafe  ", "location": "Berlin"}, {"q": "cafe", "count": "5"}),
        ({"query": "cafe", "count": 1, "location": "Berlin"}, {"q": "cafe", "count": "1"}),
        (
            {"query": "cafe", "count": 10, "country": " de ", "language": "PT-BR", "location": "Berlin"},
            {"country": "DE", "search_lang": "pt-br"},
        ),
        (
            {"query": "cafe", "location": " SoHo, New York ", "units": "imperial"},
            {"location": "SoHo, New York", "units": "imperial"},
        ),
        (
            {"query": "cafe", "latitude": 90, "longitude": -180, "radius_meters": 50000},
            {"latitude": "90.0", "longitude": "-180.0", "radius": "50000"},
        ),
        ({"query": "cafe", "latitude": -89.5, "longitude": 179.25, "radius_meters": 1}, {"radius": "1"}),
        ({"query": "Q" * 400, "location": "Berlin"}, {"q": "Q" * 400}),
        ({"query": "cafe", "location": "L" * 200}, {"location": "L" * 200}),
    ],
)
def test_valid_lookups_reach_brave_as_one_request(
    invoke: Any, brave: FakeWeb, args: dict[str, Any], sent: dict[str, str]
) -> None:
    invoke("place_search", args)
    (hit,) = brave.hits
    assert hit.method == "GET" and hit.path == PLACE
    assert hit.headers["x-subscription-token"] == KEY
    assert {k: v[0] for k, v in hit.query.items() if k in sent} == sent


def test_the_record_carries_every_documented_field(invoke: Any, brave: FakeWeb) -> None:
    result = invoke("place_search", {"query": "coffee", "location": "San Francisco", "count": 1})
    assert result["query"] == "coffee"
    assert result["search_anchor"] == {
        "source": "location",
        "location": "San Francisco",
        "resolved": {
            "name": "San Francisco",
            "coordinates": {"latitude": 37.7749, "longitude": -122.4194},
            "country": "US",
        },
    }
    (place,) = result["places"]
    assert place == {
        "name": "Blue Bottle 0",
        "address": "66 Mint St, San Francisco, CA 94103",
        "coordinates": {"latitude": 37.7821, "longitude": -122.4065},
        "hours": [
            {"day": "Monday", "opens": "07:00", "closes": "18:00"},
            {"day": "Tuesday", "opens": "07:00", "closes": "12:00"},
            {"day": "Tuesday", "opens": "13:00", "closes": "18:00"},
        ],
        "rating": 4.3,
        "best_rating": 5.0,
        "review_count": 587,
        "price_range": "$$",
        "phone": "+1 510-653-3394",
        "email": None,
        "distance": {"value": 0.8, "units": "km"},
        "categories": ["Coffee & Tea", "Cafes"],
        "thumbnail": "https://img.example.com/0.jpg",
        "url": "https://places.example.com/blue-bottle-0",
        "description": "Specialty coffee roaster",
        "timezone": "America/Los_Angeles",
    }
    assert len(brave.hits) == 1  # returned links are never fetched


def test_count_caps_the_places(invoke: Any, brave: FakeWeb) -> None:
    brave.routes[PLACE] = json_reply(brave_places(7))
    result = invoke("place_search", {"query": "coffee", "latitude": 1.5, "longitude": 2.5, "count": 3})
    assert [p["name"] for p in result["places"]] == ["Blue Bottle 0", "Blue Bottle 1", "Blue Bottle 2"]
    assert result["search_anchor"]["source"] == "coordinates"
    assert (result["search_anchor"]["latitude"], result["search_anchor"]["longitude"]) == (1.5, 2.5)


# ----- anchoring --------------------------------------------------------------------------------


# The reference's list, written out so that dropping a phrase from the code fails a test.
PHRASES = [
    "near me", "nearest to me", "nearby", "near here", "around me", "around here", "close to me",
    "closest to me", "close by", "in my area", "in my neighborhood", "in my neighbourhood",
    "walking distance", "walkable from here",
]  # fmt: skip


def test_the_phrase_list_is_the_references() -> None:
    assert sorted(SELF_ANCHORED) == sorted(PHRASES)


@pytest.mark.parametrize("phrase", PHRASES)
def test_self_anchored_phrases_need_a_location(invoke: Any, brave: FakeWeb, phrase: str) -> None:
    with pytest.raises(ToolError) as e:
        invoke("place_search", {"query": f"Pharmacy {phrase.upper()} open now"})
    assert e.value.code == "location_required"
    assert brave.hits == []
    invoke("place_search", {"query": f"pharmacy {phrase}", "location": "Kreuzberg, Berlin"})
    invoke("place_search", {"query": f"pharmacy {phrase}", "latitude": 52.5, "longitude": 13.4})
    assert len(brave.hits) == 2


@pytest.mark.parametrize(
    ("query", "anchored"),
    [
        ("coffee near me", True),
        ("coffee   near\tme", True),
        ("nearby sushi", True),
        ("sushi within walking distance", True),
        ("coffee near Mercer Street", False),
        ("the nearbyness index", False),
        ("museums in Berlin", False),
        ("bakery close to the station", False),
    ],
)
def test_self_anchored_phrase_matching(query: str, anchored: bool) -> None:
    assert self_anchored(query) is anchored


@pytest.mark.parametrize("query", ["Eiffel Tower", "pharmacy open now", "coffee", "museums in Berlin"])
def test_every_unanchored_lookup_is_refused(invoke: Any, brave: FakeWeb, query: str) -> None:
    # The seed refuses any lookup with no anchor, not only "near me": Brave would guess one.
    with pytest.raises(ToolError) as e:
        invoke("place_search", {"query": query})
    assert e.value.code == "location_required" and e.value.details == {"field": "location"}
    assert brave.hits == []


# ----- key, advertising, provider failures ------------------------------------------------------


def test_advertised_only_when_a_brave_key_resolves(
    world: Env,
    fake_web: FakeWeb,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def visible() -> bool:
        ctx = world.context()
        try:
            return "place_search" in {s.name for s in default_registry().visible(ctx)}
        finally:
            ctx.close()

    configure(world, fake_web)
    assert not visible()
    monkeypatch.setenv("BRAVE_API_KEY", "k")
    assert visible()
    monkeypatch.delenv("BRAVE_API_KEY")
    configure(world, fake_web, web_search={"brave_api_key": "k", "backend": "tavily"})
    assert visible()  # Brave need not be the selected web_search backend


def test_execution_rechecks_the_key(world: Env, invoke: Any, fake_web: FakeWeb) -> None:
    configure(world, fake_web)
    with pytest.raises(ToolError) as e:
        invoke("place_search", {"query": "coffee", "location": "Berlin"})
    assert e.value.code == "auth_failed"
    assert "brave_api_key" in e.value.message and "BRAVE_API_KEY" in e.value.message
    assert fake_web.hits == []


@pytest.mark.parametrize(
    ("reply", "code"),
    [
        (brave_error(401, "UNAUTHORIZED", "no"), "auth_failed"),
        (
            brave_error(422, "SUBSCRIPTION_TOKEN_INVALID", "The provided subscription token is invalid"),
            "auth_failed",
        ),
        (brave_error(429, "RATE_LIMITED", "Request rate limit exceeded for plan"), "rate_limited"),
        (brave_error(402, "QUOTA_LIMITED", "quota"), "provider_error"),
        (brave_error(500, "INTERNAL", "boom"), "provider_error"),
        (json_reply({"type": "locations"}), "parser_changed"),
        (json_reply({"type": "locations", "results": [{"no_title": 1}]}), "parser_changed"),
        (Reply(200, b"not json", {"Content-Type": "text/plain"}), "parser_changed"),
        # Nested past what the parser can follow (and well under the size cap): not an internal error.
        (Reply(200, b"[" * 200_000, {"Content-Type": "application/json"}), "parser_changed"),
        (Reply(500, b"[" * 200_000, {"Content-Type": "application/json"}), "provider_error"),
        (
            Reply(500, b'{"error":' * 990 + b'"deep"' + b"}" * 990, {"Content-Type": "application/json"}),
            "provider_error",
        ),
        (
            Reply(200, b"[" + b"1," * 600_000 + b"1]", {"Content-Type": "application/json"}),
            "response_too_large",
        ),
    ],
)
def test_provider_failures_are_named_and_never_fall_back(
    invoke: Any, brave: FakeWeb, reply: Reply, code: str
) -> None:
    brave.routes[PLACE] = reply
    with pytest.raises(ToolError) as e:
        invoke("place_search", {"query": "coffee", "location": "Berlin"})
    assert e.value.code == code
    assert [h.path for h in brave.hits] == [PLACE]  # one request, no web_search, no other provider


def test_unreachable_brave_is_network(world: Env, invoke: Any, fake_web: FakeWeb) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = s.getsockname()[1]
    configure(
        world, fake_web, web_search={"brave_api_key": KEY, "brave_place_url": f"http://127.0.0.1:{dead}/p"}
    )
    with pytest.raises(ToolError) as e:
        invoke("place_search", {"query": "coffee", "location": "Berlin"})
    assert e.value.code == "connect_failed"


# ----- the real CLI ------------------------------------------------------------------------------


def test_cli_place_search_and_listing(world: Env, fake_web: FakeWeb) -> None:
    configure(world, fake_web)
    r = world.run("tool", "list", "--json")
    assert "place_search" not in {t["name"] for t in r.json()}
    configure(world, fake_web, web_search={"brave_api_key": KEY})
    fake_web.routes[PLACE] = json_reply(brave_places(3))
    r = world.run("tool", "list", "--json")
    assert "place_search" in {t["name"] for t in r.json()}
    r = world.run("tool", "place_search", "--query", "coffee", "--location", "San Francisco", "--count", "2")
    assert r.code == 0, r.stderr
    assert [p["name"] for p in r.json()["places"]] == ["Blue Bottle 0", "Blue Bottle 1"]
    for query in ("coffee near me", "pharmacy open now"):
        r = world.tool("place_search", {"query": query})
        assert r.code == 2 and r.error()["code"] == "location_required"
    r = world.tool("place_search", {"query": "coffee", "latitude": 123.456789, "longitude": 1})
    assert r.code == 2 and r.error()["code"] == "invalid_location"
    assert "123.456789" not in r.stderr
