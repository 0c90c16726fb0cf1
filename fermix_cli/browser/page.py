"""One attached tab: evaluating in it, reading its document identity, resolving snapshot refs.

Every page call watches for `Page.javascriptDialogOpening`: a JavaScript dialog blocks the page, and a
call waiting on a blocked page would otherwise wait out its whole timeout. The warden records open
dialogs too, so a call that starts while one is open is refused at once with the way out.
"""

from __future__ import annotations

import time
from typing import Any

from ..core.errors import ToolError
from .cdp import CDPConnection, Interrupted
from .runfiles import ProfileFiles, read_json
from .snapshot_js import RESOLVE

DIALOG_EVENT = "Page.javascriptDialogOpening"


def dialog_blocking(dialog: dict[str, Any]) -> ToolError:
    return ToolError(
        "dialog_open",
        f"a JavaScript {dialog.get('type', 'dialog')} is blocking the page ({dialog.get('message', '')!r}); "
        "answer it with action=dialog (kind accept or dismiss, text for a prompt), then continue",
        {"dialog": dialog},
    )


def stale_ref(ref: str, why: str) -> ToolError:
    return ToolError(
        "stale_ref",
        f"ref {ref!r} {why}; take a fresh action=snapshot and use a ref from it",
        {"ref": ref},
    )


class Tab:
    """A CDP session on one page target."""

    def __init__(
        self, conn: CDPConnection, files: ProfileFiles, target_id: str, session: str, timeout: float
    ):
        self.conn = conn
        self.files = files
        self.target_id = target_id
        self.session = session
        self.timeout = timeout

    # ----- calls ---------------------------------------------------------------------------

    def open_dialog(self) -> dict[str, Any] | None:
        state = read_json(self.files.warden) or {}
        dialog = state.get("dialogs", {}).get(self.target_id)
        return dialog if isinstance(dialog, dict) else None

    def call(
        self, method: str, params: dict[str, Any] | None = None, timeout: float | None = None
    ) -> dict[str, Any]:
        """A command on this tab; a dialog that opens meanwhile becomes `dialog_open`."""
        try:
            return self.conn.call(
                method,
                params,
                self.session,
                timeout=timeout or self.timeout,
                interrupt=(DIALOG_EVENT,),
                poll=self._dialog_event,
            )
        except Interrupted as stop:
            params_ = stop.event.get("params", {})
            raise dialog_blocking(
                {"type": params_.get("type", ""), "message": params_.get("message", "")}
            ) from None
        except ToolError as exc:
            if exc.code == "timeout" and (dialog := self.open_dialog()) is not None:
                raise dialog_blocking(dialog) from None
            raise

    def _dialog_event(self) -> dict[str, Any] | None:
        dialog = self.open_dialog()
        return None if dialog is None else {"method": DIALOG_EVENT, "params": dialog}

    def check_no_dialog(self) -> None:
        if (dialog := self.open_dialog()) is not None:
            raise dialog_blocking(dialog)

    def evaluate(self, expression: str, *, timeout: float | None = None) -> Any:
        """The JSON value of a JavaScript expression in the page (promises awaited)."""
        result = self.call(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True, "awaitPromise": True},
            timeout,
        )
        if "exceptionDetails" in result:
            details = result["exceptionDetails"]
            text = details.get("exception", {}).get("description") or details.get("text", "")
            raise ToolError("script_error", f"the page raised: {str(text)[:500]}", {})
        return result.get("result", {}).get("value")

    def call_on(self, object_id: str, function: str, *args: Any) -> Any:
        """Call a JavaScript function with `this` bound to a resolved node; its JSON value."""
        result = self.call(
            "Runtime.callFunctionOn",
            {
                "objectId": object_id,
                "functionDeclaration": function,
                "arguments": [{"value": a} for a in args],
                "returnByValue": True,
                "awaitPromise": True,
            },
        )
        if "exceptionDetails" in result:
            details = result["exceptionDetails"]
            text = details.get("exception", {}).get("description") or details.get("text", "")
            raise ToolError("script_error", f"the page raised: {str(text)[:500]}", {})
        return result.get("result", {}).get("value")

    # ----- document identity and refs ------------------------------------------------------

    def frame(self) -> dict[str, Any]:
        """The main frame: id, loaderId (a new one per document), url."""
        frame: dict[str, Any] = self.call("Page.getFrameTree")["frameTree"]["frame"]
        return frame

    def resolve_ref(self, ref: str) -> str:
        """The objectId of the element a ref of this tab's latest snapshot names; `stale_ref` otherwise."""
        session = read_json(self.files.session) or {}
        token = (session.get("refs", {}).get(self.target_id) or {}).get("token")
        if not token:
            raise stale_ref(ref, "is not from a snapshot of this tab")
        result = self.call("Runtime.evaluate", {"expression": f"{RESOLVE}({_js(token)}, {_js(ref)})"}).get(
            "result", {}
        )
        if result.get("subtype") == "node" and "objectId" in result:
            return str(result["objectId"])
        why = {
            "document": "belongs to a page this tab has navigated away from (or to an older snapshot)",
            "missing": "is not in the latest snapshot of this tab",
            "removed": "was removed from the page (the page changed since the snapshot)",
        }.get(str(result.get("value")), "cannot be found in the page")
        raise stale_ref(ref, why)

    def resolve_selector(self, selector: str) -> str | None:
        """objectId of the first element matching a CSS selector, or None."""
        result = self.call(
            "Runtime.evaluate",
            {"expression": f"document.querySelector({_js(selector)})"},
        )
        if "exceptionDetails" in result:
            raise ToolError(
                "invalid_selector", f"{selector!r} is not a valid CSS selector", {"selector": selector}
            )
        obj = result.get("result", {})
        return str(obj["objectId"]) if obj.get("subtype") == "node" and "objectId" in obj else None

    def wait_loaded(self, loader_id: str | None, timeout: float) -> str:
        """Wait until the document (the one `loader_id` names, when given) is complete; its ready state."""
        deadline = time.monotonic() + timeout
        state = "loading"
        while True:
            self.check_no_dialog()
            current = self.frame()
            if loader_id is None or current.get("loaderId") == loader_id:
                state = str(
                    self.evaluate("document.readyState", timeout=max(0.5, deadline - time.monotonic()))
                )
                if state == "complete":
                    return state
            if time.monotonic() >= deadline:
                return state
            time.sleep(0.03)


def _js(value: str) -> str:
    import json

    return json.dumps(value)
