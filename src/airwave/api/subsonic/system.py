"""System and user methods: ping, licence, OpenSubsonic extensions, music folders, the user."""

from __future__ import annotations

from airwave.api.subsonic.dispatch import Payload, SubsonicCall, method
from airwave.api.subsonic.envelope import NOT_AUTHORIZED, NOT_FOUND, SubsonicError
from airwave.core import cluster, library
from airwave.core.accounts import accounts
from airwave.core.catalog import browse

# Airwave serves its library as one catalogue: one music folder
MUSIC_FOLDER_ID = 1
MUSIC_FOLDER_NAME = "Music"
# the OpenSubsonic extensions this edge really implements
EXTENSIONS = {"apiKeyAuthentication": [1], "formPost": [1], "songLyrics": [1]}


@method("ping")
def ping(s: SubsonicCall) -> Payload:
    return {}


@method("getLicense")
def get_license(s: SubsonicCall) -> Payload:
    return {"license": {"valid": True}}


@method("getOpenSubsonicExtensions")
def get_open_subsonic_extensions(s: SubsonicCall) -> Payload:
    return {
        "openSubsonicExtensions": [
            {"name": name, "versions": versions} for name, versions in EXTENSIONS.items()
        ]
    }


@method("getMusicFolders")
def get_music_folders(s: SubsonicCall) -> Payload:
    return {"musicFolders": {"musicFolder": [{"id": MUSIC_FOLDER_ID, "name": MUSIC_FOLDER_NAME}]}}


@method("getUser")
def get_user(s: SubsonicCall) -> Payload:
    """The caller, or (for an administrator) any listener."""
    me = s.call.require_listener()
    name = s.required("username")
    if accounts.username_key(name) == me.username_key:
        who = me
    elif not me.is_admin:
        raise SubsonicError(NOT_AUTHORIZED, "only administrators may read other users")
    else:
        found = accounts.find_listener(s.call.reader(), name)
        if found is None:
            raise SubsonicError(NOT_FOUND, f"no user {name!r}")
        who = found
    # what Airwave lets this listener do: every tier streams (radio); the library on demand
    # (download, own playlists) is the tier's; nothing is uploaded, shared or commented here
    on_demand = s.call.settings.tier(who.tier).on_demand
    return {
        "user": {
            "username": who.username,
            "email": who.email,
            "scrobblingEnabled": True,
            "adminRole": who.is_admin,
            "settingsRole": True,
            "downloadRole": on_demand,
            "uploadRole": False,
            "playlistRole": on_demand,
            "coverArtRole": False,
            "commentRole": False,
            "podcastRole": False,
            "streamRole": True,
            "jukeboxRole": False,
            "shareRole": False,
            "videoConversionRole": False,
            "folder": [MUSIC_FOLDER_ID],
        }
    }


@method("startScan", writes=True)
def start_scan(s: SubsonicCall) -> Payload:
    """An administrator's rescan (the scan the server runs at start and on file changes)."""
    library.start_scan(s.library, s.call.require_listener().is_admin)
    # scanning: the scan just started, or the one it found under way
    return {"scanStatus": {"scanning": True, "count": browse.track_count(s.call.reader())}}


@method("getScanStatus")
def get_scan_status(s: SubsonicCall) -> Payload:
    """Whether the library is being scanned (or indexed), and how many tracks it holds."""
    scanning = False
    if s.library is not None:  # the library's holder may be another worker or host
        status = s.library.shared_status(cluster.overview(s.call.services)["library"])  # type: ignore[arg-type]
        scanning = status.get("state", "idle") != "idle"
    count = browse.track_count(s.call.reader())
    return {"scanStatus": {"scanning": scanning, "count": count}}
