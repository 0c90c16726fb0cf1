"""The browser started two other ways: from the single-file fermix.pyz, and headed on an X server (Xvfb).

The pyz test runs when `FERMIX_PYZ` names a built fermix.pyz (`.ci/run` builds one and exports it; build
one with `python -m fermix_cli.build pyz`). It runs the pyz from a virtualenv that has neither fermix nor
its dependencies, so the warden (started as `python -m fermix_cli.browser.warden`) can only have come from
the pyz's own extracted packages, never from a fermix_cli in the directory it was called from.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser.browser_world import BrowserWorld, Site, html, make_world, needs_chromium, ref_of, serve

pytestmark = needs_chromium

CONFIG = '[fermix_core.net]\nallowed_private_hosts = ["127.0.0.1"]\n'
PAGE = html(
    """<button onclick="document.getElementById('out').textContent = 'clicked'">Press me</button>
<p id="out"></p><p id="leak">waiting</p><script>
fetch('http://127.0.0.2:{port}/secret').then(() => { document.getElementById('leak').textContent = 'leaked'; })
  .catch(() => { document.getElementById('leak').textContent = 'refused'; });</script>""",
    "Modes",
)


@pytest.fixture
def site() -> Iterator[Site]:
    made, server = serve({"/secret": html("secret")})
    made.pages["/page"] = (200, {}, PAGE[2].replace(b"{port}", str(made.port).encode()))
    yield made
    server.shutdown()
    server.server_close()


def run_json(argv: list[str], env: dict[str, str], cwd: Path) -> dict[str, Any]:
    done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def drive(call: Any, world: BrowserWorld, site: Site) -> dict[str, Any]:
    """start, open, snapshot, click by ref, read back, and the guard's refusal; the launch record."""
    started = call({"action": "start"})
    assert started["started"] is True
    call({"action": "open", "url": site.url("/page")})
    ref = ref_of(call({"action": "snapshot"})["snapshot"], "button", "Press me")
    call({"action": "act", "kind": "click", "ref": ref})
    got = call({"action": "act", "kind": "get", "field": "text", "selector": "#out"})
    assert got["value"] == "clicked"
    call({"action": "act", "kind": "wait", "wait_until": "text", "text": "refused"})
    assert "/secret" not in site.seen
    console = call({"action": "console"})["messages"]
    assert any(m["level"] == "blocked" and "127.0.0.2" in m["text"] for m in console)
    record: dict[str, Any] = json.loads((world.fermix_home / "run" / "browser" / "fermix.json").read_text())
    return record


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("FERMIX_PYZ"), reason="FERMIX_PYZ does not name a built fermix.pyz")
def test_the_browser_and_its_warden_run_from_the_pyz(tmp_path: Path, site: Site) -> None:
    pyz = Path(os.environ["FERMIX_PYZ"]).resolve()
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    world = make_world(tmp_path, CONFIG)
    # A fermix_cli in the working directory (a project that is a fermix checkout) must not be the
    # warden's code: `python -m` puts the working directory first on sys.path.
    (world.project / "fermix_cli").mkdir()
    (world.project / "fermix_cli" / "__init__.py").write_text("raise SystemExit('the wrong fermix_cli')\n")
    chromium_dir = os.path.dirname(str(shutil.which("chromium") or shutil.which("chromium-browser")))
    env = {
        "PATH": os.pathsep.join((str(venv / "bin"), chromium_dir, "/usr/bin", "/bin")),
        "HOME": str(world.home),
        "FERMIX_HOME": str(world.fermix_home),
    }

    def call(args: dict[str, Any]) -> dict[str, Any]:
        return run_json([str(pyz), "tool", "browser", "--json", json.dumps(args)], env, world.project)

    try:
        record = drive(call, world, site)
        warden = record["warden_pid"]
        argv = Path(f"/proc/{warden}/cmdline").read_bytes().split(b"\0")
        assert argv[0] == str(venv / "bin" / "python3").encode() or argv[0].startswith(str(venv).encode())
        warden_env = dict(
            line.split(b"=", 1)
            for line in Path(f"/proc/{warden}/environ").read_bytes().split(b"\0")
            if b"=" in line
        )
        # Its code is the pyz's, extracted under the home's cache, not this checkout's.
        assert str(world.home / ".cache" / "fermix" / "pyz").encode() in warden_env[b"PYTHONPATH"]
    finally:
        subprocess.run([str(pyz), "tool", "browser", "--json", '{"action":"stop"}'], env=env, timeout=60)


@pytest.fixture
def xvfb() -> Iterator[str]:
    """A private Xvfb; it picks a free display itself (`-displayfd`), so parallel tests never collide."""
    if shutil.which("Xvfb") is None:
        pytest.skip("Xvfb is not installed (apt-get install xvfb): the headed browser needs an X server")
    read, write = os.pipe()
    proc = subprocess.Popen(
        ["Xvfb", "-displayfd", str(write), "-screen", "0", "1024x768x24", "-nolisten", "tcp", "-noreset"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        pass_fds=(write,),
    )
    os.close(write)
    with os.fdopen(read) as numbers:
        display = numbers.readline().strip()  # written once the server is ready
    assert display.isdigit(), f"Xvfb did not start (exit status {proc.poll()})"
    yield f":{display}"
    proc.terminate()
    proc.wait(timeout=10)


@pytest.mark.slow
def test_a_headed_browser_on_xvfb(tmp_path: Path, site: Site, xvfb: str) -> None:
    world = make_world(tmp_path, CONFIG + "[fermix_core.browser]\nheadless = false\n")
    env = {**world.env, "DISPLAY": xvfb}
    env.pop("WAYLAND_DISPLAY", None)

    def call(args: dict[str, Any]) -> dict[str, Any]:
        argv = [sys.executable, "-m", "fermix_cli", "tool", "browser", "--json", json.dumps(args)]
        return run_json(argv, env, world.project)

    try:
        record = drive(call, world, site)
        assert record["headless"] is False
        cmdline = Path(f"/proc/{record['pid']}/cmdline").read_bytes().split(b"\0")
        assert not any(arg.startswith(b"--headless") for arg in cmdline)
        if shutil.which("xwininfo"):  # the browser's window is really on this X server
            tree = subprocess.run(
                ["xwininfo", "-root", "-tree"], env=env, capture_output=True, text=True, timeout=10
            ).stdout
            assert "Modes - Chromium" in tree
    finally:
        subprocess.run(
            [sys.executable, "-m", "fermix_cli", "tool", "browser", "--json", '{"action":"stop"}'],
            env=env,
            cwd=world.project,
            timeout=60,
        )
