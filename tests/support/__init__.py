"""Test harness: real server processes on free ports, real databases, an API client.

`from support import ...` keeps working for tests; bench/ scripts put tests/ on sys.path and
use `support.server.Server` the same way.
"""

from support import zygote
from support.api import Api, artists, assert_error, unique
from support.databases import (
    POSTGRES_URL,
    Backend,
    PostgresSchema,
    backend_params,
    postgres_available,
)
from support.server import Server, wait_indexed

__all__ = [
    "POSTGRES_URL",
    "Api",
    "Backend",
    "PostgresSchema",
    "Server",
    "artists",
    "assert_error",
    "backend_params",
    "postgres_available",
    "unique",
    "wait_indexed",
    "zygote",
]
