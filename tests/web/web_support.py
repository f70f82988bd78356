"""Helpers for the browser tests: Chromium from Debian, pages that record console errors,
servers, listeners."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from support import Api, Server, unique

# Chromium's headless shell (Debian's chromium-headless-shell, what Playwright itself runs for
# headless pages): the same Blink, V8 and media stack as the browser without its UI, at less than
# half the CPU for the same tests (the browser tests' 307 CPU-seconds fell to 130 on 2 cores)
CHROMIUM = "/usr/bin/chromium-headless-shell"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--autoplay-policy=no-user-gesture-required",
    # the HTTPS server's certificate is self-signed: contexts ignore that for pages
    # (ignore_https_errors), this flag for service worker scripts, which Chromium fetches apart
    "--ignore-certificate-errors",
]
PASSWORD = "correct horse battery"
DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}
_FAILED_LOAD = re.compile(r"Failed to load resource: the server responded with a status of (\d{3})")


@dataclass
class Tab:
    """A browser context with one page, and the console errors it logged."""

    context: Any
    page: Any
    errors: list[str] = field(default_factory=list)
    expected: set[int] = field(default_factory=set)  # HTTP statuses the test provokes on purpose

    def unexpected_errors(self) -> list[str]:
        out = []
        for text in self.errors:
            match = _FAILED_LOAD.search(text)
            if match and int(match.group(1)) in self.expected:
                continue
            out.append(text)
        return out

    def close(self) -> None:
        self.context.close()


def open_tab(
    browser: Any,
    base_url: str,
    viewport: dict[str, int] = DESKTOP,
    color_scheme: str = "light",
    device_scale_factor: float = 1,
) -> Tab:
    context = browser.new_context(
        base_url=base_url,
        viewport=viewport,
        ignore_https_errors=True,
        color_scheme=color_scheme,
        device_scale_factor=device_scale_factor,
    )
    page = context.new_page()
    page.set_default_timeout(15_000)
    tab = Tab(context, page)
    page.on(
        "console",
        lambda msg: (
            tab.errors.append(f"{msg.text} @ {msg.location.get('url', '')}")
            if msg.type == "error"
            else None
        ),
    )
    page.on("pageerror", lambda exc: tab.errors.append(f"uncaught: {exc}"))
    return tab


def wait_ready(server: Server, timeout: float = 120) -> None:
    """Library scanned and indexed (works over HTTPS with a self-signed certificate too)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = httpx.get(server.url + "/healthz", verify=False).json().get("library", {})
        if status.get("indexed", 0) >= 1 and status.get("state") == "idle":
            return
        time.sleep(0.2)
    raise AssertionError("library never finished indexing")


_CLIENTS: list[Api] = []


def client(server: Server) -> Api:
    """An API client, closed by close_clients() (a TLS server waits ~10 s on shutdown for idle
    keep-alives)."""
    api = Api(server.url, verify=False)
    _CLIENTS.append(api)
    return api


def close_clients() -> None:
    while _CLIENTS:
        _CLIENTS.pop().http.close()


def new_listener(server: Server, tier: str = "free") -> Api:
    api = client(server)
    name = unique("web")
    api.listener_id = int(api.register(name, PASSWORD)["listenerId"])  # type: ignore[attr-defined]
    api.username = name  # type: ignore[attr-defined]
    if tier != "free":
        result = server.admin("user", "tier", name, tier)
        assert result.returncode == 0, result.stderr
    return api


def sign_in(tab: Tab, username: str, password: str = PASSWORD, keep: bool = False) -> None:
    page = tab.page
    page.goto("/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password)
    if keep:
        page.get_by_label("Keep me logged in").check()
    page.get_by_role("button", name="Sign in").click()
    page.get_by_role("heading", name="Stations", exact=True).wait_for()


def audio_state(page: Any) -> dict[str, Any]:
    """The audio element that is playing (or the first one): its time, paused flag and source."""
    return page.evaluate("""() => {
        const els = [...document.querySelectorAll('audio')]; const el = els.find(a => !a.paused) ||
        els.find(a => a.currentTime > 0) || els[0]; return {time: el.currentTime, paused: el.paused,
        src: el.currentSrc, playing: els.some(a => !a.paused)};
    }""")


def wait_playing(page: Any, past: float = 0.3, timeout: float = 20) -> None:
    """Until an audio element plays and its time has advanced past `past` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        state = audio_state(page)
        if state["playing"] and state["time"] > past:
            return
        time.sleep(0.1)
    raise AssertionError(f"audio never played: {audio_state(page)}")


def current_music_id(page: Any) -> str:
    return page.locator("#now .track-title").get_attribute("data-music-id") or ""


def wait_track(page: Any, timeout: float = 20) -> str:
    page.wait_for_function(
        "() => { const t = document.querySelector('#now .track-title');"
        " return t && t.dataset.musicId; }",
        timeout=timeout * 1000,
    )
    return current_music_id(page)


def accessible(page: Any) -> None:
    """axe-core (default rules) finds no violation on the page as it stands. Checked on the HTTP
    run of a flow: the page's markup and styles are the same over HTTPS, where it is skipped to
    keep those runs short."""
    if page.url.startswith("https://"):
        return
    from axe_playwright_python.sync_playwright import Axe

    results = Axe().run(page)
    assert results.violations_count == 0, results.generate_report()


def tls_args(scheme: str, tls_files: tuple[Path, Path]) -> list[str]:
    """`airwave serve` arguments for the scheme: none for HTTP, the certificate for HTTPS."""
    return (
        ["--tls-cert", str(tls_files[0]), "--tls-key", str(tls_files[1])]
        if scheme == "https"
        else []
    )


def library_site(
    start: Callable[..., Server],
    library: Path,
    scheme: str = "http",
    tls_files: tuple[Path, Path] | None = None,
) -> Server:
    """A module's server on the demo library with relaxed radio rules and a fixed engine seed
    (the library and history browser tests), over HTTP or HTTPS (a self-signed certificate)."""
    env = {
        "AIRWAVE_FRAGMENT_LIMIT": "100000",
        "AIRWAVE_ENGINE_SEED": "5",
        "AIRWAVE_RADIO_RULES": "relaxed",
    }
    tls = tls_args(scheme, tls_files) if tls_files else []
    assert scheme == "http" or tls, "HTTPS needs the certificate (the tls_files fixture)"
    server = start("--open-registration", "--library", str(library), *tls, env=env)
    assert server.url.startswith(scheme + "://"), server.url
    wait_ready(server)
    return server
