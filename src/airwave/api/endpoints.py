"""Importing this module declares every endpoint in the registry."""

from airwave.api.registry import registry
from airwave.api.v1 import ad, auth, bookmark, listener, meta, music, ondemand, playlist, search, station  # noqa: F401

__all__ = ["registry"]
