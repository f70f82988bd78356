"""`airwave scan` takes the library lease that servers take: the command and a server's scanner
(or two commands) never scan one instance at once, and the one refused says who holds it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import media
from support import Backend, Server

ENV = {"AIRWAVE_ANALYZE_AUDIO": "false", "AIRWAVE_LEASE_TTL": "2"}


def _library(root: Path) -> Path:
    media.tag(
        media.encode(root / "Band" / "Record" / "01 One.flac", 0.5),
        title="One",
        artist="Band",
        album="Record",
    )
    return root


def _health(server: Server) -> dict:
    return httpx.get(server.url + "/healthz", timeout=5).json()


def _wait(condition: Callable[[], bool], what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    raise AssertionError(f"never: {what}")


def test_a_server_holding_the_library_refuses_the_command_until_it_stops(
    make_backend: Callable[[], Backend], tmp_path: Path
) -> None:
    root = _library(tmp_path / "lib")
    server = Server(make_backend(), ["--library", str(root)], dict(ENV)).start()
    try:
        _wait(lambda: _health(server)["library"]["scans"] >= 1, "the server scanned")
        holder = _health(server)["leaders"]["library"]
        assert holder.endswith(f"/{server.process.pid}")
        refused = server.cli("scan", "--library", str(root))
        assert refused.returncode == 1
        assert f"{holder} holds its lease" in " ".join(refused.stderr.split()), refused.stderr
        assert "tag reads" not in refused.stdout  # nothing was scanned
    finally:
        assert server.stop() == 0  # a graceful stop gives the lease up
    done = server.cli("scan", "--library", str(root))
    assert done.returncode == 0, done.stderr
    assert "1 unchanged" in done.stdout and "0 tag reads" in done.stdout


def test_a_scan_by_the_command_holds_off_servers_and_other_commands(
    make_backend: Callable[[], Backend], tmp_path: Path
) -> None:
    root = _library(tmp_path / "lib")
    backend = make_backend()
    watcher, errors = _watching(root, {**backend.env, **ENV})
    server: Server | None = None
    try:
        server = Server(backend, ["--library", str(root)], dict(ENV)).start()
        time.sleep(1.5)  # several of the server's lease rounds (lease_ttl 2 s)
        health = _health(server)
        assert health["leaders"]["library"].endswith(f"/{watcher.pid}")
        assert health["library"]["scans"] == 0  # the server did not scan meanwhile
        other = server.cli("scan", "--library", str(root))
        assert other.returncode == 1
        assert f"/{watcher.pid} holds its lease" in " ".join(other.stderr.split()), other.stderr
        watcher.send_signal(signal.SIGINT)  # the command ends and gives the lease up
        try:
            assert watcher.wait(30) == 130, "".join(errors)
        except subprocess.TimeoutExpired:
            watcher.send_signal(signal.SIGABRT)  # its threads' stacks to stderr (faulthandler)
            watcher.wait(10)
            time.sleep(0.5)
            raise AssertionError("the command did not end:\n" + "".join(errors)) from None
        _wait(
            lambda: _health(server)["library"]["scans"] >= 1,
            "the server scanned once the command was done",
        )
        assert _health(server)["leaders"]["library"].endswith(f"/{server.process.pid}")
    finally:
        if watcher.poll() is None:
            watcher.kill()
            watcher.wait()
        if server is not None:
            server.stop()


def _watching(root: Path, env: dict[str, str]) -> tuple[subprocess.Popen[str], list[str]]:
    """`airwave scan --watch` past its first scan (it holds the library's lease from then on),
    and its stderr as it comes."""
    watcher = subprocess.Popen(
        [sys.executable, "-m", "airwave", "scan", "--library", str(root), "--watch"],
        env={**os.environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    errors: list[str] = []
    assert watcher.stdout is not None and watcher.stderr is not None
    threading.Thread(target=lambda: errors.extend(watcher.stderr), daemon=True).start()
    first = watcher.stdout.readline()
    if "1 added" not in first:
        watcher.kill()
        watcher.wait()
        raise AssertionError(f"the first scan said: {first!r}{''.join(errors)}")
    return watcher, errors


def _scans_at_once(tool: Server, root: Path) -> None:
    done = tool.cli("scan", "--library", str(root))
    assert done.returncode == 0, done.stderr
    assert "1 unchanged" in done.stdout


def test_a_killed_command_does_not_hold_the_library(
    make_backend: Callable[[], Backend], tmp_path: Path
) -> None:
    """A command killed mid-scan (kill -9) leaves its lease behind; a process of the same host
    sees its holder is gone and takes the library at once, without waiting out the lease."""
    root = _library(tmp_path / "lib")
    backend = make_backend()
    long_lease = {**ENV, "AIRWAVE_LEASE_TTL": "600"}
    watcher, _ = _watching(root, {**backend.env, **long_lease})
    watcher.kill()
    watcher.wait()
    _scans_at_once(Server(backend, env=long_lease), root)


def test_sigterm_ends_a_watching_command_and_gives_the_library_up(
    make_backend: Callable[[], Backend], tmp_path: Path
) -> None:
    """A service manager stops `scan --watch` with SIGTERM: the command ends (143) and gives its
    lease up on the way out, so even a process of another host, which cannot tell that the
    holder is gone, scans at once instead of waiting out the lease."""
    root = _library(tmp_path / "lib")
    backend = make_backend()
    long_lease = {**ENV, "AIRWAVE_LEASE_TTL": "600"}
    watcher, _ = _watching(root, {**backend.env, **long_lease, "AIRWAVE_NODE_NAME": "here"})
    try:
        watcher.terminate()
        assert watcher.wait(30) == 143
    finally:
        if watcher.poll() is None:
            watcher.kill()
            watcher.wait()
    _scans_at_once(Server(backend, env={**long_lease, "AIRWAVE_NODE_NAME": "elsewhere"}), root)
