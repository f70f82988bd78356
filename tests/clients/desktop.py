"""A desktop of its own for a GUI app under test: an Xvfb display, a D-Bus session bus, the
processes started for it (each in its own process group, all stopped by `close`) and the app's
log. Pithos and Sublime Music run on one each."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
from typing import IO


def _lines(stream: IO[str], sink: list[str]) -> None:
    for line in stream:
        sink.append(line)


class Desktop:
    def __init__(self, screen: str = "1024x768x24") -> None:
        self.log: list[str] = []
        self.children: list[subprocess.Popen[str]] = []
        # a display of its own: Xvfb picks a free number and writes it to stdout
        display = self.spawn(
            ["Xvfb", "-displayfd", "1", "-screen", "0", screen, "-nolisten", "tcp"]
        )
        self.display = ":" + self.first_line(display, "Xvfb")
        bus = self.spawn(["dbus-daemon", "--session", "--nofork", "--print-address=1"])
        self.bus = self.first_line(bus, "dbus-daemon")

    def spawn(
        self,
        command: list[str],
        env: dict[str, str] | None = None,
        stderr: int = subprocess.DEVNULL,
    ) -> subprocess.Popen[str]:
        child = subprocess.Popen(
            command,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
            start_new_session=True,
        )
        self.children.append(child)
        return child

    def run_app(self, command: list[str], env: dict[str, str]) -> subprocess.Popen[str]:
        """Start the app on this desktop; its stdout and stderr go to `log`."""
        app = self.spawn(
            command,
            env={**env, "DISPLAY": self.display, "DBUS_SESSION_BUS_ADDRESS": self.bus},
            stderr=subprocess.STDOUT,
        )
        assert app.stdout is not None
        threading.Thread(target=_lines, args=(app.stdout, self.log), daemon=True).start()
        return app

    @staticmethod
    def first_line(child: subprocess.Popen[str], name: str) -> str:
        assert child.stdout is not None
        line = child.stdout.readline().strip()
        assert line, f"{name} did not start"
        return line

    def text(self) -> str:
        return "".join(self.log)

    def close(self) -> None:
        for child in reversed(self.children):
            if child.poll() is None:
                os.killpg(child.pid, signal.SIGTERM)
        for child in self.children:
            try:
                child.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(child.pid, signal.SIGKILL)
                child.wait(10)
