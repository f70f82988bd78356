"""The account's active player (spec §6.5): one session plays at a time; the others learn it.

A claim holds while the music its player was handed would still be playing, plus CLAIM_GRACE; a
logged-out, deleted or expired session holds none. The player that lost the claim is refused
with STREAM_VIOLATION on its next request of any kind: fragment, audio, receipt, feedback.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy import bindparam, select, update
from sqlalchemy.orm import Session

from airwave.config import Settings
from airwave.errors import ApiError, ErrorCode
from airwave.store.models import AuthSession, Listener
from airwave.store.prepared import Prepared

ACTIVE_WINDOW = timedelta(minutes=10)  # a claim made before claims had an end (migration 0009)
# A claim holds until the music its player was handed would have ended, plus this much for
# buffering, a short pause or a slow network.
CLAIM_GRACE = timedelta(minutes=2)


@dataclass
class Claim:
    """The account's active player as a write transaction took it (`claim_player`): its
    listener row's three columns, without loading the row."""

    listener_id: int
    active_session_id: int | None
    active_at: datetime | None
    active_until: datetime | None


_LISTENERS = Listener.__table__.c
_CLAIM = Prepared(
    select(_LISTENERS.active_session_id, _LISTENERS.active_at, _LISTENERS.active_until)
    .where(_LISTENERS.id == bindparam("listener_id"))
    .with_for_update()
)
_SAVE_CLAIM = Prepared(
    update(Listener.__table__)
    .where(_LISTENERS.id == bindparam("listener_id"))
    .values(
        active_session_id=bindparam("session_id"),
        active_at=bindparam("at"),
        active_until=bindparam("until"),
    )
)


def claim_player(
    db: Session,
    listener: Listener,
    session: AuthSession,
    now: datetime,
    *,
    force: bool,
    save: bool = True,
) -> Claim:
    """Make this session the account's active player, unless another live session holds the claim.

    A claim holds while the music its player was handed would still be playing, plus
    CLAIM_GRACE; a logged-out, deleted or expired session holds none. The listener's row is
    locked (PostgreSQL) and, with `save`, written; without, the caller holds the claim longer
    (`hold_player`) and writes it once (`save_claim`).
    """
    db.flush()  # a change of the transaction's own not yet written (none, mostly) is read too
    row = _CLAIM.first(db, listener_id=listener.id)
    assert row is not None
    claim = Claim(listener.id, *row)
    other_active = (
        claim.active_session_id not in (None, session.id)
        and now < _claim_end(claim)
        and _live_session(db, claim.active_session_id, now)
    )
    if other_active and not force:
        raise ApiError(
            ErrorCode.STREAM_VIOLATION,
            "this account is playing on another device; resume with forceActive to play here",
        )
    if claim.active_session_id != session.id:
        claim.active_until = None
    claim.active_session_id, claim.active_at = session.id, now
    hold_player(claim, now + CLAIM_GRACE)
    if save:
        save_claim(db, claim)
    return claim


def save_claim(db: Session, claim: Claim) -> None:
    """Write a claim taken by `claim_player` (one statement, the row's other columns untouched)."""
    _SAVE_CLAIM.run(
        db,
        listener_id=claim.listener_id,
        session_id=claim.active_session_id,
        at=claim.active_at,
        until=claim.active_until,
    )


def _claim_end(row: Listener | Claim) -> datetime:
    if row.active_until is not None:
        return row.active_until
    if row.active_at is not None:
        return row.active_at + ACTIVE_WINDOW
    return datetime.min.replace(tzinfo=UTC)


def hold_player(row: Listener | Claim, until: datetime) -> None:
    """Keep the claim of the row's active player at least until `until`."""
    if row.active_until is None or row.active_until < until:
        row.active_until = until


def _live_session(db: Session, session_id: int, now: datetime) -> bool:
    """The session still exists and has not expired (ids are never reused, see migration 0008)."""
    live = select(AuthSession.id).where(AuthSession.id == session_id, AuthSession.expires_at > now)
    return db.scalar(live) is not None


def release_player(db: Session, listener: Listener, session: AuthSession) -> None:
    db.execute(
        update(Listener)
        .where(Listener.id == listener.id, Listener.active_session_id == session.id)
        .values(active_session_id=None, active_at=None, active_until=None)
    )


def check_player(db: Session, listener_id: int, session_id: int | None, now: datetime) -> None:
    """STREAM_VIOLATION when another live session of the account holds the claim.

    For every request of a player about its music (audio, receipts, feedback, trackStarted):
    the player that lost the claim learns it on its very next request, not only on its next
    fragment. `session_id` None (music not handed to a session, such as on-demand plays)
    passes.
    """
    if session_id is None:
        return
    row = db.get(Listener, listener_id)
    if row is None or row.active_session_id in (None, session_id) or now >= _claim_end(row):
        return
    if _live_session(db, row.active_session_id, now):
        raise ApiError(
            ErrorCode.STREAM_VIOLATION,
            "another device of this account is playing now; resume with forceActive to play here",
        )


# A Subsonic app authenticates every call and has no login, so no session of its own; radio needs
# one (the account's active player, the spins handed to it): each listener gets one app session.
# Its token_hash is a name, not a SHA-256 digest, so no X-AuthToken can ever match it.
APP_SESSION_AGENT = "Subsonic apps"


def _app_session_name(listener_id: int) -> str:
    return f"subsonic-apps:{listener_id}"


def app_session_id(db: Session, listener_id: int) -> int | None:
    """The listener's app session, if apps have played radio."""
    name = _app_session_name(listener_id)
    return db.scalar(select(AuthSession.id).where(AuthSession.token_hash == name))


def app_session(db: Session, settings: Settings, listener: Listener, now: datetime) -> AuthSession:
    """The listener's player session for Subsonic apps, made on first use, kept alive by use."""
    name = _app_session_name(listener.id)
    session = db.scalar(select(AuthSession).where(AuthSession.token_hash == name))
    if session is None:
        session = AuthSession(
            listener_id=listener.id,
            token_hash=name,
            cookie_hash=name,
            keep_logged_in=True,
            timeout_seconds=settings.keep_logged_in_timeout,
            created_at=now,
            client_address=None,
            user_agent=APP_SESSION_AGENT,
        )
        db.add(session)
    session.last_seen_at = now
    session.expires_at = now + timedelta(seconds=session.timeout_seconds)
    db.flush()
    return session
