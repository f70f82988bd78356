"""Endpoint declarations: each endpoint once; routing, validation, meta, OpenAPI and docs read
them."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from airwave.config import Settings
from airwave.errors import ErrorCode

# Errors any endpoint can answer because of the protocol layer itself.
PROTOCOL_ERRORS = (
    ErrorCode.INVALID_REQUEST,
    ErrorCode.INVALID_CSRF_TOKEN,
    ErrorCode.METHOD_NOT_ALLOWED,
    ErrorCode.NOT_FOUND,
    ErrorCode.SERVER_ERROR,
)
AUTH_ERRORS = (ErrorCode.AUTH_INVALID_TOKEN, ErrorCode.LISTENER_SUSPENDED)


@dataclass(frozen=True)
class Endpoint:
    path: str
    versions: tuple[int, ...]
    request: type[BaseModel]
    response: type[BaseModel]
    handler: Callable[..., Any]
    auth: bool
    writes: bool
    errors: tuple[ErrorCode, ...]
    summary: str
    enabled: Callable[[Settings], bool] | None = None
    notes: str = ""
    hashes: bool = False  # hashes or checks a password (Argon2): served by a pool of its own
    # a cheap read (a few indexed queries): may run on the event loop, without a thread hop
    quick: bool = False

    @property
    def area(self) -> str:
        return self.path.split("/", 1)[0]

    def all_errors(self) -> tuple[ErrorCode, ...]:
        extra = list(self.errors)
        if self.auth:
            extra += AUTH_ERRORS
        if self.writes:
            extra.append(ErrorCode.READONLY_MODE)
        seen: dict[ErrorCode, None] = dict.fromkeys([*PROTOCOL_ERRORS, *extra])
        return tuple(sorted(seen, key=lambda e: e.code))


@dataclass
class Registry:
    _routes: dict[tuple[int, str], Endpoint] = field(default_factory=dict)
    _endpoints: list[Endpoint] = field(default_factory=list)

    def endpoint(
        self,
        path: str,
        *,
        request: type[BaseModel],
        response: type[BaseModel],
        versions: Iterable[int] = (1,),
        auth: bool = True,
        writes: bool = False,
        errors: Iterable[ErrorCode] = (),
        enabled: Callable[[Settings], bool] | None = None,
        notes: str = "",
        hashes: bool = False,
        quick: bool = False,
    ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Declare the function below as the handler of `path` (e.g. "auth/login")."""

        if quick and (writes or hashes):
            raise ValueError(f"{path}: a quick endpoint neither writes nor hashes passwords")

        def register(handler: Callable[..., Any]) -> Callable[..., Any]:
            ep = Endpoint(
                path=path,
                versions=tuple(sorted(versions)),
                request=request,
                response=response,
                handler=handler,
                auth=auth,
                writes=writes,
                errors=tuple(errors),
                summary=_paragraphs(inspect.getdoc(handler) or ""),
                enabled=enabled,
                notes=inspect.cleandoc(notes) if notes else "",
                hashes=hashes,
                quick=quick,
            )
            for version in ep.versions:
                key = (version, path)
                if key in self._routes:
                    raise ValueError(f"endpoint v{version}/{path} declared twice")
                self._routes[key] = ep
            self._endpoints.append(ep)
            return handler

        return register

    def resolve(self, version: int, path: str) -> Endpoint | None:
        return self._routes.get((version, path))

    def endpoints(self) -> list[Endpoint]:
        return sorted(self._endpoints, key=lambda e: (e.versions[0], e.path))


registry = Registry()


def _paragraphs(text: str) -> str:
    """Docstring paragraphs with their line breaks undone (source lines wrap at 100 columns)."""
    return "\n\n".join(" ".join(p.split()) for p in text.split("\n\n") if p.strip())
