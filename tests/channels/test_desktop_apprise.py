"""Desktop notifications (a stand-in notify-send on PATH) and the optional Apprise extra (to a local receiver)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from fermix_cli.channels import ChannelError, channel_for
from fermix_cli.channels.desktop import DesktopChannel
from fermix_cli.core.paths import resolve_paths
from tests.channels.standins import config_with
from tests.tools.webfakes import FakeWeb, Reply


def fake_notify_send(folder: Path, exit_code: int = 0) -> Path:
    """A notify-send that records its arguments as JSON lines."""
    folder.mkdir(parents=True, exist_ok=True)
    log = folder / "calls.jsonl"
    script = folder / "notify-send"
    script.write_text(
        f"#!{sys.executable}\nimport json, sys\n"
        f"open({str(log)!r}, 'a').write(json.dumps(sys.argv[1:]) + '\\n')\n"
        f"sys.stderr.write('no daemon')\nsys.exit({exit_code})\n"
    )
    script.chmod(0o755)
    return log


def test_desktop_notification_through_notify_send(tmp_path: Path) -> None:
    log = fake_notify_send(tmp_path / "bin")
    env = {"PATH": str(tmp_path / "bin"), "DBUS_SESSION_BUS_ADDRESS": "unix:path=/run/user/1/bus"}
    sent = DesktopChannel(env).send_text("me", "backup done", {"job_name": "Backup"})
    assert sent.as_dict() == {"platform": "desktop", "address": "me", "via": "notify-send"}
    assert json.loads(log.read_text()) == ["--app-name=fermix", "--", "fermix: Backup", "backup done"]


def test_desktop_is_unavailable_without_a_session_bus(tmp_path: Path) -> None:
    fake_notify_send(tmp_path / "bin")
    with pytest.raises(ChannelError) as e:
        DesktopChannel({"PATH": str(tmp_path / "bin")}).send_text("me", "x", {})
    assert (e.value.code, e.value.permanent) == ("unavailable", True)
    assert "DBUS_SESSION_BUS_ADDRESS" in str(e.value)
    with pytest.raises(ChannelError) as e:
        DesktopChannel({"PATH": str(tmp_path / "empty"), "DBUS_SESSION_BUS_ADDRESS": "x"}).send_text(
            "me", "x", {}
        )
    assert (e.value.code, e.value.permanent) == ("unavailable", True) and "notify-send" in str(e.value)


def test_desktop_failures_and_files(tmp_path: Path) -> None:
    fake_notify_send(tmp_path / "bin", exit_code=1)
    channel = DesktopChannel({"PATH": str(tmp_path / "bin"), "DBUS_SESSION_BUS_ADDRESS": "x"})
    with pytest.raises(ChannelError) as e:
        channel.send_text("me", "x", {})
    assert (e.value.code, e.value.permanent) == ("unavailable", False) and "no daemon" in str(e.value)
    with pytest.raises(ChannelError) as e:
        channel.send_file("me", tmp_path, "x", {})
    assert (e.value.code, e.value.permanent) == ("unsupported", True)
    assert channel.capabilities == {"text"}


def test_channel_for_covers_every_platform(tmp_path: Path) -> None:
    home = tmp_path / "home"
    config = config_with(home, {})
    paths = resolve_paths(str(home))
    for platform in ("inbox", "local", "telegram", "webhook", "desktop", "apprise"):
        channel = channel_for(platform, paths, config)
        assert channel is not None and channel.platform == ("inbox" if platform == "local" else platform)
    assert channel_for("slack", paths, config) is None


def apprise_channel(tmp_path: Path, url: str, *, allow_local: bool = True):
    home = tmp_path / "home"
    config = config_with(
        home, {"fermix_core": {"channels": {"apprise": {"fam": {"url": url}}}}}, allow_local=allow_local
    )
    channel = channel_for("apprise", resolve_paths(str(home)), config)
    assert channel is not None
    return channel


def test_apprise_json_url_to_a_local_receiver(tmp_path: Path, web: FakeWeb) -> None:
    pytest.importorskip("apprise")
    web.routes["/notify"] = Reply(200, b"{}")
    sent = apprise_channel(tmp_path, f"json://127.0.0.1:{web.port}/notify").send_text(
        "fam", "dinner at 8", {"job_name": "Dinner"}
    )
    (hit,) = web.hits_on("/notify")
    body = hit.json()
    assert (body["message"], body["title"]) == ("dinner at 8", "fermix: Dinner")
    assert sent.as_dict() == {"platform": "apprise", "address": "fam", "service": "json"}


def test_apprise_failures(tmp_path: Path, web: FakeWeb) -> None:
    pytest.importorskip("apprise")
    web.routes["/notify"] = Reply(500, b"broken")
    with pytest.raises(ChannelError) as e:
        apprise_channel(tmp_path, f"json://127.0.0.1:{web.port}/notify").send_text("fam", "x", {})
    assert (e.value.code, e.value.permanent) == ("delivery_failed", False)
    # The host is judged by the network guard before Apprise connects.
    hits = len(web.hits)
    with pytest.raises(ChannelError) as e:
        apprise_channel(tmp_path, f"json://127.0.0.1:{web.port}/notify", allow_local=False).send_text(
            "fam", "x", {}
        )
    assert (e.value.code, e.value.permanent) == ("blocked_url", True) and len(web.hits) == hits
    with pytest.raises(ChannelError) as e:
        apprise_channel(tmp_path, "nosuchservice://x").send_text("fam", "x", {})
    assert (e.value.code, e.value.permanent) == ("invalid_address", True)


def test_apprise_missing_names_the_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "apprise", None)  # `import apprise` now raises ImportError
    with pytest.raises(ChannelError) as e:
        apprise_channel(tmp_path, "discord://1/abc").send_text("fam", "x", {})
    assert (e.value.code, e.value.permanent) == ("missing_extra", True)
    assert "pip install 'fermix[apprise]'" in str(e.value)


def test_apprise_url_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    config = config_with(
        home, {"fermix_core": {"channels": {"apprise": {"fam": {"url_env": "FERMIX_TEST_APPRISE"}}}}}
    )
    channel = channel_for("apprise", resolve_paths(str(home)), config)
    assert channel is not None
    monkeypatch.delenv("FERMIX_TEST_APPRISE", raising=False)
    with pytest.raises(ChannelError) as e:
        channel.send_text("fam", "x", {})
    assert (e.value.code, e.value.permanent) == ("not_configured", True)
    assert os.environ.get("FERMIX_TEST_APPRISE") is None


@pytest.mark.parametrize(
    ("scheme_url", "path"),
    [
        ("gotify://127.0.0.1:{port}/AbCdEfGhIjKlMnO", "/message"),
        ("kodi://127.0.0.1:{port}", "/jsonrpc"),
        ("json://127.0.0.1:{port}/notify", "/notify"),
    ],
)
def test_apprise_every_url_form_goes_through_the_network_guard(
    tmp_path: Path, web: FakeWeb, scheme_url: str, path: str
) -> None:
    pytest.importorskip("apprise")
    web.routes[path] = Reply(200, b'{"id": 1, "result": "OK"}', {"Content-Type": "application/json"})
    url = scheme_url.format(port=web.port)
    with pytest.raises(ChannelError) as e:
        apprise_channel(tmp_path / "blocked", url, allow_local=False).send_text("fam", "x", {})
    assert (e.value.code, e.value.permanent) == ("blocked_url", True)
    assert "allowed_private_hosts" in str(e.value) and "AbCdEf" not in str(e.value)
    assert web.hits == []
    # With the host allowed, the same URL delivers.
    sent = apprise_channel(tmp_path / "allowed", url).send_text("fam", "dinner at 8", {})
    assert sent.as_dict()["service"] == scheme_url.split(":")[0]
    assert [hit.method for hit in web.hits_on(path)] == ["POST"]


def test_apprise_redirect_to_a_private_address_is_not_followed(tmp_path: Path, web: FakeWeb) -> None:
    pytest.importorskip("apprise")
    inside = FakeWeb()
    try:
        inside.routes["/internal-admin"] = Reply(200, b"{}")
        web.routes["/redir"] = Reply(307, b"", {"Location": inside.url("/internal-admin")})

        def channel(url: str, home: Path) -> Any:
            config = config_with(
                home,
                {
                    "fermix_core": {
                        "net": {"allowed_private_hosts": ["localhost"]},
                        "channels": {"apprise": {"fam": {"url": url}}},
                    }
                },
            )
            found = channel_for("apprise", resolve_paths(str(home)), config)
            assert found is not None
            return found

        # Apprise's redirect setting is off: the 307 is a failed delivery.
        with pytest.raises(ChannelError) as e:
            channel(f"json://localhost:{web.port}/redir", tmp_path / "a").send_text("fam", "x", {})
        assert (e.value.code, e.value.permanent) == ("delivery_failed", False) and "307" in str(e.value)
        # A URL that turns redirects back on still cannot reach an address the guard refuses.
        with pytest.raises(ChannelError) as e:
            channel(f"json://localhost:{web.port}/redir?redirect=yes", tmp_path / "b").send_text(
                "fam", "x", {}
            )
        assert (e.value.code, e.value.permanent) == ("blocked_url", True)
        assert f"127.0.0.1 port {inside.port}" in str(e.value)
        assert [hit.path for hit in web.hits] == ["/redir", "/redir"] and inside.hits == []
    finally:
        inside.close()
