"""Roles held once per instance (housekeeping, the library) pass to another process when their
holder is killed; a host whose keys or library folders differ from the running ones' refuses
to start; SIGTERM drains (/healthz 503 while serving) before the graceful stop."""

from __future__ import annotations

import os
import shutil
import signal
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from scale_support import health, pids_answering, wait_for
from support import Backend, PostgresSchema, Server, postgres_available, wait_indexed
from support.cluster import KEY_FILES


@pytest.mark.sqlite_only
def test_a_killed_leader_is_replaced_within_the_lease(
    start_server: Callable[..., Server], small_demo_library: Path
) -> None:
    ttl = 2.0
    server = start_server(
        "--workers",
        "2",
        "--library",
        str(small_demo_library),
        env={"AIRWAVE_LEASE_TTL": str(ttl), "AIRWAVE_ANALYZE_AUDIO": "false"},
    )
    wait_indexed(server)
    leaders = health(server.url)["leaders"]
    assert leaders["housekeeping"] and leaders["library"]
    victim = leaders["library"]
    os.kill(int(victim.rsplit("/", 1)[1]), signal.SIGKILL)
    killed_at = time.monotonic()

    def taken_over() -> dict[str, str] | None:
        now = health(server.url)["leaders"]
        held = [now[role] for role, holder in leaders.items() if holder == victim]
        return now if all(h is not None and h != victim for h in held) else None

    after = wait_for(taken_over, timeout=4 * ttl + 5, what="another process holding the roles")
    assert time.monotonic() - killed_at < 4 * ttl + 5

    # the supervisor replaces the killed worker (a new process: its imports take a while on a
    # busy machine)
    def two_workers() -> set[int] | None:
        pids = pids_answering(server.url)
        return pids if len(pids) == 2 else None

    alive = wait_for(two_workers, timeout=30, what="a second worker answering")
    assert int(after["library"].rsplit("/", 1)[1]) in alive
    assert int(victim.rsplit("/", 1)[1]) not in alive
    wait_indexed(server)  # the new holder scanned (resuming what was left) and published it


@pytest.mark.skipif(not postgres_available(), reason="no PostgreSQL")
def test_a_host_with_other_keys_or_folders_refuses_to_start(
    tmp_path: Path, small_demo_library: Path
) -> None:
    pg = PostgresSchema()
    running: list[Server] = []
    try:
        first = Server(Backend("postgresql", tmp_path / "a", pg), env={"AIRWAVE_NODE_NAME": "a"})
        running.append(first.start())
        stranger = Server(Backend("postgresql", tmp_path / "b", pg), env={"AIRWAVE_NODE_NAME": "b"})
        with pytest.raises(RuntimeError, match="url-signing-key differs from the one a/"):
            stranger.start()
        assert stranger.process is not None and stranger.process.returncode == 1
        for name in KEY_FILES:  # the operator copies the keys as the message says
            shutil.copy(tmp_path / "a" / name, tmp_path / "b" / name)
        elsewhere = Server(
            Backend("postgresql", tmp_path / "b", pg),
            ["--library", str(small_demo_library)],
            env={"AIRWAVE_NODE_NAME": "b", "AIRWAVE_ANALYZE_AUDIO": "false"},
        )
        running.append(elsewhere.start())
        assert health(elsewhere.url)["host"] == "b"
        other_music = tmp_path / "music"
        other_music.mkdir()
        third = Server(
            Backend("postgresql", tmp_path / "a", pg),
            ["--library", str(other_music)],
            env={"AIRWAVE_NODE_NAME": "c"},
        )
        with pytest.raises(RuntimeError, match="library-folders differs"):
            third.start()
    finally:
        for server in running:
            server.stop()
        pg.drop()


@pytest.mark.sqlite_only
def test_sigterm_drains_before_the_stop(start_server: Callable[..., Server]) -> None:
    """With shutdown_drain, SIGTERM first turns /healthz to 503 on every worker while all else
    is served (a balancer's check takes the host out), then the graceful stop follows."""
    drain = 5.0  # long enough for the checks below on a loaded machine; the stop waits it out
    server = start_server("--workers", "2", env={"AIRWAVE_SHUTDOWN_DRAIN": str(drain)})
    assert server.process is not None
    wait_for(lambda: len(pids_answering(server.url)) == 2, 20, "both workers answering")
    asked = time.monotonic()
    server.process.terminate()

    def health_status() -> int:
        return httpx.get(f"{server.url}/healthz", timeout=2).status_code

    wait_for(lambda: health_status() == 503, drain, "/healthz answering 503", step=0.02)
    answers = [httpx.get(f"{server.url}/healthz", timeout=2) for _ in range(16)]
    assert {a.status_code for a in answers} == {503}
    assert {a.json()["status"] for a in answers} == {"draining"}
    assert len({a.json()["pid"] for a in answers}) == 2  # both workers drain
    assert httpx.get(f"{server.url}/livez", timeout=2).status_code == 200
    assert httpx.get(f"{server.url}/openapi.json", timeout=2).status_code == 200
    assert server.process.wait(drain + 15) == 0
    assert time.monotonic() - asked >= drain


@pytest.mark.sqlite_only
def test_sigint_stops_without_the_drain(start_server: Callable[..., Server]) -> None:
    server = start_server(env={"AIRWAVE_SHUTDOWN_DRAIN": "60"})
    assert server.process is not None
    server.process.send_signal(signal.SIGINT)
    rc = server.process.wait(15)
    if rc != 0:
        time.sleep(0.5)  # its last lines (faulthandler's stacks) read before they are shown
    assert rc == 0, "".join(server.errors)


@pytest.mark.sqlite_only
def test_a_sigint_after_a_sigterm_lets_the_graceful_stop_finish(
    start_server: Callable[..., Server],
) -> None:
    """`pkill -INT` reaches a worker after its supervisor's SIGTERM at times: that SIGINT is no
    second Ctrl-C, and the app's own shutdown still runs (uvicorn otherwise stops at once and
    logs the lifespan it cancelled as an error)."""
    server = start_server()
    assert server.process is not None
    server.process.send_signal(signal.SIGTERM)
    time.sleep(0.03)  # handled: the stop is under way (it waits 0.1 s for connections first)
    server.process.send_signal(signal.SIGINT)
    assert server.process.wait(15) == 0
    time.sleep(0.3)  # its last lines read
    lines = "".join(server.log_lines())
    assert "Waiting for application shutdown" in lines
    assert "Exception in 'lifespan' protocol" not in lines
    assert '"level":"error"' not in lines
