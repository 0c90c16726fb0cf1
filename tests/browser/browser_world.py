"""Helpers for the browser tests: a page server on 127.0.0.1, a world with its own home, and callers.

Chromium start-up is the expensive part on a shared machine, so each module starts one browser
(module-scoped) and its tests share it. 127.0.0.1 is allowed to the guard through this module's config
only; the server also answers on 127.0.0.2, which stays refused, so a request the guard lets through
would really arrive (and the server records it).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]

needs_chromium = pytest.mark.skipif(
    not any(shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome")),
    reason="Chromium is not installed (.ci/run installs it with apt-get install chromium)",
)


@dataclass
class Site:
    """An HTTP server on 127.0.0.1 (and 127.0.0.2) serving `pages`; `seen` lists the paths requested."""

    port: int
    pages: dict[str, tuple[int, dict[str, str], bytes]]
    seen: list[str] = field(default_factory=list)

    def url(self, path: str, host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}{path}"


def serve(pages: dict[str, tuple[int, dict[str, str], bytes]]) -> tuple[Site, ThreadingHTTPServer]:
    site = Site(0, pages)

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            site.seen.append(self.path)
            status, headers, body = site.pages.get(self.path, (404, {}, b"not found"))
            self.send_response(status)
            headers = {"Content-Type": "text/html; charset=utf-8", **headers}
            for key, value in headers.items():
                self.send_header(key, value.replace("{port}", str(site.port)))
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("0.0.0.0", 0), Handler)
    site.port = server.server_address[1]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return site, server


@dataclass
class BrowserWorld:
    home: Path
    fermix_home: Path
    project: Path

    @property
    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("FERMIX_", "PYTEST_"))}
        env.update(HOME=str(self.home), FERMIX_HOME=str(self.fermix_home), PYTHONPATH=str(REPO), NO_COLOR="1")
        return env

    def context(self) -> Any:
        from fermix_cli.core.context import ToolContext
        from fermix_cli.core.paths import resolve_paths

        return ToolContext(
            paths=resolve_paths(str(self.fermix_home)), os_home=str(self.home), launch_cwd=str(self.project)
        )

    def call(self, args: dict[str, Any]) -> Any:
        """The tool in-process, through registry.invoke (raises ToolError)."""
        from fermix_cli.core.registry import default_registry

        ctx = self.context()
        try:
            return default_registry().invoke("browser", args, ctx)
        finally:
            ctx.close()

    def error(self, args: dict[str, Any]) -> Any:
        from fermix_cli.core.errors import ToolError

        with pytest.raises(ToolError) as caught:
            self.call(args)
        return caught.value

    def cli(self, args: dict[str, Any], timeout: float = 60) -> subprocess.CompletedProcess[str]:
        """`fermix tool browser --json ...` as its own process."""
        return subprocess.run(
            [sys.executable, "-m", "fermix_cli", "tool", "browser", "--json", json.dumps(args)],
            capture_output=True,
            text=True,
            env=self.env,
            cwd=self.project,
            timeout=timeout,
        )


def make_world(root: Path, config: str) -> BrowserWorld:
    home = root / "home"
    project = home / "project"
    project.mkdir(parents=True)
    fermix_home = home / ".fermix"
    fermix_home.mkdir(mode=0o700)
    (fermix_home / "config.toml").write_text(config)
    return BrowserWorld(home, fermix_home, project)


def html(body: str, title: str = "page") -> tuple[int, dict[str, str], bytes]:
    return (
        200,
        {},
        f"<!doctype html><html><head><title>{title}</title></head><body>{body}</body></html>".encode(),
    )


def ref_of(snapshot: str, role: str, name: str) -> str:
    """The ref of the first snapshot line with this role and name."""
    for line in snapshot.splitlines():
        text = line.strip()
        if text.startswith(f'- {role} "{name}"') and "[ref=" in text:
            return text.split("[ref=", 1)[1].split("]", 1)[0]
    raise AssertionError(f"no {role} {name!r} in:\n{snapshot}")
