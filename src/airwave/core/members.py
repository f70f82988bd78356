"""Who a process is among the members of an instance (`host/pid`), and whether a member of this
host is gone: what leases are held and judged by (core/cluster.py, core/library.py)."""

from __future__ import annotations

import os
import socket
from datetime import UTC, datetime

from airwave.core.services import Services


def node_name(services: Services) -> str:
    return services.settings.node_name or socket.gethostname()


def member_id(services: Services, pid: int | None = None) -> str:
    """This process as other members see it: `host/pid`."""
    return f"{node_name(services)}/{pid or os.getpid()}"


def gone_from_this_host(services: Services, holder: str) -> bool:
    """A member of this host whose process is no more (killed, or the host restarted): its
    leases need not be waited out. Members of other hosts are never judged from here."""
    host, _, pid = holder.rpartition("/")
    if host != node_name(services) or not pid.isdigit() or int(pid) == os.getpid():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except OSError:  # alive, another user's
        return False
    return False


def now() -> datetime:
    """Leases are about real time between processes: never a test's fixed clock."""
    return datetime.now(UTC)
