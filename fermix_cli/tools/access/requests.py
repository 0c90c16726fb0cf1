"""Pending directory grants: `request_directory_access` creates one, the owner confirms or denies it.

A request is a single-use token that lives 60 seconds. Confirming re-checks the grant and persists
it to `[sandbox] allowed_roots`; denying discards it. Both consume the token.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ...core.errors import ToolError
from ...core.grants import grant_path
from ...core.records import Record

if TYPE_CHECKING:
    import sqlite3

    from ...core.context import ToolContext

TOKEN_TTL_S = 60


class AccessRequest(Record, frozen=True):
    token: str
    path: str
    reason: str
    session_id: str
    origin: str
    created_at: float
    expires_at: float
    status: str

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> AccessRequest:
        return cls(**{k: row[k] for k in cls.__record_fields__})

    def to_dict(self, now: float) -> dict[str, Any]:
        return {
            "token": self.token,
            "path": self.path,
            "reason": self.reason,
            "expires_in_s": max(0, round(self.expires_at - now)),
            "status": self.status,
        }


def new_token() -> str:
    """Ten lowercase hex characters: short to type, unguessable within its 60 s life."""
    return secrets.token_hex(5)


def create_request(ctx: ToolContext, path: str, reason: str) -> tuple[AccessRequest, bool]:
    """(request, created): a new pending request, or the live one already pending for this path."""
    now = ctx.now().timestamp()
    with ctx.state.write() as db:
        existing = db.execute(
            "SELECT * FROM directory_access_requests WHERE path = ? AND session_id = ? AND status = 'pending'"
            " AND expires_at > ? ORDER BY created_at DESC LIMIT 1",
            (path, ctx.session_id, now),
        ).fetchone()
        if existing is not None:
            return AccessRequest.from_row(existing), False
        req = AccessRequest(
            token=new_token(),
            path=path,
            reason=reason,
            session_id=ctx.session_id,
            origin=ctx.origin,
            created_at=now,
            expires_at=now + TOKEN_TTL_S,
            status="pending",
        )
        db.execute(
            "INSERT INTO directory_access_requests (token, path, reason, session_id, origin, created_at,"
            " expires_at, status) VALUES (?,?,?,?,?,?,?,?)",
            (
                req.token,
                req.path,
                req.reason,
                req.session_id,
                req.origin,
                req.created_at,
                req.expires_at,
                "pending",
            ),
        )
    return req, True


def _claim(db: sqlite3.Connection, token: str, now: float) -> AccessRequest:
    """The pending, unexpired request for `token`, or the error saying why there is none."""
    token = token.strip().lower()
    row = db.execute("SELECT * FROM directory_access_requests WHERE token = ?", (token,)).fetchone()
    if row is None:
        raise ToolError(
            "not_found",
            f"no directory access request has token {token}. Tokens come from the request_directory_access tool",
            {"token": token},
        )
    req = AccessRequest.from_row(row)
    if req.status != "pending":
        raise ToolError(
            "token_used",
            f"token {token} was already used (request {req.status}); tokens are single-use. Ask again if needed",
            {"token": token, "status": req.status, "path": req.path},
        )
    if now >= req.expires_at:
        db.execute(
            "UPDATE directory_access_requests SET status = 'expired', resolved_at = ? WHERE token = ?",
            (now, token),
        )
        raise _Expired(req)
    return req


class _Expired(Exception):
    def __init__(self, req: AccessRequest) -> None:
        super().__init__(req.token)
        self.req = req

    def error(self) -> ToolError:
        return ToolError(
            "token_expired",
            f"token {self.req.token} expired (requests live {TOKEN_TTL_S} s); ask for access again",
            {"token": self.req.token, "path": self.req.path},
        )


def confirm_request(ctx: ToolContext, token: str) -> tuple[AccessRequest, bool]:
    """Grant the requested directory and consume the token. Returns (request, newly added)."""
    added = False
    ctx.refresh_config()  # a long-lived context (a session's) checks against config.toml as it is now

    def grant(req: AccessRequest) -> None:
        nonlocal added
        # The grant is checked again now: config or the filesystem may have changed since.
        _, added = grant_path(ctx.sandbox, ctx.paths, req.path)

    return _resolve(ctx, token, "confirmed", grant), added


def deny_request(ctx: ToolContext, token: str) -> AccessRequest:
    """Discard a pending request and consume its token."""
    return _resolve(ctx, token, "denied", lambda req: None)


def _resolve(
    ctx: ToolContext, token: str, status: str, act: Callable[[AccessRequest], None]
) -> AccessRequest:
    """Claim the pending request `token`, `act` on it and mark it `status`, in one transaction.

    An expired token is marked so (that is committed) and then reported.
    """
    now = ctx.now().timestamp()
    expired: _Expired | None = None
    with ctx.state.write() as db:
        try:
            req = _claim(db, token, now)
        except _Expired as e:
            expired = e  # commit the 'expired' mark, then report
        else:
            act(req)
            db.execute(
                "UPDATE directory_access_requests SET status = ?, resolved_at = ? WHERE token = ?",
                (status, now, req.token),
            )
            return req
    assert expired is not None
    raise expired.error()
