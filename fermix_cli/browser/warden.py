"""The warden: one small process per running browser that guards every request it makes.

A CLI call lives for milliseconds, but a page keeps loading after the call returns, so the network guard
needs a process that stays attached. The warden connects to the browser endpoint, auto-attaches to every
target (pages, frames, workers) with `waitForDebuggerOnStart`, enables CDP `Fetch` interception on each
before letting it run, and answers every paused request: continue when the network guard allows the URL,
fail with `BlockedByClient` otherwise. That covers navigations, each redirect hop and subresources.

It also serves the guarding forward proxy Chromium is started behind (`guardproxy`): the connections
themselves, WebSockets included, are made by the warden to addresses it resolved and judged once, so
neither a page's WebSocket nor a host that changes its DNS answer between two lookups gets past the guard.

It also records what a short-lived call could miss: JavaScript dialogs that are open (a dialog blocks the
page, so calls must be told to use action=dialog) and console messages. It closes the browser when the
profile has been idle longer than `idle_minutes`, and exits when the browser goes away.

Run as `python -m fermix_cli.browser.warden <launch-file> <proxy-fd>`, where `proxy-fd` is the proxy's
listening socket, bound by `start` before Chromium was launched and inherited.

For tests only, `FERMIX_BROWSER_TEST_RESOLVER` names a JSON file `{"host": [[answers], [answers], ...]}`:
the warden's lookups of a listed host get those answer lists in turn (the last one repeats), any other
host goes to the system resolver. It replaces where answers come from, never how they are judged: every
answer still goes through `HostGuard`. It lets a test be a host whose DNS answer changes between lookups.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..core.net.guard import HostGuard, Resolver, system_resolver
from .cdp import CDPConnection, ConnectionLost
from .guardproxy import GuardProxy
from .launcher import browser_alive
from .netrules import judge
from .runfiles import read_json, write_json

GUARDED_TYPES = frozenset({"page", "iframe", "worker", "shared_worker", "service_worker"})
PATTERN = {"urlPattern": "*", "requestStage": "Request"}
CONSOLE_CAP = 1_000_000  # bytes kept in the console file
REQUEST_POLL = 0.1  # seconds between looks for a dialog request


TEST_RESOLVER_ENV = "FERMIX_BROWSER_TEST_RESOLVER"


def scripted_resolver(path: str) -> Resolver:
    """The resolver `FERMIX_BROWSER_TEST_RESOLVER` names (see the module docstring)."""
    table: dict[str, list[list[str]]] = json.loads(Path(path).read_text())
    lookups: dict[str, int] = {}
    lock = threading.Lock()

    def resolve(host: str) -> Iterable[str]:
        answers = table.get(host)
        if not answers:
            return system_resolver(host)
        with lock:
            n = lookups[host] = lookups.get(host, -1) + 1
        return list(answers[min(n, len(answers) - 1)])

    return resolve


class Warden:
    def __init__(self, launch: Path, proxy_fd: int) -> None:
        record = read_json(launch)
        if record is None:
            raise SystemExit(f"warden: no launch record at {launch}")
        self.launch = launch
        self.record = record
        profile = str(record["profile"])
        self.state_file = launch.with_name(f"{profile}.warden.json")
        self.session_file = launch.with_name(f"{profile}.session.json")
        self.console_file = launch.with_name(f"{profile}.console.jsonl")
        self.request_file = launch.with_name(f"{profile}.dialog-request.json")
        self.download_file = launch.with_name(f"{profile}.download-request.json")
        self.downloads_until = 0.0  # when an action=download's allowance ends (0: denied)
        hook = os.environ.get(TEST_RESOLVER_ENV)
        self.guard = HostGuard(
            record.get("allowed_private_hosts", []), scripted_resolver(hook) if hook else None
        )
        self.console_lock = threading.Lock()
        self.proxy = GuardProxy(
            socket.socket(fileno=proxy_fd),
            self.guard,
            forbidden_local_ports=[int(record["port"])],
            on_refused=lambda text: self.append_console("", "blocked", text),
        )
        self.local_ports = self.proxy.forbidden_local_ports
        self.idle_seconds = int(record.get("idle_minutes", 0)) * 60
        self.conn = CDPConnection(str(record["ws_url"]), open_timeout=5.0)
        self.sessions: dict[str, str] = {}  # session id -> target id
        self.guarded: set[str] = set()
        self.dialogs: dict[str, dict[str, Any]] = {}
        self.ready = False
        self.pending: dict[int, str] = {}  # id of a page's confirming Fetch.enable -> its target id
        self.page_sessions: dict[str, str] = {}  # target id -> the warden's session on that page
        self.answering: dict[int, str] = {}  # id of a Page.handleJavaScriptDialog -> the request's id
        self.answers: dict[str, str] = {}  # request id -> "ok" or the browser's error

    def save(self) -> None:
        write_json(
            self.state_file,
            {
                "pid": os.getpid(),
                "ready": self.ready,
                "guarded": sorted(self.guarded),
                "dialogs": self.dialogs,
                "answers": self.answers,
            },
        )

    def run(self) -> None:
        self.proxy.start()
        auto = {"autoAttach": True, "waitForDebuggerOnStart": True, "flatten": True}
        self.conn.call("Target.setAutoAttach", auto, timeout=10)
        # No page downloads anything unless action=download asks: a download behaviour set over DevTools
        # lasts while the connection that set it stays open, and this one stays for the browser's life.
        self.conn.call("Browser.setDownloadBehavior", {"behavior": "deny"}, timeout=10)
        self.conn.call("Target.setDiscoverTargets", {"discover": True}, timeout=10)
        for event in list(self.conn.events):
            self.conn.events.remove(event)
            self.handle(event)
        last_idle_check = 0.0
        while True:
            if not self.ready and not self.pending:
                self.ready = True
                self.save()
            message = self.conn.receive(REQUEST_POLL)
            if message is not None and "method" in message:
                self.handle(message)
            elif message is not None and message.get("id") in self.pending:
                self.confirmed(self.pending.pop(message["id"]))
            elif message is not None and message.get("id") in self.answering:
                error = message.get("error", {}).get("message")
                self.answers[self.answering.pop(message["id"])] = error or "ok"
                self.save()
            if self.request_file.exists():
                self.answer_dialog()
            if self.download_file.exists():
                self.set_downloads()
            if self.downloads_until and time.time() > self.downloads_until:
                # The call that asked was killed before it could say it was done.
                self.downloads_until = 0.0
                self.conn.send("Browser.setDownloadBehavior", {"behavior": "deny"})
            now = time.monotonic()
            if now - last_idle_check >= 2.0:
                last_idle_check = now
                if self.should_exit():
                    return

    def should_exit(self) -> bool:
        record = read_json(self.launch)
        if record is None or record.get("pid") != self.record.get("pid"):
            # Stopped, or replaced by a new browser: nothing names this browser any more, so nothing
            # would ever close it, and it would hold the profile against every later start.
            if browser_alive(self.record):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(int(self.record["pid"]), signal.SIGKILL)
            return True
        if self.idle_seconds:
            try:
                last = self.session_file.stat().st_mtime
            except FileNotFoundError:
                last = float(self.record.get("started_at", time.time()))
            if time.time() - last > self.idle_seconds:
                # The launch record goes first: a call from now on reads "not running", never a lost host.
                with contextlib.suppress(FileNotFoundError):
                    self.launch.unlink()
                with contextlib.suppress(ConnectionLost):
                    self.conn.send("Browser.close")
                deadline = time.monotonic() + 5
                while browser_alive(self.record) and time.monotonic() < deadline:
                    time.sleep(0.05)
                if browser_alive(self.record):  # it would keep the profile locked for the next start
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.killpg(int(self.record["pid"]), signal.SIGKILL)
                for path in (self.launch, self.session_file, self.state_file, self.console_file):
                    with contextlib.suppress(FileNotFoundError):
                        path.unlink()
                return True
        return False

    def handle(self, event: dict[str, Any]) -> None:
        method = event["method"]
        params = event.get("params", {})
        session = event.get("sessionId")
        if method == "Fetch.requestPaused":
            self.decide(params, session)
        elif method == "Target.attachedToTarget":
            self.attached(params)
        elif method == "Target.detachedFromTarget":
            target = self.sessions.pop(params.get("sessionId", ""), None)
            if target and self.page_sessions.get(target) == params.get("sessionId"):
                del self.page_sessions[target]
            if target and target not in self.sessions.values():
                self.guarded.discard(target)
                self.dialogs.pop(target, None)
                self.save()
        elif method == "Target.targetDestroyed":
            target = params.get("targetId", "")
            if target in self.guarded or target in self.dialogs:
                self.guarded.discard(target)
                self.dialogs.pop(target, None)
                self.save()
        elif method == "Page.javascriptDialogOpening" and session in self.sessions:
            self.dialogs[self.sessions[session]] = {
                "type": params.get("type", ""),
                "message": params.get("message", ""),
                "default_prompt": params.get("defaultPrompt", ""),
                "url": params.get("url", ""),
            }
            self.save()
        elif method == "Page.javascriptDialogClosed" and session in self.sessions:
            if self.dialogs.pop(self.sessions[session], None) is not None:
                self.save()
        elif method in ("Runtime.consoleAPICalled", "Runtime.exceptionThrown") and session in self.sessions:
            self.console(self.sessions[session], method, params)

    def attached(self, params: dict[str, Any]) -> None:
        info = params.get("targetInfo", {})
        session = params.get("sessionId", "")
        kind = info.get("type", "")
        send = self.conn.send
        if kind in GUARDED_TYPES:
            # Sent in order on the target's session: interception is on before the target runs.
            send("Fetch.enable", {"patterns": [PATTERN]}, session)
            send(
                "Target.setAutoAttach",
                {"autoAttach": True, "waitForDebuggerOnStart": True, "flatten": True},
                session,
            )
            if kind == "page":
                send("Page.enable", {}, session)
                send("Runtime.enable", {}, session)
            self.sessions[session] = info.get("targetId", "")
            if kind == "page":
                self.page_sessions[info.get("targetId", "")] = session
        send("Runtime.runIfWaitingForDebugger", {}, session)
        if kind == "page":
            # A tab counts as guarded once the browser has confirmed interception (see `confirmed`).
            self.pending[send("Fetch.enable", {"patterns": [PATTERN]}, session)] = info.get("targetId", "")

    def answer_dialog(self) -> None:
        request = read_json(self.request_file)
        with contextlib.suppress(FileNotFoundError):
            self.request_file.unlink()
        if request is None:
            return
        session = self.page_sessions.get(str(request.get("target", "")))
        if session is None:
            self.answers[str(request.get("id", ""))] = "no such tab"
            self.save()
            return
        params: dict[str, Any] = {"accept": bool(request.get("accept", True))}
        if request.get("prompt_text") is not None:
            params["promptText"] = str(request["prompt_text"])
        self.answers = dict(list(self.answers.items())[-20:])  # keep the state file small
        self.answering[self.conn.send("Page.handleJavaScriptDialog", params, session)] = str(
            request.get("id")
        )

    def set_downloads(self) -> None:
        """Allow downloads into the requested folder until a deadline, or deny them again."""
        request = read_json(self.download_file)
        with contextlib.suppress(FileNotFoundError):
            self.download_file.unlink()
        if request is None:
            return
        params: dict[str, Any] = {"behavior": "deny"}
        self.downloads_until = 0.0
        if request.get("allow") and request.get("path"):
            params = {"behavior": "allowAndName", "downloadPath": str(request["path"])}
            self.downloads_until = float(request.get("until", 0)) or time.time() + 60
        self.answers = dict(list(self.answers.items())[-20:])
        self.answering[self.conn.send("Browser.setDownloadBehavior", params)] = str(request.get("id"))

    def confirmed(self, target: str) -> None:
        self.guarded.add(target)
        self.save()

    def decide(self, params: dict[str, Any], session: str | None) -> None:
        request_id = params["requestId"]
        url = str(params.get("request", {}).get("url", ""))
        why = judge(url, self.guard, self.local_ports)
        if why is None:
            self.conn.send("Fetch.continueRequest", {"requestId": request_id}, session)
            return
        self.conn.send(
            "Fetch.failRequest", {"requestId": request_id, "errorReason": "BlockedByClient"}, session
        )
        target = self.sessions.get(session or "", "")
        self.append_console(target, "blocked", f"fermix network guard refused {url[:300]}: {why}")

    def console(self, target: str, method: str, params: dict[str, Any]) -> None:
        if method == "Runtime.exceptionThrown":
            details = params.get("exceptionDetails", {})
            text = details.get("exception", {}).get("description") or details.get("text", "")
            self.append_console(target, "error", str(text))
            return
        parts = []
        for arg in params.get("args", []):
            value = arg.get("value", arg.get("description", arg.get("type", "")))
            parts.append(value if isinstance(value, str) else json.dumps(value))
        self.append_console(target, str(params.get("type", "log")), " ".join(parts))

    def append_console(self, target: str, level: str, text: str) -> None:
        """One console line; `target` "" for the proxy's refusals (a connection does not name its tab)."""
        line = json.dumps({"target": target, "level": level, "text": text[:4000], "ts": time.time()})
        with self.console_lock:  # the proxy's threads write here too
            self._append_console(line)

    def _append_console(self, line: str) -> None:
        with open(self.console_file, "a", encoding="utf-8") as fh:
            fh.write(line + "\n")
        with contextlib.suppress(OSError):
            if self.console_file.stat().st_size > CONSOLE_CAP:
                kept = self.console_file.read_bytes()[-CONSOLE_CAP // 2 :]
                write_console = kept[kept.find(b"\n") + 1 :]
                tmp = self.console_file.with_suffix(".tmp")
                tmp.write_bytes(write_console)
                os.replace(tmp, self.console_file)


def main(argv: list[str]) -> int:
    warden = Warden(Path(argv[0]), int(argv[1]))
    try:
        warden.run()
    except ConnectionLost:
        pass  # the browser went away: the next CLI call reports it
    finally:
        with contextlib.suppress(FileNotFoundError):
            state = read_json(warden.state_file)
            if state and state.get("pid") == os.getpid():
                warden.state_file.unlink()
        warden.conn.close()
        warden.proxy.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
