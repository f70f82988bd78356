"""Leases, members and shared fingerprints: what several server processes and hosts on one
database agree on through it (core/cluster.py decides what they mean).

Every write here runs in a write transaction that first serialises with the others of its kind:
SQLite's write lock (BEGIN IMMEDIATE) does that already; on PostgreSQL a transaction-scoped
advisory lock does, so two processes never both see a lease free, nor both insert its row.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy import delete, select, text, update
from sqlalchemy.orm import Session

from airwave.store.models import ClusterLease, ClusterMember, SharedFingerprint

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_CLUSTER_LOCK = 0x41574C53  # advisory lock key shared by every server process of an instance


def serialise(db: Session) -> None:
    """Make this write transaction the only one touching cluster rows until it ends."""
    if db.get_bind().dialect.name == "postgresql":
        db.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _CLUSTER_LOCK})


@dataclass(frozen=True)
class Lease:
    name: str
    holder: str | None
    expires_at: datetime
    state: str | None
    requested_at: datetime | None

    def live(self, now: datetime) -> bool:
        return self.holder is not None and self.expires_at > now


def take_lease(
    db: Session,
    name: str,
    holder: str,
    now: datetime,
    ttl: timedelta,
    dead: Callable[[str], bool] = lambda _holder: False,
) -> bool:
    """Hold (or keep holding) the lease until now + ttl; False when another live holder has it
    (one that `dead` knows to be gone is not waited out). A new holder starts with no published
    state."""
    serialise(db)
    row = db.get(ClusterLease, name, populate_existing=True)
    if row is None:
        db.add(ClusterLease(name=name, holder=holder, expires_at=now + ttl))
        return True
    if row.holder not in (None, holder) and row.expires_at > now and not dead(row.holder):
        return False
    if row.holder != holder:
        row.state = None
    row.holder, row.expires_at = holder, now + ttl
    return True


def release_lease(db: Session, name: str, holder: str) -> None:
    """Give the lease up at once (a graceful stop), so another process need not wait it out."""
    serialise(db)
    db.execute(
        update(ClusterLease)
        .where(ClusterLease.name == name, ClusterLease.holder == holder)
        .values(holder=None, expires_at=EPOCH)
    )


def publish(db: Session, name: str, holder: str, state: str) -> None:
    """The holder's state for the other processes to read (ignored once it holds no more)."""
    db.execute(
        update(ClusterLease)
        .where(ClusterLease.name == name, ClusterLease.holder == holder)
        .values(state=state)
    )


def request_work(db: Session, name: str, now: datetime) -> None:
    """Ask whoever holds (or next takes) the lease for its work now."""
    serialise(db)
    row = db.get(ClusterLease, name, populate_existing=True)
    if row is None:
        db.add(ClusterLease(name=name, holder=None, expires_at=EPOCH, requested_at=now))
    else:
        row.requested_at = now


def take_request(db: Session, name: str, holder: str) -> bool:
    """True once for each request made of the lease this holder holds."""
    taken = db.execute(
        update(ClusterLease)
        .where(
            ClusterLease.name == name,
            ClusterLease.holder == holder,
            ClusterLease.requested_at.is_not(None),
        )
        .values(requested_at=None)
    )
    return bool(taken.rowcount)


def leases(db: Session) -> list[Lease]:
    rows = db.scalars(select(ClusterLease).order_by(ClusterLease.name)).all()
    return [Lease(r.name, r.holder, r.expires_at, r.state, r.requested_at) for r in rows]


# --- members --------------------------------------------------------------------------------------


def heartbeat(db: Session, member: str, now: datetime) -> None:
    """This process is alive now."""
    serialise(db)
    row = db.get(ClusterMember, member, populate_existing=True)
    if row is None:
        db.add(ClusterMember(id=member, started_at=now, seen_at=now))
    else:
        row.seen_at = now


def leave(db: Session, member: str) -> None:
    db.execute(delete(ClusterMember).where(ClusterMember.id == member))


def live_members(db: Session, since: datetime) -> list[str]:
    return list(
        db.scalars(
            select(ClusterMember.id).where(ClusterMember.seen_at > since).order_by(ClusterMember.id)
        )
    )


def forget_members(db: Session, before: datetime) -> int:
    """Drop members not seen since `before` (killed processes)."""
    return db.execute(delete(ClusterMember).where(ClusterMember.seen_at <= before)).rowcount or 0


# --- fingerprints ---------------------------------------------------------------------------------


def fingerprints(db: Session) -> dict[str, tuple[str, str]]:
    """name -> (fingerprint, who recorded it)."""
    rows = db.scalars(select(SharedFingerprint)).all()
    return {r.name: (r.fingerprint, r.recorded_by) for r in rows}


def record_fingerprint(db: Session, name: str, fingerprint: str, by: str, now: datetime) -> None:
    row = db.get(SharedFingerprint, name, populate_existing=True)
    if row is None:
        db.add(
            SharedFingerprint(name=name, fingerprint=fingerprint, recorded_by=by, recorded_at=now)
        )
    else:
        row.fingerprint, row.recorded_by, row.recorded_at = fingerprint, by, now
