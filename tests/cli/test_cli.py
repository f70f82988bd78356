"""The `airwave` command as an operator runs it: user management, docs, settings."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support import Backend, Server, assert_error, zygote

# The wire contract: its storage paths run on PostgreSQL in the storage tests.
pytestmark = pytest.mark.sqlite_only


def airwave(
    *args: str, env: dict[str, str] | None = None, input: str | None = None
) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, **(env or {})}
    done = zygote.run(list(args), full_env, input=input, timeout=60)
    if done is not None:
        return done
    return subprocess.run(
        [sys.executable, "-m", "airwave", *args],
        env=full_env,
        input=input,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.fixture(scope="module")
def instance(start_server) -> Server:
    return start_server()


def test_user_lifecycle_through_the_cli(instance: Server) -> None:
    add = instance.cli(
        "user", "add", "alice", "--tier", "plus", "--password-stdin", input="alicepw1\n"
    )
    assert add.returncode == 0, add.stderr
    assert "alice" in add.stdout and "plus" in add.stdout
    api = instance.client()
    login = api.login("alice", "alicepw1")
    assert "replaysEnabled" in login["config"]["flags"] and login["config"]["maxStations"] == 250

    listed = instance.cli("user", "list")
    assert listed.returncode == 0 and "alice" in listed.stdout and "plus" in listed.stdout

    duplicate = instance.cli("user", "add", "ALICE", "--password-stdin", input="other\n")
    assert duplicate.returncode == 1 and "taken" in duplicate.stderr

    passwd = instance.cli("user", "passwd", "alice", "--password-stdin", input="newsecret\n")
    assert passwd.returncode == 0, passwd.stderr
    assert_error(api.call("v1/station/getStations"), 401, "AUTH_INVALID_TOKEN")  # sessions ended
    assert_error(
        instance.client().call("v1/auth/login", {"username": "alice", "password": "alicepw1"}),
        401,
        "AUTH_INVALID_USERNAME_PASSWORD",
    )
    api.login("alice", "newsecret")

    assert instance.cli("user", "tier", "alice", "premium").returncode == 0
    assert instance.client().login("alice", "newsecret")["config"]["flags"].count("onDemand") == 1
    bad_tier = instance.cli("user", "tier", "alice", "gold")
    assert bad_tier.returncode == 1 and "tier" in bad_tier.stderr

    delete = instance.cli("user", "delete", "alice", "--yes")
    assert delete.returncode == 0, delete.stderr
    assert_error(api.call("v1/station/getStations"), 401, "AUTH_INVALID_TOKEN")
    assert_error(
        instance.client().call("v1/auth/login", {"username": "alice", "password": "newsecret"}),
        401,
        "AUTH_INVALID_USERNAME_PASSWORD",
    )
    assert "alice" not in instance.cli("user", "list").stdout


def test_user_list_prints_whole_names_at_any_terminal_width(instance: Server) -> None:
    name = "a-rather-long-username-for-a-narrow-terminal@example.org"
    added = instance.cli("user", "add", name, "--password-stdin", input="longpass1\n")
    assert added.returncode == 0, added.stderr
    env = {**os.environ, **instance.backend.env, "COLUMNS": "80"}
    env.pop("FORCE_COLOR", None)
    command = [sys.executable, "-m", "airwave", "user", "list"]
    table = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)
    assert table.returncode == 0 and name in table.stdout, table.stdout
    listed = subprocess.run(
        [*command, "--format", "json"], env=env, capture_output=True, text=True, timeout=60
    )
    assert listed.returncode == 0, listed.stderr
    row = next(r for r in json.loads(listed.stdout) if r["username"] == name)
    assert row["tier"] == "free" and row["disabled"] is False and row["lastLoginAt"] is None
    bad = instance.cli("user", "list", "--format", "xml")
    assert bad.returncode == 2 and "--format" in bad.stderr


def test_admin_flag_and_missing_users(instance: Server) -> None:
    assert (
        instance.cli(
            "user", "add", "root1", "--admin", "--password-stdin", input="rootpass\n"
        ).returncode
        == 0
    )
    assert instance.client().login("root1", "rootpass")["isAdmin"] is True
    for cmd in (
        ("passwd", "ghost", "--password-stdin"),
        ("disable", "ghost"),
        ("delete", "ghost", "--yes"),
    ):
        result = instance.cli("user", *cmd, input="whatever\n")
        assert result.returncode == 1 and "ghost" in result.stderr


def test_empty_password_from_stdin_is_refused(instance: Server) -> None:
    result = instance.cli("user", "add", "nopw", "--password-stdin", input="\n")
    assert result.returncode == 1 and "empty" in result.stderr


def test_password_prompt_asks_twice(instance: Server) -> None:
    result = instance.cli("user", "add", "prompted", input="promptpw\npromptpw\n")
    assert result.returncode == 0, result.stderr
    instance.client().login("prompted", "promptpw")


def test_delete_asks_for_confirmation(instance: Server) -> None:
    assert (
        instance.cli("user", "add", "keepme", "--password-stdin", input="keepmepw\n").returncode
        == 0
    )
    refused = instance.cli("user", "delete", "keepme", input="n\n")
    assert refused.returncode == 1
    instance.client().login("keepme", "keepmepw")


def test_data_dir_flag_keeps_instances_apart(tmp_path: Path) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    env = {"AIRWAVE_DATABASE_URL": ""}
    env = {k: v for k, v in os.environ.items() if k != "AIRWAVE_DATABASE_URL"}
    assert (
        airwave(
            "user", "add", "solo", "--data-dir", str(one), "--password-stdin", input="solopass\n"
        ).returncode
        == 0
    )
    assert "solo" in airwave("user", "list", "--data-dir", str(one)).stdout
    assert "solo" not in airwave("user", "list", "--data-dir", str(two)).stdout
    # AIRWAVE_DATA_DIR is the default when --data-dir is absent
    assert "solo" in airwave("user", "list", env={"AIRWAVE_DATA_DIR": str(one)}).stdout
    assert (one / "airwave.db").exists() and (two / "airwave.db").exists()
    del env


def test_docs_check_detects_a_stale_reference(tmp_path: Path) -> None:
    target = tmp_path / "api.md"
    assert airwave("docs", "--out", str(target)).returncode == 0
    assert airwave("docs", "--out", str(target), "--check").returncode == 0
    target.write_text(target.read_text() + "\nedited by hand\n")
    stale = airwave("docs", "--out", str(target), "--check")
    assert stale.returncode == 1 and "out of date" in stale.stderr


def test_invalid_settings_are_reported(tmp_path: Path) -> None:
    result = airwave(
        "user", "list", "--data-dir", str(tmp_path), env={"AIRWAVE_DEFAULT_TIER": "gold"}
    )
    assert result.returncode == 2 and "default_tier" in result.stderr


def test_serve_demo_prints_url_and_credentials_and_is_repeatable(
    make_backend, small_demo_library: Path
) -> None:
    backend: Backend = make_backend()
    shutil.copytree(
        small_demo_library, backend.data_dir / "demo-library"
    )  # generation itself: test_demo.py
    for _ in range(2):  # a second start on the same data keeps working
        server = Server(backend, ["--demo"]).start()
        try:
            text = "".join(server.output)
            assert "listening on http://127.0.0.1:" in text and "'demo'" in text
            assert server.client().login("demo", "demo")["username"] == "demo"
        finally:
            assert server.stop() == 0


def test_imports_load_with_the_collector_paused_and_it_runs_after() -> None:
    """The command's modules load without the cyclic collector (it ran some 300 times during a
    server's imports and freed nothing); once they are loaded it runs again, and what they made
    is out of its sight, so a long scan or a server does not traverse it again."""
    code = (
        "import gc\n"
        "import airwave.cli\n"
        "from airwave.cli.imports import loading\n"
        "print(gc.isenabled(), gc.get_freeze_count() > 0)\n"
        "frozen = gc.get_freeze_count()\n"
        "with loading():\n"
        "    inside = gc.isenabled()\n"
        "    with loading():\n"
        "        nested = gc.isenabled()\n"
        "    from airwave.core import services\n"
        "    after_nested = gc.isenabled()\n"
        "print(inside, nested, after_nested, gc.isenabled(), gc.get_freeze_count() > frozen)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.split() == ["True", "True", "False", "False", "False", "True", "True"]
