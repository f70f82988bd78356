"""Several servers as hosts of one instance: the key files each host copies from the first, and
HAProxy in front of them. Shared by tests/scale and bench/scale.py."""

from __future__ import annotations

import csv
import io
import shutil
import socket
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import httpx

KEY_FILES = ("url-signing-keys.json", "device-cookie-key", "app-password-key")
HAPROXY = shutil.which("haproxy") or "/usr/sbin/haproxy"


def haproxy_available() -> bool:
    return Path(HAPROXY).exists()


def free_port() -> int:
    """A TCP port free on the loopback address now (for a server that must keep its port)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def copy_keys(first: Path, other: Path) -> None:
    """Give a new host's data dir the first host's key files, as docs/scaling.md asks."""
    other.mkdir(mode=0o700, parents=True, exist_ok=True)
    for name in KEY_FILES:
        shutil.copy(first / name, other / name)


@dataclass
class Balancer:
    """HAProxy on a free port, round robin over `servers` (name -> base URL), checking /healthz.

    `check`: the health check's timing; `backend`, `defaults`, `tuning`: extra lines for those
    sections. Each response names the server that answered in `X-Airwave-Server`.
    """

    config: Path
    servers: dict[str, str]
    check: str = "inter 1s"
    defaults: Sequence[str] = ()
    backend: Sequence[str] = ()
    tuning: Sequence[str] = ()
    stats: Path | None = None  # a stats socket, for `states()`
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def write(self) -> Path:
        lines = [
            "global",
            "  maxconn 4096",
            *([f"  stats socket {self.stats} mode 600 level admin"] if self.stats else []),
            *(f"  {line}" for line in self.tuning),
            "defaults",
            "  mode http",
            "  timeout connect 2s",
            "  timeout client 60s",
            "  timeout server 60s",
            "  option http-keep-alive",
            *(f"  {line}" for line in self.defaults),
            "frontend airwave",
            f"  bind 127.0.0.1:{self.port}",
            "  default_backend servers",
            "backend servers",
            "  balance roundrobin",
            "  option httpchk GET /healthz",
            "  http-check expect status 200",
            f"  default-server check {self.check}",
            "  http-response set-header X-Airwave-Server %[srv_name]",
            *(f"  {line}" for line in self.backend),
        ]
        for name, url in self.servers.items():
            lines.append(f"  server {name} {url.removeprefix('http://').rstrip('/')}")
        self.config.write_text("\n".join(lines) + "\n")
        return self.config

    def start(self, timeout: float = 10) -> Balancer:
        """Start HAProxy and wait until it answers /healthz from some server."""
        self.write()
        checked = subprocess.run(
            [HAPROXY, "-c", "-q", "-f", str(self.config)], capture_output=True, text=True
        )
        if checked.returncode != 0:
            raise RuntimeError(f"haproxy refuses {self.config}: {checked.stderr}{checked.stdout}")
        self.process = subprocess.Popen(
            [HAPROXY, "-f", str(self.config), "-db"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if httpx.get(self.url + "/healthz", timeout=1).status_code == 200:
                    return self
            except httpx.TransportError:
                pass
            time.sleep(0.05)
        self.stop()
        raise RuntimeError("haproxy never answered /healthz")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(10)

    def command(self, line: str) -> str:
        """One command on HAProxy's stats socket (its management guide), and the answer."""
        assert self.stats is not None, "a Balancer without a stats socket"
        with socket.socket(socket.AF_UNIX) as conn:
            conn.connect(str(self.stats))
            conn.sendall(line.encode() + b"\n")
            data = b""
            while chunk := conn.recv(65536):
                data += chunk
        return data.decode()

    def states(self) -> dict[str, str]:
        """Each server's state as HAProxy's health checks see it now: UP, DOWN, ..."""
        rows = list(csv.reader(io.StringIO(self.command("show stat").removeprefix("# "))))
        head = rows[0]
        found = {}
        for row in rows[1:]:
            entry = dict(zip(head, row, strict=False))
            if entry.get("pxname") == "servers" and entry.get("svname") in self.servers:
                found[entry["svname"]] = entry["status"].split()[0]
        return found
