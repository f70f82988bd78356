"""`python -m airwave ...` for the test suite without paying for a new interpreter each time.

A test run starts a few hundred servers and commands, and each new interpreter spends about a
CPU-second importing the same modules before it does anything of its own. A zygote is one
interpreter per test process that has imported Airwave's modules (and nothing else of the
suite's) and waits on a Unix socket; each request makes it fork a child that takes the caller's
argv, environment, working directory and standard streams, then runs `python -m airwave` as a
new interpreter would: the same `__main__`, the same exit handlers, the same exit code. The
caller gets a `Process` that behaves as the `subprocess.Popen` it replaces (pid, poll, wait,
send_signal, kill, stdout, stderr, returncode).

The child is a real process of its own: tests still talk to it over its socket, signal it and
read its exit status. What it shares with its siblings is only what an import leaves behind.
Run as a script, this module is the zygote itself.
"""

from __future__ import annotations

import array
import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO, Any

_HEADER_LIMIT = 1 << 20
PRELOAD = (
    "airwave.cli",
    "airwave.server",
    "airwave.api.app",
    "airwave.library.scanner",
    "av",
    "numpy",
    "mutagen",
    # the migrations, which a command on a new data dir runs (servers start from a template)
    "alembic.command",
    "alembic.operations",
)


# ------------------------------------------------------------------------------ the zygote side


def _serve(path: str) -> dict[str, Any] | None:
    """The zygote's loop: fork a child per request, tell each requester its child's pid and
    then its exit status. Returns in a child (its request), or None when the caller went away."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    print("ready", flush=True)
    waiting: dict[int, socket.socket] = {}  # child pid -> its requester's connection
    while True:
        readable, _, _ = select.select([listener, wake_r, sys.stdin.fileno()], [], [])
        if sys.stdin.fileno() in readable and not os.read(sys.stdin.fileno(), 1):
            return None  # the test process that started this zygote has gone
        if wake_r in readable:
            os.read(wake_r, 4096)
        while waiting:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            conn = waiting.pop(pid, None)
            if conn is not None:
                try:
                    conn.sendall(json.dumps({"exit": os.waitstatus_to_exitcode(status)}).encode())
                except OSError:
                    pass
                conn.close()
        if listener in readable:
            conn, _ = listener.accept()
            request = _receive(conn)
            if request is None:
                conn.close()
                continue
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:
                signal.set_wakeup_fd(-1)
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                for sock in (listener, conn, *waiting.values()):
                    sock.close()
                os.close(wake_r)
                os.close(wake_w)
                return request
            for fd in request["fds"]:
                os.close(fd)
            conn.sendall(json.dumps({"pid": pid}).encode() + b"\n")
            waiting[pid] = conn


def _receive(conn: socket.socket) -> dict[str, Any] | None:
    """A request: a JSON header (argv, env, cwd, nofile) with stdin, stdout and stderr attached."""
    fds = array.array("i")
    data, ancillary, _, _ = conn.recvmsg(_HEADER_LIMIT, socket.CMSG_LEN(3 * fds.itemsize))
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(payload[: len(payload) - (len(payload) % fds.itemsize)])
    if len(fds) != 3 or not data:
        for fd in fds:
            os.close(fd)
        return None
    request = json.loads(data)
    request["fds"] = list(fds)
    return request


def _become(request: dict[str, Any]) -> None:
    """In the child: take the requester's streams, environment and place, then run
    `python -m airwave` in this interpreter (it exits the process)."""
    import resource
    import runpy

    for target, fd in enumerate(request["fds"]):
        os.dup2(fd, target)
        os.close(fd)
    if request.get("nofile"):
        resource.setrlimit(resource.RLIMIT_NOFILE, (request["nofile"], request["nofile"]))
    os.environ.clear()
    os.environ.update(request["env"])
    time.tzset()
    os.chdir(request["cwd"])
    sys.path[0] = request["cwd"]  # as `python -m` puts the working directory first
    sys.argv = ["airwave", *request["args"]]
    runpy.run_module("airwave", run_name="__main__", alter_sys=True)


def _zygote_main(path: str) -> None:
    del sys.path[0]  # this script's folder: the suite's helpers are not Airwave's
    import importlib

    # airwave.cli first: its exit handler must run last, as under `python -m airwave`; then what
    # every server and command imports, the library's readers and the sound analysis
    for name in PRELOAD:
        importlib.import_module(name)
    # and every command's module (the command line itself loads only the one it runs)
    for module, _attribute, _group in sys.modules["airwave.cli"].COMMANDS.values():
        importlib.import_module(f"airwave.cli.{module}")
    request = _serve(path)
    if request is None:  # the caller is gone: so is this zygote's folder (socket and log)
        import shutil

        shutil.rmtree(os.path.dirname(path), ignore_errors=True)
        return
    _become(request)


# ------------------------------------------------------------------------------ the caller side


class Process:
    """A child of the zygote, as much of `subprocess.Popen` as the suite uses."""

    def __init__(self, pid: int, conn: socket.socket, args: list[str]) -> None:
        self.pid, self.args = pid, args
        self.returncode: int | None = None
        self.stdin: IO[Any] | None = None
        self.stdout: IO[Any] | None = None
        self.stderr: IO[Any] | None = None
        self._conn = conn
        self._lock = threading.Lock()

    def _collect(self, timeout: float | None) -> None:
        with self._lock:
            if self.returncode is not None:
                return
            ready, _, _ = select.select([self._conn], [], [], timeout)
            if not ready:
                return
            data = b""
            while chunk := self._conn.recv(4096):
                data += chunk
            self._conn.close()
            # no status: the zygote itself died; say so as a kill would
            self.returncode = json.loads(data)["exit"] if data else -signal.SIGKILL

    def poll(self) -> int | None:
        self._collect(0)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        self._collect(timeout)
        if self.returncode is None:
            raise subprocess.TimeoutExpired(self.args, timeout or 0)
        return self.returncode

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:
            try:
                os.kill(self.pid, sig)
            except ProcessLookupError:
                pass

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


class Zygote:
    """The calling process's zygote, started on first use and gone when the caller exits."""

    def __init__(self, workdir: Path) -> None:
        self.path = str(workdir / "zygote.sock")
        self._process = subprocess.Popen(
            [sys.executable, __file__, self.path],
            stdin=subprocess.PIPE,  # closed by the caller's exit: the zygote then exits too
            stdout=subprocess.PIPE,
            stderr=open(workdir / "zygote.log", "wb"),  # noqa: SIM115  # the child owns it
            env={k: v for k, v in os.environ.items() if not k.startswith("AIRWAVE_")},
        )
        assert self._process.stdout is not None
        if self._process.stdout.readline().strip() != b"ready":
            raise RuntimeError(f"the zygote did not start; see {workdir / 'zygote.log'}")

    def alive(self) -> bool:
        return self._process.poll() is None

    def spawn(
        self,
        args: list[str],
        env: dict[str, str],
        stdin: int,
        stdout: int,
        stderr: int,
        nofile: int | None = None,
    ) -> Process:
        """`python -m airwave *args` with these streams (file descriptors, left open here)."""
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.connect(self.path)
        header = json.dumps({"args": args, "env": env, "cwd": os.getcwd(), "nofile": nofile})
        conn.sendmsg(
            [header.encode()],
            [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [stdin, stdout, stderr]))],
        )
        line = b""
        while not line.endswith(b"\n"):
            chunk = conn.recv(1)
            if not chunk:
                conn.close()
                raise RuntimeError("the zygote refused the request")
            line += chunk
        return Process(json.loads(line)["pid"], conn, args)


_ZYGOTE: dict[int, Zygote] = {}
_ZYGOTE_LOCK = threading.Lock()
enabled = False  # the suite's conftest turns it on; bench/ scripts start real interpreters


def zygote() -> Zygote | None:
    """This process's zygote when enabled (started now if needed), else None."""
    if not enabled:
        return None
    import tempfile

    with _ZYGOTE_LOCK:
        found = _ZYGOTE.get(os.getpid())
        if found is None or not found.alive():
            found = _ZYGOTE[os.getpid()] = Zygote(Path(tempfile.mkdtemp(prefix="aw-zygote-")))
        return found


def popen(
    args: list[str], env: dict[str, str], stderr_file: IO[Any] | None = None, **kwargs: Any
) -> Process | None:
    """`subprocess.Popen([python, -m, airwave, *args], stdout=PIPE, stderr=PIPE or a file,
    text=True, bufsize=1)` through the zygote; None when the zygote is not enabled."""
    z = zygote()
    if z is None:
        return None
    out_r, out_w = os.pipe()
    err_r, err_w = (None, stderr_file.fileno()) if stderr_file is not None else os.pipe()
    with open(os.devnull, "rb") as devnull:
        try:
            process = z.spawn(args, env, devnull.fileno(), out_w, err_w, kwargs.get("nofile"))
        finally:
            os.close(out_w)
            if err_r is not None:
                os.close(err_w)
    process.stdout = open(out_r, buffering=1)  # noqa: SIM115  # read by the caller
    process.stderr = open(err_r, buffering=1) if err_r is not None else None  # noqa: SIM115
    return process


def run(
    args: list[str], env: dict[str, str], input: str | None = None, timeout: float | None = None
) -> subprocess.CompletedProcess[str] | None:
    """`subprocess.run([python, -m, airwave, *args], capture_output=True, text=True)` through the
    zygote; None when the zygote is not enabled."""
    import tempfile

    z = zygote()
    if z is None:
        return None
    with (
        tempfile.TemporaryFile() as stdin,
        tempfile.TemporaryFile() as stdout,
        tempfile.TemporaryFile() as stderr,
    ):
        if input is not None:
            stdin.write(input.encode())
            stdin.seek(0)
        process = z.spawn(args, env, stdin.fileno(), stdout.fileno(), stderr.fileno())
        try:
            code = process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            raise
        stdout.seek(0)
        stderr.seek(0)
        return subprocess.CompletedProcess(
            ["airwave", *args], code, stdout.read().decode(), stderr.read().decode()
        )


if __name__ == "__main__":
    _zygote_main(sys.argv[1])
