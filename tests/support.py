"""Test harness: real server processes on free ports, real databases, an API client."""

from __future__ import annotations

import os
import re
import secrets
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

POSTGRES_URL = os.environ.get("AIRWAVE_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test")
_LISTENING = re.compile(r"listening on (\S+)")


def postgres_available() -> bool:
    try:
        import psycopg

        with psycopg.connect(POSTGRES_URL.replace("+psycopg", ""), connect_timeout=2):
            return True
    except Exception:
        return False


class PostgresSchema:
    """A throw-away schema in the test database; the URL puts it first on the search path."""

    def __init__(self) -> None:
        import psycopg

        self.name = "aw_" + secrets.token_hex(6)
        self._plain = POSTGRES_URL.replace("+psycopg", "")
        with psycopg.connect(self._plain, autocommit=True) as conn:
            # pg_trgm lives in public for every test schema (a schema's own copy would die with it)
            where = conn.execute("SELECT extnamespace::regnamespace::text FROM pg_extension "
                                 "WHERE extname = 'pg_trgm'").fetchone()
            if where is None:
                conn.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm SCHEMA public")
            elif where[0] != "public":
                conn.execute("ALTER EXTENSION pg_trgm SET SCHEMA public")
            conn.execute(f'CREATE SCHEMA "{self.name}"')
        sep = "&" if "?" in POSTGRES_URL else "?"
        self.url = f"{POSTGRES_URL}{sep}options=-csearch_path%3D{self.name}%2Cpublic"

    def execute(self, sql: str) -> None:
        import psycopg

        with psycopg.connect(self._plain, autocommit=True) as conn:
            conn.execute(f'SET search_path TO "{self.name}", public')
            conn.execute(sql)

    def drop(self) -> None:
        import psycopg

        with psycopg.connect(self._plain, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{self.name}" CASCADE')


@dataclass
class Backend:
    """Where an instance keeps its data: SQLite in the data dir, or a PostgreSQL schema."""

    kind: str
    data_dir: Path
    pg: PostgresSchema | None = None

    @property
    def env(self) -> dict[str, str]:
        env = {"AIRWAVE_DATA_DIR": str(self.data_dir)}
        if self.pg is not None:
            env["AIRWAVE_DATABASE_URL"] = self.pg.url
        return env

    def execute(self, sql: str) -> None:
        """Run SQL on the instance's database from outside the server."""
        if self.pg is not None:
            self.pg.execute(sql)
        else:
            import sqlite3

            with sqlite3.connect(self.data_dir / "airwave.db") as conn:
                conn.execute(sql)


@dataclass
class Server:
    """`airwave serve` as a child process, on a free port chosen by the OS."""

    backend: Backend
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    url: str = ""
    process: subprocess.Popen[str] | None = None
    output: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    fd_limit: int | None = None  # RLIMIT_NOFILE (soft and hard) of the server process

    def start(self, timeout: float = 30) -> "Server":
        env = {**os.environ, **self.backend.env, "AIRWAVE_LOG_FORMAT": "json", **self.env}
        cmd = [sys.executable, "-m", "airwave", "serve", "--port", "0", *self.args]
        self.process = subprocess.Popen(
            cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1,
            preexec_fn=None if self.fd_limit is None else self._limit_fds,
        )
        threading.Thread(target=self._drain, args=(self.process.stderr, self.errors), daemon=True).start()
        deadline = time.monotonic() + timeout
        assert self.process.stdout is not None
        while time.monotonic() < deadline:
            line = self.process.stdout.readline()
            if not line:
                raise RuntimeError(f"server exited early: {''.join(self.errors)[-3000:]}")
            self.output.append(line)
            match = _LISTENING.search(line)
            if match:
                self.url = match.group(1).rstrip("/")
                threading.Thread(target=self._drain, args=(self.process.stdout, self.output), daemon=True).start()
                self._wait_healthy(deadline)
                return self
        raise RuntimeError("server did not announce its address in time")

    def _limit_fds(self) -> None:
        import resource

        resource.setrlimit(resource.RLIMIT_NOFILE, (self.fd_limit, self.fd_limit))

    @staticmethod
    def _drain(stream: Any, sink: list[str]) -> None:
        for line in stream:
            sink.append(line)

    def _wait_healthy(self, deadline: float) -> None:
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{self.url}/healthz", verify=False, timeout=2).status_code == 200:
                    return
            except httpx.TransportError:
                time.sleep(0.05)
        raise RuntimeError("server never became healthy")

    def wait_for_log(self, predicate: Any, timeout: float = 10) -> bool:
        """True once a line of the server's stderr satisfies predicate (lines arrive asynchronously)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(predicate(line) for line in list(self.errors)):
                return True
            time.sleep(0.05)
        return False

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 15) -> int:
        assert self.process is not None
        if self.process.poll() is None:
            self.process.send_signal(sig)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.process.returncode

    def client(self, csrf: str | None = "lol", **kwargs: Any) -> "Api":
        return Api(self.url, csrf=csrf, **kwargs)

    def cli(self, *args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
        """Run another `airwave` command against this instance's data."""
        env = {**os.environ, **self.backend.env, **self.env}
        return subprocess.run(
            [sys.executable, "-m", "airwave", *args], env=env, input=input, capture_output=True, text=True, timeout=60
        )


class Api:
    """A client that speaks the protocol the way third-party clients do."""

    def __init__(self, base_url: str, csrf: str | None = "lol", **kwargs: Any) -> None:
        kwargs.setdefault("timeout", 30)
        self.http = httpx.Client(base_url=base_url, **kwargs)
        self.csrf = csrf
        self.token: str | None = None
        if csrf is not None:
            self.http.cookies.set("csrftoken", csrf)

    def call(self, path: str, body: Any = None, *, token: str | None = None, headers: dict[str, str] | None = None,
             **kwargs: Any) -> httpx.Response:
        hdrs = {"Content-Type": "application/json"}
        if self.csrf is not None:
            hdrs["X-CsrfToken"] = self.csrf
        auth = token if token is not None else self.token
        if auth:
            hdrs["X-AuthToken"] = auth
        hdrs.update(headers or {})
        if "content" not in kwargs:
            kwargs["json"] = {} if body is None else body
        return self.http.post(f"/api/{path}", headers=hdrs, **kwargs)

    def ok(self, path: str, body: Any = None, **kwargs: Any) -> Any:
        response = self.call(path, body, **kwargs)
        assert response.status_code == 200, response.text
        return response.json()

    def login(self, username: str, password: str, **extra: Any) -> dict[str, Any]:
        data = self.ok("v1/auth/login", {"username": username, "password": password, **extra})
        self.token = data["authToken"]
        return data

    def register(self, username: str, password: str = "correct horse battery", **extra: Any) -> dict[str, Any]:
        data = self.ok("v1/listener/register", {"username": username, "password": password, **extra})
        self.token = data["authToken"]
        return data


def assert_error(response: httpx.Response, status: int, error: str) -> dict[str, Any]:
    """The response is exactly the §4 envelope for `error` with HTTP `status`."""
    from airwave.errors import ErrorCode

    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert set(body) == {"errorCode", "errorString", "message"}, body
    assert body["errorString"] == error
    assert body["errorCode"] == ErrorCode[error].code
    assert ErrorCode[error].http_status == status or error == "INVALID_REQUEST"
    assert isinstance(body["message"], str) and body["message"]
    return body


def unique(prefix: str = "user") -> str:
    return f"{prefix}{secrets.token_hex(4)}"


def wait_indexed(server: Server, timeout: float = 120) -> None:
    """Wait until the library is scanned and its similarity space (neighbours, sound profiles) is built."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = httpx.get(server.url + "/healthz").json().get("library", {})
        if status.get("indexed", 0) >= 1 and status.get("state") == "idle":
            return
        time.sleep(0.2)
    raise AssertionError("library never finished indexing")


def artists(api: Api) -> dict[str, dict[str, Any]]:
    """Artists of the library, reached the way a client browses: genre categories, genres, sample tracks."""
    found: dict[str, dict[str, Any]] = {}
    for category in api.ok("v1/music/genrecategories", {})["categories"]:
        for station in api.ok("v1/music/genres", {"token": category["token"]})["stations"]:
            for track in station["sampleTracks"]:
                found[track["artistName"]] = {"musicId": track["artistMusicId"], "name": track["artistName"]}
    return found
