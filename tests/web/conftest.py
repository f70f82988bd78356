"""The browser and its tabs, shared by the web player's test modules; `site`, the server their
tabs open (the demo library over HTTP and HTTPS, unless a module defines its own); the
self-signed certificate of the HTTPS servers. Browser tests run on SQLite only."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from support import Server
from web_support import CHROMIUM, CHROMIUM_ARGS, Tab, close_clients, library_site, open_tab


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Without Debian's Chromium the browser tests are skipped, saying what to install."""
    if Path(CHROMIUM).exists():
        return
    reason = f"Debian's chromium-headless-shell ({CHROMIUM}) is not installed; .ci/run installs it"
    for item in items:
        if Path(str(item.fspath)).parent == Path(__file__).parent:
            item.add_marker(pytest.mark.skip(reason=reason))


@pytest.fixture(scope="module")
def backend_kind() -> str:
    """Browser tests run on the embedded SQLite backend only."""
    return "sqlite"


@pytest.fixture(scope="module", params=["http", "https"])
def site(
    request: pytest.FixtureRequest,
    start_server: Callable[..., Server],
    small_demo_library: Path,
    tls_files: tuple[Path, Path],
) -> Server:
    """Each flow over HTTP, then over HTTPS (a self-signed certificate) on a server of its own."""
    return library_site(start_server, small_demo_library, request.param, tls_files)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture(scope="session")
def tls_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 and localhost and its key, for the HTTPS runs."""
    import trustme

    ca = trustme.CA()
    issued = ca.issue_cert("127.0.0.1", "localhost")
    directory = tmp_path_factory.mktemp("web-tls")
    cert, key = directory / "cert.pem", directory / "key.pem"
    cert.write_bytes(b"".join(blob.bytes() for blob in issued.cert_chain_pems))
    issued.private_key_pem.write_to_path(str(key))
    return cert, key


@pytest.fixture
def tabs(browser: Any, site: Server) -> Iterator[Callable[..., Tab]]:
    """Open browser tabs (separate contexts); each must log no unexpected console error."""
    opened: list[Tab] = []

    def open_(**kwargs: Any) -> Tab:
        tab = open_tab(browser, site.url, **kwargs)
        opened.append(tab)
        return tab

    yield open_
    problems = [e for tab in opened for e in tab.unexpected_errors()]
    for tab in opened:
        tab.close()
    close_clients()
    assert not problems, problems
