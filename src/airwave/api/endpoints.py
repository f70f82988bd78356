"""Importing this module declares every endpoint in the registry."""

from airwave.api.registry import registry
from airwave.api.v1 import (
    ad,
    app_passwords,
    auth,
    billing,
    bookmark,
    history,
    listener,
    meta,
    music,
    ondemand,
    playlist,
    search,
    station,
)
from airwave.api.v3 import sod
from airwave.api.v4 import catalog, collections, playlists, pods

__all__ = [
    "registry",
    "ad",
    "app_passwords",
    "auth",
    "billing",
    "bookmark",
    "history",
    "listener",
    "meta",
    "music",
    "ondemand",
    "playlist",
    "search",
    "station",
    "sod",
    "catalog",
    "collections",
    "playlists",
    "pods",
]
