"""No page writes a file outside the workspace: downloads are denied except during action=download.

The browser is started as its own process with HOME pointing at the test's home, so a download that
escaped to Chromium's default folder (~/Downloads) would land where the test looks.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser.browser_world import BrowserWorld, Site, html, make_world, needs_chromium, ref_of

pytestmark = needs_chromium

AUTO = html(
    """<a id="a" href="data:application/octet-stream,PWNED" download=".bashrc_payload">payload</a>
<script>document.getElementById('a').click(); setTimeout(() => document.getElementById('a').click(), 200);
</script><p id="done">clicked</p>""",
    "Auto",
)
ATTACHMENT = (
    200,
    {"Content-Type": "text/plain", "Content-Disposition": 'attachment; filename="report.txt"'},
    b"the report body\n",
)


@pytest.fixture(scope="module")
def site(page_server: Any) -> Site:
    made: Site = page_server(
        {
            "/auto": AUTO,
            "/file.txt": ATTACHMENT,
            "/links": html('<a href="/file.txt">Get report</a>', "Links"),
        }
    )
    return made


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrowserWorld]:
    made = make_world(
        tmp_path_factory.mktemp("downloads"), '[fermix_core.net]\nallowed_private_hosts = ["127.0.0.1"]\n'
    )
    started = made.cli({"action": "start"})  # its own process: Chromium gets the test's HOME
    assert started.returncode == 0, started.stderr
    yield made
    made.cli({"action": "stop"})


def files_under(root: Path) -> set[str]:
    found = set()
    for folder, _, names in os.walk(root):
        for name in names:
            if "report" in name or "payload" in name or "crdownload" in name:
                found.add(str(Path(folder, name).relative_to(root)))
    return found


def cli(world: BrowserWorld, args: dict[str, Any]) -> dict[str, Any]:
    done = world.cli(args)
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


def test_pages_cannot_download_outside_the_workspace(world: BrowserWorld, site: Site) -> None:
    def escapes() -> None:
        # A page that downloads on load, and an ordinary click on an attachment link: nothing is written.
        cli(world, {"action": "navigate", "url": site.url("/auto")})
        link_page = cli(world, {"action": "navigate", "url": site.url("/links")})
        assert link_page["ready_state"] == "complete"
        snap = cli(world, {"action": "snapshot"})["snapshot"]
        cli(world, {"action": "act", "kind": "click", "ref": ref_of(snap, "link", "Get report")})
        time.sleep(1.0)  # a download, had it been allowed, finishes well within this

    escapes()
    assert files_under(world.home) == set()
    # action=download saves into the workspace, and afterwards downloads are denied again.
    got = cli(world, {"action": "download", "url": site.url("/file.txt")})
    assert Path(got["path"]) == world.fermix_home / "workspace" / "downloads" / "report.txt"
    escapes()
    assert files_under(world.home) == {".fermix/workspace/downloads/report.txt"}
    # Under the DevTools policy, the profile's own default folder is a quarantine inside the profile.
    prefs = json.loads((world.fermix_home / "browser/profiles/fermix/Default/Preferences").read_text())
    quarantine = world.fermix_home / "browser/profiles/fermix/fermix-download-quarantine"
    assert prefs["download"]["default_directory"] == str(quarantine)
    assert prefs["download"]["prompt_for_download"] is False
