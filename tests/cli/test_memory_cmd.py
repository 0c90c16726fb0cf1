"""`fermix memory list|search|forget|restore`, run as the real CLI."""

from __future__ import annotations

from tests.conftest import Env


def seed(world: Env) -> None:
    for args in (
        {"key": "user_timezone", "value": "Europe/Paris", "category": "preference"},
        {"key": "deploy_target", "value": "staging first, then production", "category": "context"},
        {"key": "draft", "value": "Q3 plan\nsecond line"},
    ):
        assert world.tool("memory_store", args).code == 0


def test_list_human_and_json(world: Env) -> None:
    seed(world)
    r = world.run("memory", "list")
    assert r.code == 0
    lines = r.stdout.splitlines()
    assert lines[0].split() == ["1", "owner", "preference", "user_timezone:", "Europe/Paris"]
    assert lines[1].split()[:4] == ["2", "agent", "context", "deploy_target:"]
    assert lines[2].split() == ["3", "conversation:default", "note", "draft:", "Q3", "plan\\nsecond", "line"]
    assert lines[3] == "3 memories in scope all."
    data = world.run("memory", "list", "--json").json()
    assert [m["key"] for m in data["memories"]] == ["user_timezone", "deploy_target", "draft"]
    assert (data["total"], data["more"], data["scope_applied"]) == (3, False, "all")


def test_list_filters_and_says_what_it_leaves_out(world: Env) -> None:
    seed(world)
    r = world.run("memory", "list", "--limit", "2")
    assert r.stdout.splitlines()[-1] == "Showing 2 of 3 memories; raise --limit to see more."
    notes = world.run("memory", "list", "--category", "note", "--json").json()
    assert [m["key"] for m in notes["memories"]] == ["draft"]
    other = world.run("--session", "s2", "memory", "list", "--scope", "current", "--json").json()
    assert [m["key"] for m in other["memories"]] == ["user_timezone", "deploy_target"]
    assert world.run("memory", "list", "--archived").stdout == "No archived memories in scope all.\n"
    bad = world.run("memory", "list", "--scope", "everywhere")
    assert bad.code == 2 and "--scope" in bad.stderr
    assert world.run("memory", "list", "--category", "mood").code == 2


def test_guest_listing_is_held_to_its_conversation(world: Env) -> None:
    seed(world)
    r = world.run("--trust", "guest", "--session", "g1", "memory", "list", "--json").json()
    assert r["memories"] == [] and r["scope_applied"] == "conversation"


def test_search_human_and_json(world: Env) -> None:
    seed(world)
    r = world.run("memory", "search", "staging", "production")
    assert r.code == 0 and r.stdout.splitlines()[0].split()[:4] == ["2", "agent", "context", "deploy_target:"]
    data = world.run("memory", "search", "paris", "--json").json()
    assert [h["key"] for h in data["hits"]] == ["user_timezone"] and data["match"] == "all_terms"
    assert world.run("memory", "search", "unicorn").stdout == "No lexical matches found for: unicorn\n"
    r = world.run("memory", "search", "paris", "unicorn")
    assert "No memory holds every word" in r.stdout
    bad = world.run("memory", "search", '"*"')
    assert bad.code == 2 and bad.error()["code"] == "invalid_search"


def test_forget_and_restore_round_trip(world: Env) -> None:
    seed(world)
    r = world.run("memory", "forget", "1", "--reason", "moved")
    assert r.code == 0 and r.stdout.startswith("Archived memory id=1 (preference user_timezone)")
    assert world.run("memory", "search", "paris").stdout == "No lexical matches found for: paris\n"
    archived = world.run("memory", "list", "--archived")
    assert "[archived " in archived.stdout and ": moved]" in archived.stdout
    r = world.run("memory", "restore", "1", "--json")
    assert r.code == 0 and r.json()["action"] == "restored" and r.json()["memory"]["archived_at"] is None
    assert world.run("memory", "restore", "1").stdout == "Memory id=1 is not archived; nothing changed.\n"
    assert "user_timezone" in world.run("memory", "search", "paris").stdout


def test_restore_refuses_when_the_key_was_stored_again(world: Env) -> None:
    seed(world)
    world.run("memory", "forget", "1")
    world.tool("memory_store", {"key": "user_timezone", "value": "Asia/Tokyo", "category": "preference"})
    r = world.run("memory", "restore", "1")
    assert r.code == 1 and r.error()["code"] == "conflict" and "id=4" in r.error()["message"]


def test_forget_and_restore_refusals(world: Env) -> None:
    seed(world)
    r = world.run("memory", "forget", "42")
    assert r.code == 1 and r.error()["code"] == "not_found"
    assert world.run("memory", "restore", "42").error()["code"] == "not_found"
    r = world.run("--trust", "guest", "memory", "forget", "1")
    assert r.code == 3 and r.error()["code"] == "policy_denied"
    r = world.run("--trust", "guest", "memory", "restore", "1")
    assert r.code == 3 and r.error()["code"] == "policy_denied"
    assert world.run("memory", "forget", "abc").code == 2
    assert world.run("memory", "list", "--archived", "--json").json()["memories"] == []


def test_ids_and_limits_out_of_range_are_bad_input_not_crashes(world: Env) -> None:
    seed(world)
    huge = "99999999999999999999"  # past SQLite's INTEGER: it used to crash into the database
    for args in (
        ("restore", huge),
        ("restore", "0"),
        ("restore", "--", "-1"),
        ("restore", "abc"),
        ("forget", huge),
        ("forget", "0"),
        ("forget", "123456789012345678901234"),
    ):
        r = world.run("memory", *args)
        assert (r.code, r.error()["code"], r.stdout) == (2, "invalid_id", ""), args
        assert "positive integer" in r.error()["message"]
    r = world.run("memory", "list", "--limit", huge)
    assert r.code == 2 and "--limit" in r.stderr and "Traceback" not in r.stderr and r.stdout == ""
    assert world.run("memory", "list", "--limit", "100000", "--json").json()["total"] == 3
    assert world.run("memory", "list", "--archived", "--json").json()["memories"] == []  # nothing changed
