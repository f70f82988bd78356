"""One harness for `airwave serve` as a child process on a free port: tests and bench/ share it."""

from __future__ import annotations

import contextlib
import os
import re
import resource
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import httpx

from support import zygote
from support.api import Api
from support.databases import Backend

_LISTENING = re.compile(r"listening on (\S+)")
_ADMIN_LOCK = threading.Lock()  # CliRunner swaps the process's stdio and environment


@dataclass
class Server:
    """`airwave serve` as a child process, on a free port chosen by the OS.

    Tests keep the server's stderr in `errors`; benchmarks pass `log_file` to have it written
    to a file (the JSON log lines as production writes them), `command` to run their own
    entry point, and `clean_env` so the caller's AIRWAVE_* settings do not leak in.
    """

    backend: Backend
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    url: str = ""
    process: subprocess.Popen[str] | None = None
    output: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    log_file: Path | None = None  # stderr goes here instead of into `errors`
    command: Sequence[str] | None = (
        None  # instead of `python -m airwave serve --port 0`; args follow
    )
    clean_env: bool = False  # drop the caller's AIRWAVE_* variables
    fd_limit: int | None = None  # RLIMIT_NOFILE (soft and hard) of the server process

    def start(self, timeout: float = 30) -> Server:
        """Start the child, wait for its address and a healthy /healthz; on failure, stop it."""
        inherited = {
            k: v for k, v in os.environ.items() if not (self.clean_env and k.startswith("AIRWAVE_"))
        }
        # one server process unless a test asks for more (`serve --workers N`)
        base = {"AIRWAVE_LOG_FORMAT": "json", "AIRWAVE_WORKERS": "1"}
        env = {**inherited, **self.backend.env, **base, **self.env}
        command = self.command or [sys.executable, "-m", "airwave", "serve", "--port", "0"]
        drainer: threading.Thread | None = None
        if self.log_file is not None:
            with self.log_file.open("wb") as stderr:
                self.process = self._zygote(env, stderr) or subprocess.Popen(
                    [*command, *self.args],
                    env=env,
                    stdout=subprocess.PIPE,
                    stderr=stderr,
                    text=True,
                    bufsize=1,
                    preexec_fn=self._limit_fds if self.fd_limit else None,
                )
        else:
            self.process = self._zygote(env, None) or subprocess.Popen(
                [*command, *self.args],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                bufsize=1,
                preexec_fn=self._limit_fds if self.fd_limit else None,
            )
            drainer = threading.Thread(
                target=self._drain, args=(self.process.stderr, self.errors), daemon=True
            )
            drainer.start()
        announced = threading.Event()
        threading.Thread(
            target=self._watch_stdout, args=(self.process.stdout, announced), daemon=True
        ).start()
        deadline = time.monotonic() + timeout
        try:
            if not announced.wait(timeout) or not self.url:
                if self.process.poll() is not None or announced.is_set():
                    if drainer is not None:  # its last lines, which say why, are read first
                        with contextlib.suppress(subprocess.TimeoutExpired):
                            self.process.wait(5)
                        drainer.join(5)
                    raise RuntimeError(f"server exited early: {self.log_tail()}")
                raise RuntimeError(
                    f"server did not announce its address in time: {self.log_tail()}"
                )
            self._wait_healthy(deadline)
        except BaseException:  # startup failed or Ctrl-C: the caller never gets to stop this child
            self.stop()
            raise
        return self

    def _zygote(self, env: dict[str, str], stderr: IO[bytes] | None) -> Any:
        """The server forked from the test process's zygote (support.zygote), when the suite
        runs one and the command is `airwave serve` itself; else None (a new interpreter)."""
        if self.command is not None:
            return None
        args = ["serve", "--port", "0", *self.args]
        return zygote.popen(args, env, stderr_file=stderr, nofile=self.fd_limit)

    def _watch_stdout(self, stream: IO[str], announced: threading.Event) -> None:
        """Keep stdout drained; note the address from the 'listening on' line (or EOF)."""
        for line in stream:
            self.output.append(line)
            if not announced.is_set() and (match := _LISTENING.search(line)):
                self.url = match.group(1).rstrip("/")
                announced.set()
        announced.set()

    def _limit_fds(self) -> None:
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
        raise RuntimeError(f"server never became healthy: {self.log_tail()}")

    def log_lines(self) -> list[str]:
        """The server's stderr so far, from `errors` or the log file."""
        if self.log_file is None:
            return list(self.errors)
        try:
            return self.log_file.read_text(errors="replace").splitlines(keepends=True)
        except OSError:
            return []

    def log_tail(self, lines: int = 25) -> str:
        """The last lines of the server's stderr, for error messages."""
        return "".join(self.log_lines()[-lines:]).rstrip("\n") or "(no log)"

    def wait_for_log(self, predicate: Any, timeout: float = 10) -> bool:
        """True once a line of the server's stderr satisfies predicate (lines come
        asynchronously)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(predicate(line) for line in self.log_lines()):
                return True
            time.sleep(0.05)
        return False

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 15) -> int:
        """Signal the child and wait for it; kill it if it outlives `timeout`. Its exit code."""
        assert self.process is not None
        if self.process.poll() is None:
            self.process.send_signal(sig)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.process.returncode

    def admin(self, *args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
        """An operator's `airwave` command against this instance, run inside the test process:
        for setting up (a listener's tier, an account), where a new interpreter per command would
        only cost CPU. Tests about the command itself use `cli`."""
        from typer.testing import CliRunner

        from airwave.cli import app

        env = {**self.backend.env, **self.env}
        with _ADMIN_LOCK:
            result = CliRunner().invoke(
                app, list(args), input=input, env=env, catch_exceptions=False
            )
        return subprocess.CompletedProcess(
            ["airwave", *args], result.exit_code, result.stdout, result.stderr
        )

    def client(self, csrf: str | None = "lol", **kwargs: Any) -> Api:
        return Api(self.url, csrf=csrf, **kwargs)

    def cli(self, *args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
        """Run another `airwave` command against this instance's data."""
        env = {**os.environ, **self.backend.env, **self.env}
        done = zygote.run(list(args), env, input=input, timeout=60)
        if done is not None:
            return done
        return subprocess.run(
            [sys.executable, "-m", "airwave", *args],
            check=False,
            env=env,
            input=input,
            capture_output=True,
            text=True,
            timeout=60,
        )


def wait_indexed(server: Server, timeout: float = 120) -> None:
    """Wait until the library is scanned and its similarity space (neighbours, profiles) built."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = httpx.get(server.url + "/healthz").json().get("library", {})
        if status.get("indexed", 0) >= 1 and status.get("state") == "idle":
            return
        time.sleep(0.2)
    raise AssertionError("library never finished indexing")
