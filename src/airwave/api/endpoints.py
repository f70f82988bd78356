"""Importing this module declares every endpoint in the registry."""

from airwave.api.registry import registry
from airwave.api.v1 import auth, listener, meta, music, search, station  # noqa: F401  (declarations)

__all__ = ["registry"]
