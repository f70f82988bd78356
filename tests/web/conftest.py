"""The browser and its tabs, shared by the web player's test modules (each defines `site`, the
server its tabs open)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from support import Server
from web_support import CHROMIUM, CHROMIUM_ARGS, Tab, close_clients, open_tab


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


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
