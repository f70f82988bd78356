"""Request headers read one way for every route."""

from __future__ import annotations

from starlette.types import Scope


def request_headers(scope: Scope) -> dict[str, str]:
    """Lower-case names; a repeated header's values joined with commas (cookies with semicolons)."""
    out: dict[str, str] = {}
    for raw_name, raw_value in scope["headers"]:
        name, value = raw_name.decode("latin-1").lower(), raw_value.decode("latin-1")
        if name in out:
            value = f"{out[name]}{'; ' if name == 'cookie' else ', '}{value}"
        out[name] = value
    return out
