"""Builds the container image and runs compose.yaml (Airwave + PostgreSQL) as a new user
would, then checks it the way a client does; takes everything down afterwards.

    python3 scripts/container_check.py [--engine podman|docker] [--ca-bundle FILE] [--keep]

1. `build` the image from the Dockerfile (tagged airwave:check).
2. The database image: compose.yaml's `postgres:16-bookworm` when it can be pulled; otherwise
   one built from Debian's PostgreSQL (scripts/container/postgres.Containerfile), which answers
   to the same variables, so compose.yaml itself is what runs.
3. A music folder with the demo library, written by `airwave demo` inside the image.
4. `compose up`, then: /healthz ready (database ok, schema migrated) and the library scanned;
   an account made with `airwave user add` inside the container; login over the REST API; a
   station from a track found by search; a fragment; its first track's audio (the bytes of a
   real file); the account still there after `compose restart airwave` (kept in PostgreSQL).
5. `compose down -v` (unless --keep), and the temporary folder removed.

Exits 0 when every check passed, 1 with the failing step otherwise. Needs podman and
podman-compose, or docker with its compose plugin. Behind a TLS-inspecting proxy, pass the
proxy's CA bundle with --ca-bundle (it reaches pip inside the build as a build secret only).
"""

from __future__ import annotations

import argparse
import http.cookiejar
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
IMAGE = "localhost/airwave:check"
OFFICIAL_POSTGRES = "docker.io/library/postgres:16-bookworm"
LOCAL_POSTGRES = "localhost/airwave-check-postgres:15"
PASSWORD = "container check password"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", choices=("podman", "docker"), default=None)
    parser.add_argument("--ca-bundle", type=Path, default=None)
    parser.add_argument("--keep", action="store_true", help="leave the containers running")
    args = parser.parse_args()
    engine = args.engine or ("podman" if shutil.which("podman") else "docker")
    if not shutil.which(engine):
        print("neither podman nor docker is installed", file=sys.stderr)
        return 1
    compose = ["podman-compose"] if engine == "podman" else ["docker", "compose"]
    if not shutil.which(compose[0]):
        print(f"{compose[0]} is not installed", file=sys.stderr)
        return 1
    check = Check(engine, compose, args.ca_bundle)
    try:
        check.run()
    except Failed as failure:
        print(f"FAILED: {failure}", file=sys.stderr)
        check.show_logs()
        return 1
    finally:
        if not args.keep:
            check.down()
    print("container check: all passed")
    return 0


class Failed(Exception):
    """A check that did not pass."""


class Check:
    def __init__(self, engine: str, compose: list[str], ca_bundle: Path | None) -> None:
        self.engine = engine
        self.compose = compose
        self.ca_bundle = ca_bundle
        self.project = f"airwave-check-{os.getpid()}"
        self.work = Path(tempfile.mkdtemp(prefix="airwave-container-check-"))
        self.port = _free_port()
        self.env = {
            **os.environ,
            "AIRWAVE_IMAGE": IMAGE,
            "MUSIC_DIR": str(self.work / "music"),
            "AIRWAVE_PUBLISH": f"127.0.0.1:{self.port}",
            "AIRWAVE_WORKERS": "2",
        }
        self.up = False

    def run(self) -> None:
        self.step("build the image", self.build)
        self.step("the PostgreSQL image", self.postgres_image)
        self.step("the demo library as the music folder", self.music)
        self.step("compose up", self.compose_up)
        base = f"http://127.0.0.1:{self.port}"
        self.step("ready, on PostgreSQL, library scanned", lambda: self.ready(base))
        self.step("airwave user add inside the container", self.add_user)
        self.step("login, station, fragment and audio", lambda: self.listen(base))
        self.step("compose restart: the account is kept", lambda: self.restart(base))

    def step(self, what: str, action) -> None:  # noqa: ANN001  # a callable
        started = time.monotonic()
        print(f"-- {what}", flush=True)
        try:
            detail = action()
        except Failed:
            raise
        except Exception as error:  # noqa: BLE001  # any failure of a step is the check's answer
            raise Failed(f"{what}: {error!r}") from error
        print(f"   ok ({time.monotonic() - started:.1f} s){f': {detail}' if detail else ''}")

    def sh(self, *argv: str, input: bytes | None = None, quiet: bool = True) -> str:
        done = subprocess.run(
            argv, cwd=ROOT, env=self.env, input=input, capture_output=True, check=False
        )
        if done.returncode != 0:
            tail = (done.stdout + done.stderr).decode(errors="replace")[-3000:]
            raise Failed(f"`{' '.join(argv)}` exited {done.returncode}:\n{tail}")
        if not quiet:
            print(done.stdout.decode(errors="replace"), end="")
        return done.stdout.decode(errors="replace")

    def build(self) -> str:
        argv = [self.engine, "build", "-t", IMAGE, "-f", "Dockerfile"]
        if self.engine == "podman":
            argv += ["--format", "docker"]  # keeps the HEALTHCHECK
        if self.ca_bundle:
            argv += ["--secret", f"id=ca_bundle,src={self.ca_bundle.resolve()}"]
        self.sh(*argv, ".")
        size = self.sh(self.engine, "image", "inspect", IMAGE, "--format", "{{.Size}}")
        return f"{IMAGE}, {int(size.strip() or 0) / 1e6:.0f} MB"

    def postgres_image(self) -> str:
        pulled = subprocess.run(
            [self.engine, "pull", OFFICIAL_POSTGRES], capture_output=True, check=False
        )
        if pulled.returncode == 0:
            self.env["POSTGRES_IMAGE"] = OFFICIAL_POSTGRES
            return OFFICIAL_POSTGRES
        folder = ROOT / "scripts" / "container"
        self.sh(
            self.engine, "build", "-t", LOCAL_POSTGRES, "-f",
            str(folder / "postgres.Containerfile"), str(folder),
        )  # fmt: skip
        self.env["POSTGRES_IMAGE"] = LOCAL_POSTGRES
        return f"{OFFICIAL_POSTGRES} cannot be pulled here; built {LOCAL_POSTGRES} from Debian's"

    def music(self) -> str:
        music = self.work / "music"
        music.mkdir()
        self.sh(
            self.engine, "run", "--rm", "--user", "root", "-v", f"{music}:/out",
            IMAGE, "airwave", "demo", "--out", "/out",
        )  # fmt: skip
        files = [p for p in music.rglob("*") if p.is_file()]
        return f"{len(files)} files"

    def compose_up(self) -> None:
        self.up = True
        self.sh(*self.compose, "-p", self.project, "-f", "compose.yaml", "up", "-d")

    def container(self, service: str) -> str:
        out = self.sh(
            self.engine, "ps", "-q",
            "--filter", f"label=com.docker.compose.project={self.project}",
            "--filter", f"label=com.docker.compose.service={service}",
        )  # fmt: skip
        ids = out.split()
        if not ids:
            raise Failed(f"no running container for service {service}")
        return ids[0]

    def ready(self, base: str) -> str:
        deadline = time.monotonic() + 240
        last = ""
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"{base}/healthz", timeout=5) as response:
                    health = json.loads(response.read())
                library = health.get("library") or {}
                last = json.dumps(health)
                files = (library.get("last") or {}).get("files", 0)
                if health.get("database") == "ok" and library.get("state") == "idle" and files:
                    return f"host {health.get('host')}, {files} files scanned"
            except (urllib.error.URLError, OSError, ValueError) as error:
                last = repr(error)
            time.sleep(2)
        raise Failed(f"not ready within 240 s; last answer: {last}")

    def add_user(self) -> str:
        container = self.container("airwave")
        out = self.sh(
            self.engine, "exec", "-i", container, "airwave", "user", "add", "checker",
            "--password-stdin", input=f"{PASSWORD}\n".encode(),
        )  # fmt: skip
        return out.strip().splitlines()[-1] if out.strip() else ""

    def listen(self, base: str) -> str:
        api = Rest(base)
        api.login("checker", PASSWORD)
        found = api.ok("v1/search/fullSearch", {"query": "a", "types": ["TR"], "count": 5})
        tracks = [item for item in found.get("items", []) if item.get("type") in ("TR", "track")]
        if not tracks:
            raise Failed(f"search found no track: {found}")
        station = api.ok("v1/station/createStation", {"musicId": tracks[0]["musicId"]})
        fragment = api.ok("v1/playlist/getFragment", {"stationId": station["stationId"]})
        songs = [t for t in fragment.get("tracks", []) if t.get("audioURL")]
        if not songs:
            raise Failed(f"a fragment without playable tracks: {fragment}")
        url = songs[0]["audioURL"]
        if url.startswith("/"):
            url = base + url
        with urllib.request.urlopen(url, timeout=60) as response:
            body = response.read()
            kind = response.headers.get("content-type", "")
        if len(body) < 10_000:
            raise Failed(f"{len(body)} bytes of audio from {url}")
        return f"{len(songs)} tracks; the first: {len(body)} bytes of {kind}"

    def restart(self, base: str) -> None:
        self.sh(*self.compose, "-p", self.project, "-f", "compose.yaml", "restart", "airwave")
        self.ready(base)
        Rest(base).login("checker", PASSWORD)

    def show_logs(self) -> None:
        if self.up:
            logs = subprocess.run(
                [*self.compose, "-p", self.project, "-f", "compose.yaml", "logs"],
                cwd=ROOT, env=self.env, capture_output=True, check=False,
            )  # fmt: skip
            print((logs.stdout + logs.stderr).decode(errors="replace")[-4000:], file=sys.stderr)

    def down(self) -> None:
        if self.up:
            subprocess.run(
                [*self.compose, "-p", self.project, "-f", "compose.yaml", "down", "-v"],
                cwd=ROOT, env=self.env, capture_output=True, check=False,
            )  # fmt: skip
            subprocess.run(  # podman-compose leaves the project's network behind
                [self.engine, "network", "rm", f"{self.project}_default"],
                capture_output=True, check=False,
            )  # fmt: skip
        # the music folder holds files the container's root wrote
        subprocess.run(
            [self.engine, "run", "--rm", "--user", "root", "-v", f"{self.work}:/w", IMAGE,
             "sh", "-c", "rm -rf /w/music"],
            capture_output=True, check=False,
        )  # fmt: skip
        shutil.rmtree(self.work, ignore_errors=True)


class Rest:
    """The REST API as a client speaks it: CSRF cookie and header, then the auth token."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.token: str | None = None
        self.opener = urllib.request.build_opener(
            urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar())
        )
        self.csrf = "0123456789abcdef"

    def ok(self, path: str, body: dict) -> dict:
        headers = {
            "Content-Type": "application/json",
            "X-CsrfToken": self.csrf,
            "Cookie": f"csrftoken={self.csrf}",
        }
        if self.token:
            headers["X-AuthToken"] = self.token
        request = urllib.request.Request(
            f"{self.base}/api/{path}", json.dumps(body).encode(), headers, method="POST"
        )
        try:
            with self.opener.open(request, timeout=30) as response:
                return json.loads(response.read())
        except urllib.error.HTTPError as error:
            raise Failed(f"{path}: HTTP {error.code} {error.read()[:500]!r}") from None

    def login(self, username: str, password: str) -> None:
        self.token = self.ok("v1/auth/login", {"username": username, "password": password})[
            "authToken"
        ]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


if __name__ == "__main__":
    sys.exit(main())
