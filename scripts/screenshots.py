"""Screenshots of the web player's main screens at desktop (1280x800, light) and phone (390x844,
dark) size, written to docs/screenshots/: a demo server on a throwaway data directory, one
Premium listener per size, Debian's Chromium through Playwright. Not part of the test suite.

    make screenshots        # or: .venv/bin/python scripts/screenshots.py [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--autoplay-policy=no-user-gesture-required",
]
SIZES = {
    "desktop": ({"width": 1280, "height": 800}, "light"),
    "phone": ({"width": 390, "height": 844}, "dark"),
}
PASSWORD = "screenshots please"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Rest:
    """Just enough of the REST API to set a listener's stage up."""

    def __init__(self, base: str, username: str) -> None:
        self.http = httpx.Client(base_url=base, timeout=60, cookies={"csrftoken": "shots"})
        self.token = ""
        self.token = self.call("v1/auth/login", {"username": username, "password": PASSWORD})[
            "authToken"
        ]

    def call(self, path: str, body: dict[str, Any] | None = None) -> Any:
        headers = {"X-CsrfToken": "shots", "X-AuthToken": self.token}
        response = self.http.post(f"/api/{path}", json=body or {}, headers=headers)
        response.raise_for_status()
        return response.json()


def start_server(data_dir: Path, port: int) -> subprocess.Popen[bytes]:
    env = {**os.environ, "AIRWAVE_LOG_LEVEL": "warning", "AIRWAVE_ACCESS_LOG": "false"}
    command = [sys.executable, "-m", "airwave", "serve", "--demo", "--data-dir", str(data_dir)]
    return subprocess.Popen([*command, "--port", str(port)], env=env)


def wait_indexed(base: str, server: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit("the server stopped")
        try:
            library = httpx.get(base + "/healthz", timeout=5).json().get("library", {})
            if library.get("indexed", 0) >= 1 and library.get("state") == "idle":
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise SystemExit("the demo library was never indexed")


def add_listener(data_dir: Path, name: str) -> None:
    for args in (["user", "add", name, "--password-stdin"], ["user", "tier", name, "premium"]):
        subprocess.run(
            [sys.executable, "-m", "airwave", *args, "--data-dir", str(data_dir)],
            input=(PASSWORD + "\n").encode(),
            check=True,
            capture_output=True,
        )


def stage(rest: Rest) -> dict[str, Any]:
    """Stations, collected albums and a playlist, so no screen shows its empty state."""
    found = rest.call("v1/search/fullSearch", {"query": "a", "types": ["AR"], "count": 20})
    stations = [
        rest.call("v1/station/createStation", {"musicId": item["musicId"]})
        for item in found["items"][:5]
    ]
    albums = rest.call("v3/sod/search", {"query": "a", "types": ["AL"], "count": 12})
    album_ids = albums["results"]
    for pandora_id in album_ids[:6]:
        rest.call("v4/collections/addItem", {"pandoraId": pandora_id})
    tracks = [t for a in album_ids[:3] for t in albums["annotations"][a]["tracks"][:3]]
    rest.call("v4/playlists/create", {"name": "Late night", "tracks": tracks})
    return {"stations": stations, "album": album_ids[0]}


def shoot(page: Any, out: Path, name: str) -> None:
    page.wait_for_load_state("networkidle")
    page.evaluate("() => document.fonts.ready")
    page.wait_for_timeout(300)  # covers fade in
    page.screenshot(path=str(out / f"{name}.png"))
    print(f"wrote {out / (name + '.png')}", flush=True)


def pause(page: Any) -> None:
    """The play/pause button in sight: the now-playing screen's, or the player bar's."""
    page.locator("button.icon.play:visible").first.click()
    page.wait_for_function("() => [...document.querySelectorAll('audio')].every(a => a.paused)")


def screens(browser: Any, base: str, out: Path, size: str, username: str, staged: dict) -> None:
    viewport, scheme = SIZES[size]
    context = browser.new_context(base_url=base, viewport=viewport, color_scheme=scheme)
    page = context.new_page()
    page.set_default_timeout(30_000)
    page.goto("/")
    page.get_by_role("button", name="Sign in").wait_for()
    shoot(page, out, f"signin-{size}")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.get_by_role("heading", name="Stations", exact=True).wait_for()
    shoot(page, out, f"stations-{size}")

    station = staged["stations"][0]
    page.get_by_role("button", name=f"Play {station['name']}").click()
    page.wait_for_function("() => [...document.querySelectorAll('audio')].some(a => !a.paused)")
    page.wait_for_timeout(1500)
    pause(page)
    page.wait_for_function("() => document.querySelector('#now img.cover.big').complete")
    shoot(page, out, f"now-playing-{size}")
    page.goto(f"/#/station/{station['stationId']}")
    page.get_by_role("heading", name="Seeds").wait_for()
    shoot(page, out, f"station-{size}")

    page.goto("/#/library")
    page.locator(".tile").first.wait_for()
    shoot(page, out, f"library-{size}")
    page.goto("/#/library/browse?kind=AL")
    whole = page.get_by_role("region", name="The whole library")
    whole.locator(".tile").first.wait_for()
    page.evaluate("() => document.querySelector('#library-title').scrollIntoView()")
    page.wait_for_timeout(800)  # the covers in view (lazy ones below never load)
    shoot(page, out, f"browse-{size}")
    page.goto(f"/#/library/album/{staged['album']}")
    page.get_by_role("list", name="Tracks").wait_for()
    shoot(page, out, f"album-{size}")
    page.locator("main").get_by_role("button", name="Play", exact=True).click()
    page.wait_for_function("() => [...document.querySelectorAll('audio')].some(a => !a.paused)")
    page.wait_for_timeout(1500)
    pause(page)
    # the now-playing screen as a listener opens it: from the player bar
    if size == "phone":
        page.locator(".bar-title").click()  # (phones: the title; the expand button is left out)
    else:
        page.get_by_role("link", name="Expand the player").click()
    page.locator("ol.queue > li").first.wait_for()
    page.wait_for_function("() => document.querySelector('#now img.cover.big').complete")
    shoot(page, out, f"now-playing-album-{size}")
    page.goto("/#/playlists")
    page.locator(".tile").first.wait_for()
    page.locator(".tile a").first.click()
    page.locator("ol.reorder > li").first.wait_for()
    shoot(page, out, f"playlist-{size}")
    page.goto("/#/history")
    page.locator(".history li").first.wait_for()
    shoot(page, out, f"history-{size}")
    page.goto("/#/settings")
    page.get_by_role("heading", name="Settings", exact=True).wait_for()
    shoot(page, out, f"settings-{size}")
    context.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshots")
    parser.add_argument(
        "--data-dir", type=Path, help="keep the demo instance here (reruns skip its first start)"
    )
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="airwave-shots-") as tmp:
        data_dir = args.data_dir or Path(tmp)
        data_dir.mkdir(parents=True, exist_ok=True)
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        server = start_server(data_dir, port)
        try:
            wait_indexed(base, server)
            run = secrets.token_hex(2)  # fresh listeners each run, on a kept instance too
            names = {"desktop": f"alex{run}", "phone": f"sam{run}"}
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                for size, name in names.items():
                    add_listener(data_dir, name)
                    staged = stage(Rest(base, name))
                    screens(browser, base, args.out, size, name, staged)
                browser.close()
        finally:
            server.terminate()
            server.wait(timeout=30)
    print(json.dumps({"written": str(args.out)}))


if __name__ == "__main__":
    main()
