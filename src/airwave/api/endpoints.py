"""Importing this module declares every endpoint in the registry."""

from airwave.api.registry import registry
from airwave.api.v1 import (
    ad,
    auth,
    bookmark,
    listener,
    meta,
    music,
    ondemand,
    playlist,
    search,
    station,
)

__all__ = [
    "registry",
    "ad",
    "auth",
    "bookmark",
    "listener",
    "meta",
    "music",
    "ondemand",
    "playlist",
    "search",
    "station",
]
