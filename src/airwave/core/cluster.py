"""Several server processes, on one host or many, sharing one database (docs/scaling.md).

Each process is a member, seen while it renews its row. Roles that must run once for the whole
instance are leases in the database: `housekeeping` (expired sessions, idle anonymous listeners,
throttle counters, dead members) and `library` (scans, sound analysis, the similarity space, the
file watcher). A lease is renewed every `lease_ttl / 4` seconds; when its holder dies without
giving it up (kill -9, a host lost), another process takes it over once `lease_ttl` has passed.
The library's work is resumable (what a scan committed stays), so the new holder simply scans.

What each host keeps in its own data dir but must have alike (the keys that sign or seal
things other hosts check, the library's folders) is compared at start against what a live
member recorded; a host that differs refuses to start.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
import threading
import time
from datetime import datetime, timedelta
from pathlib import Path

from sqlalchemy import func, select

from airwave.core.accounts import app_passwords, credentials, throttle
from airwave.core.library import LIBRARY_LEASE, Library
from airwave.core.members import gone_from_this_host, member_id
from airwave.core.members import node_name as node_name  # the edges name the host by it
from airwave.core.members import now as _now
from airwave.core.services import Services
from airwave.store import cluster
from airwave.store.db import head_revision
from airwave.store.models import Listener

log = logging.getLogger("airwave.cluster")

HOUSEKEEPING, LIBRARY = "housekeeping", LIBRARY_LEASE
WORKER_ENV = "AIRWAVE_WORKER_INDEX"  # set by the supervisor of `serve --workers N`: 1..N


def schema_current(services: Services) -> bool:
    """The database's schema is at the newest migration (a server is ready to answer)."""
    return services.database.current_revision() == head_revision()


# --- shared configuration -------------------------------------------------------------------------


def _keyed(secret: bytes) -> str:
    """A fingerprint that tells keys apart without revealing them."""
    return hmac.new(secret, b"airwave shared-key fingerprint v1", hashlib.sha256).hexdigest()[:32]


def shared_fingerprints(services: Services, roots: list[Path]) -> dict[str, str]:
    """What this host has that every host of the instance must have alike."""
    data_dir = str(services.settings.data_dir)
    current = services.signer.keys()[-1]
    found = {
        "url-signing-key": f"key {current.id} {_keyed(current.secret)}",
        "device-cookie-key": _keyed(throttle._secret(data_dir)),
        "app-password-key": _keyed(app_passwords._master(data_dir)),
    }
    if roots:
        found["library-folders"] = json.dumps(sorted(os.path.abspath(r) for r in roots))
    return found


_REMEDY = {
    "url-signing-key": "copy url-signing-keys.json from that host's data dir to this one's",
    "device-cookie-key": "copy device-cookie-key from that host's data dir to this one's",
    "app-password-key": "copy app-password-key from that host's data dir to this one's",
    "library-folders": "mount the music at the same path and give the same --library folders",
}


def join(services: Services, roots: list[Path]) -> None:
    """At start: check this host against what the live members recorded, and record it.

    ValueError (the server refuses to start) when a live member of another process recorded a
    different key or library; with no live member, this host's values become the record.
    """
    me = member_id(services)
    ttl = timedelta(seconds=services.settings.lease_ttl)
    mine = shared_fingerprints(services, roots)
    now = _now()
    with services.database.write() as db:
        cluster.heartbeat(db, me, now)  # a host starting at the same moment sees this one live
        live = [
            m
            for m in cluster.live_members(db, now - ttl)
            if m != me and not gone_from_this_host(services, m)
        ]
        recorded = cluster.fingerprints(db)
        for name, value in mine.items():
            known = recorded.get(name)
            if known is not None and known[0] != value and live:
                raise ValueError(
                    f"this host's {name} differs from the one {known[1]} recorded for this "
                    f"database, and members {', '.join(live[:5])} are running with it: "
                    f"{_REMEDY[name]}, then start again (a member of another host that was "
                    f"killed counts as running for lease_ttl={services.settings.lease_ttl:g} s)"
                )
        for name, value in mine.items():
            if recorded.get(name, ("", ""))[0] != value:
                if name in recorded:
                    log.warning("shared setting replaced", extra={"setting": name, "by": me})
                cluster.record_fingerprint(db, name, value, me, now)


def leave(services: Services) -> None:
    """This process stops being a member (its roles, if any, are given up by its coordinator)."""
    with services.database.write() as db:
        cluster.leave(db, member_id(services))


def record_signing_key(services: Services) -> None:
    """After a key rotation: the new key becomes the one every host must have."""
    value = shared_fingerprints(services, [])["url-signing-key"]
    with services.database.write() as db:
        cluster.serialise(db)
        cluster.record_fingerprint(db, "url-signing-key", value, member_id(services), _now())


# --- what every process may show ---------------------------------------------------------------


def overview(services: Services) -> dict[str, object]:
    """Who holds each role now, and what the library's holder last published."""
    now = _now()
    with services.database.read() as db:
        rows = cluster.leases(db)
    leaders: dict[str, str | None] = {HOUSEKEEPING: None, LIBRARY: None}
    library: dict[str, object] | None = None
    for lease in rows:
        if lease.live(now):
            leaders[lease.name] = lease.holder
            if lease.name == LIBRARY and lease.state:
                library = json.loads(lease.state)
    return {"leaders": leaders, "library": library}


def gauges(services: Services) -> dict[str, float]:
    """Instance-wide figures read from the database (the same on every host): listeners whose
    player holds a claim now, members alive, the library scan's progress."""
    now = _now()
    ttl = timedelta(seconds=services.settings.lease_ttl)
    with services.database.read() as db:
        listening = db.scalar(
            select(func.count(Listener.id)).where(
                Listener.active_session_id.is_not(None), Listener.active_until > now
            )
        )
        members = len(cluster.live_members(db, now - ttl))
        rows = cluster.leases(db)
    status: dict[str, object] = {}
    for lease in rows:
        if lease.name == LIBRARY and lease.live(now) and lease.state:
            status = json.loads(lease.state)
    return {
        "active_listeners": float(listening or 0),
        "members": float(members),
        "scanning": 0.0 if status.get("state", "idle") == "idle" else 1.0,
        "scan_done": float(status.get("done", 0) or 0),  # type: ignore[arg-type]
        "scan_total": float(status.get("total", 0) or 0),  # type: ignore[arg-type]
        "scans": float(status.get("scans", 0) or 0),  # type: ignore[arg-type]
    }


# --- the coordinator ------------------------------------------------------------------------------


class Coordinator:
    """One per server process: keeps it a member, takes and renews the roles it can, does the
    work of the ones it holds, and gives them up when it stops."""

    def __init__(self, services: Services, library: Library | None = None) -> None:
        self.services = services
        self.library = library if library is not None and library.roots else None
        self.me = member_id(services)
        self.ttl = timedelta(seconds=services.settings.lease_ttl)
        self.held: set[str] = set()
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._purged_at = 0.0
        if self.library is not None:
            self.library.on_change = self._wake.set

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="cluster", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop the work of the roles held, give them up, leave."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        if self.library is not None and LIBRARY in self.held:
            self.library.leading = False
            self.library.stop()
        try:
            with self.services.database.write() as db:
                for name in sorted(self.held):
                    cluster.release_lease(db, name, self.me)
                cluster.leave(db, self.me)
        except Exception:
            log.exception("could not give up the cluster roles")
        self.held.clear()

    def _run(self) -> None:
        tick = max(0.2, self.services.settings.lease_ttl / 4)
        while not self._stop.is_set():
            try:
                self.tick()
            except Exception:
                log.exception("cluster round failed")
            self._wake.wait(tick)
            self._wake.clear()

    def tick(self) -> None:
        """One round: heartbeat, take or renew roles, publish, act on what changed."""
        now = _now()
        roles = [HOUSEKEEPING] + ([LIBRARY] if self.library is not None else [])
        held: set[str] = set()
        rescan = False
        with self.services.database.write() as db:
            cluster.heartbeat(db, self.me, now)
            for name in roles:
                dead = lambda holder: gone_from_this_host(self.services, holder)  # noqa: E731
                if cluster.take_lease(db, name, self.me, now, self.ttl, dead):
                    held.add(name)
            if LIBRARY in held and self.library is not None:
                cluster.publish(db, LIBRARY, self.me, json.dumps(self.library.status.as_dict()))
                rescan = cluster.take_request(db, LIBRARY, self.me)
        if self._stop.is_set():
            self.held = held  # given up by stop()
            return
        gained, lost = held - self.held, self.held - held
        self.held = held
        for name in sorted(gained):
            log.info("cluster role taken", extra={"role": name, "member": self.me})
        for name in sorted(lost):
            log.warning("cluster role lost", extra={"role": name, "member": self.me})
        if self.library is not None:
            if LIBRARY in gained:
                self.library.leading = True
                self.library.start(watch=self.services.settings.watch_library)
            elif LIBRARY in lost:
                self.library.leading = False
                self.library.stop()
            elif rescan:
                self.library.rescan()
        if HOUSEKEEPING in gained:
            self._purged_at = 0.0
        interval = self.services.settings.housekeeping_interval
        if HOUSEKEEPING in held and time.monotonic() - self._purged_at >= interval:
            self._purged_at = time.monotonic()
            self.housekeeping(now)

    def housekeeping(self, now: datetime) -> None:
        removed, idle = credentials.purge_expired(self.services)
        with self.services.database.write() as db:  # sessions' purge dropped throttle counters
            gone = cluster.forget_members(db, now - 10 * self.ttl)
        if removed or idle or gone:
            log.info(
                "housekeeping", extra={"sessions": removed, "anonymous": idle, "members": gone}
            )
