"""The tuner methods pianobar, pydora and Pithos call, each over the core use case the REST edge
uses for the same thing (one rule, one place); shapes per the public record (json/)."""

from __future__ import annotations

import hashlib
import secrets
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

from airwave.api.tuner import crypto
from airwave.api.tuner.dispatch import (
    INVALID_LOGIN,
    PARAMETER_TYPE_MISMATCH,
    PARAMETER_VALUE_INVALID,
    PARTNER_NOT_AUTHORIZED,
    TunerCall,
    TunerError,
    method,
)
from airwave.api.tuner.explorer import SONG_EXPLORER
from airwave.api.v1.objects import detail_url
from airwave.audio.formats import PROFILES
from airwave.core import bookmarks, ids, search
from airwave.core.accounts import credentials
from airwave.core.catalog import catalog
from airwave.core.catalog.catalog import TrackView
from airwave.core.entities import Artwork
from airwave.core.plays import spin_by_token
from airwave.core.radio import ads, delivery, listening, narrative, playlist, stations
from airwave.errors import ApiError, ErrorCode

ART_SIZE = 500


def _art_url(call: TunerCall, artwork: Artwork | None) -> str:
    if artwork is None:
        return ""
    return f"{call.call.base_url}/art/{artwork.content_hash}/{ART_SIZE}.jpg"


def audio_base(t: TunerCall) -> str:
    """Where tuner clients fetch audio: plain HTTP when the server offers it (pianobar plays only
    http:// URLs), else the URL the call came in on."""
    settings, base = t.call.settings, t.call.base_url
    if settings.plain_url:
        return settings.plain_url.rstrip("/")
    if base.startswith("https://") and settings.plain_port is not None:
        host = urlsplit(base).hostname or "127.0.0.1"
        host = f"[{host}]" if ":" in host else host
        port = "" if settings.plain_port == 80 else f":{settings.plain_port}"
        return f"http://{host}{port}"
    return base


def _date(moment: datetime) -> dict[str, int]:
    """The record's date object; clients read `time` (epoch milliseconds)."""
    return {"time": int(moment.timestamp() * 1000)}


# ---------------------------------------------------------------- authentication


@method("auth.partnerLogin", auth=False)
def partner_login(t: TunerCall) -> dict[str, Any]:
    """Which client is calling: one of the configured partners (their credentials are public)."""
    username, password = t.text("username"), t.text("password")
    device = t.text("deviceModel")
    partners = t.call.settings.tuner_partners
    for number, partner in enumerate(partners, start=1):
        if (partner.username, partner.password, partner.device_model) == (
            username,
            password,
            device,
        ):
            now = int(t.call.now().timestamp())
            return {
                "partnerId": str(number),
                "partnerAuthToken": f"P{number}.{secrets.token_urlsafe(16)}",
                "syncTime": crypto.sync_time(now, partner.decrypt_key),
                "stationSkipLimit": t.call.settings.tier("free").station_skip_limit,
                "stationSkipUnit": "hour",
            }
    raise TunerError(INVALID_LOGIN, "unknown partner username, password or deviceModel")


@method("auth.userLogin", auth=False, writes=True)
def user_login(t: TunerCall) -> dict[str, Any]:
    """A listener's login: the REST login's rules (throttling, suspension, tiers)."""
    partner_token = t.text("partnerAuthToken")
    if not partner_token or not partner_token.startswith(f"P{t.partner_id}."):
        raise TunerError(PARTNER_NOT_AUTHORIZED, "partnerAuthToken is not from this partner_id")
    if t.text("loginType", required=False) not in (None, "user"):
        raise TunerError(PARAMETER_VALUE_INVALID, 'loginType must be "user"')
    call = t.call
    signed_in = credentials.log_in(
        call.services,
        username=t.text("username", limit=256),
        password=t.text("password", limit=1024),
        keep_logged_in=False,
        existing_auth_token=None,
        client=credentials.Client(call.client, call.user_agent, None),
    )
    listener = signed_in.issued.listener
    policy = call.settings.tier(listener.tier)
    return {
        "userId": str(listener.id),
        "userAuthToken": signed_in.issued.token,
        "username": listener.username,
        "canListen": True,
        "hasAudioAds": policy.ads,
        "isCapped": False,
        "isSubscriber": not policy.ads,
        "maxStationsAllowed": policy.max_stations,
        "listeningTimeoutMinutes": str(call.settings.session_timeout // 60),
        "stationCreationAdUrl": "",
        "userProfileUrl": "",
    }


# ---------------------------------------------------------------- stations


def _station(t: TunerCall, view: stations.StationView) -> dict[str, Any]:
    station = view.station
    sid = str(station.id)
    out: dict[str, Any] = {
        "stationId": sid,
        "stationToken": sid,  # "currently stationId and stationToken are the same"
        "stationName": station.name,
        "isShared": False,
        "isQuickMix": station.is_shuffle,
        "allowRename": not station.is_shuffle,
        "allowDelete": not station.is_shuffle,
        "allowEditDescription": not station.is_shuffle,
        "allowAddMusic": not (station.is_shuffle or station.is_thumbprint),
        "requiresCleanAds": False,
        "suppressVideoAds": True,
        "dateCreated": _date(station.created_at),
        "stationDetailUrl": f"{t.call.base_url}/#/station/{sid}",
        "artUrl": _art_url(t, view.artwork),
        "genre": view.genres,
    }
    if station.is_shuffle:
        out["quickMixStationIds"] = [str(s) for s in view.shuffle_ids or []]
    return out


def _station_list(t: TunerCall) -> list[dict[str, Any]]:
    """The stations with QuickMix (the shuffle station) first: tuner clients always find it in
    the list (pianobar cannot even create a station from an empty one)."""
    call, listener = t.call, t.call.require_listener()
    db = call.reader()
    if stations.shuffle_station(db, listener.id) is None:  # a write only the first time
        with call.write() as writer:
            stations.shuffle_view(writer, listener.id, call.now())
    shuffle = stations.shuffle_station(db, listener.id)
    assert shuffle is not None
    _total, views = stations.station_page(db, listener.id, 0, 10_000)
    return [_station(t, v) for v in [stations.station_view(db, shuffle), *views]]


def _checksum(items: list[dict[str, Any]]) -> str:
    text = "|".join(f"{s['stationId']}:{s['stationName']}" for s in items)
    return hashlib.md5(text.encode(), usedforsecurity=False).hexdigest()


@method("user.getStationList", writes=True)
def get_station_list(t: TunerCall) -> dict[str, Any]:
    listed = _station_list(t)
    return {"stations": listed, "checksum": _checksum(listed)}


@method("user.getStationListChecksum", writes=True)
def get_station_list_checksum(t: TunerCall) -> dict[str, Any]:
    return {"checksum": _checksum(_station_list(t))}


@method("station.createStation", writes=True)
def create_station(t: TunerCall) -> dict[str, Any]:
    """From a musicToken (search, genre stations) or a playing track (trackToken + musicType)."""
    call, listener = t.call, t.call.require_listener()
    token = t.text("musicToken", required=False, limit=64)
    with call.write() as db:
        if token is None:
            spin = spin_by_token(db, listener.id, t.text("trackToken", limit=64) or "", call.now())
            kind = t.text("musicType", required=False) or "song"
            if kind not in ("song", "artist"):
                raise TunerError(PARAMETER_VALUE_INVALID, 'musicType is "song" or "artist"')
            token = (
                ids.music_id("artist", spin.artist_id)
                if kind == "artist"
                else ids.music_id("track", spin.track_id)
            )
        view = stations.create(db, call.settings, listener, None, None, token, None, call.now())
        return _station(t, view)


@method("station.renameStation", writes=True)
def rename_station(t: TunerCall) -> dict[str, Any]:
    call = t.call
    with call.write() as db:
        view = stations.update(
            db,
            call.require_listener().id,
            t.text("stationToken", limit=64) or "",
            t.text("stationName", limit=256),
            None,
        )
        return _station(t, view)


@method("station.deleteStation", writes=True)
def delete_station(t: TunerCall) -> None:
    with t.call.write() as db:
        stations.remove(db, t.call.require_listener().id, t.text("stationToken", limit=64) or "")


@method("station.transformSharedStation", writes=True)
def transform_shared_station(t: TunerCall) -> dict[str, Any]:
    """Airwave's stations are never shared: each is already the listener's own."""
    db = t.call.reader()
    station = stations.get_station(
        db, t.call.require_listener().id, t.text("stationToken", limit=64) or ""
    )
    return _station(t, stations.station_view(db, station))


def _seed(t: TunerCall, station_id: int, seed: stations.SeedView) -> dict[str, Any]:
    token = ids.music_id(stations.KIND_NAMES[seed.kind], seed.ref_id)  # type: ignore[arg-type]
    out: dict[str, Any] = {"seedId": f"{station_id}-{token}", "musicToken": token}
    if seed.artist is not None:
        out |= {"artistName": seed.artist.name, "artUrl": _art_url(t, seed.picture.artwork)}
    elif seed.track is not None:
        out |= {
            "songName": seed.track.track.title,
            "artistName": seed.track.artist.name,
            "artUrl": _art_url(t, seed.track.album_art),
        }
    elif seed.genre is not None:
        out |= {"genreName": seed.genre.name}
    return out


def _feedback(t: TunerCall, found: stations.FeedbackView, totals: tuple[int, int]) -> dict:
    row, view = found.feedback, found.track
    return {
        "feedbackId": str(row.id),
        "isPositive": row.is_positive,
        "songName": view.track.title,
        "artistName": view.artist.name,
        "albumName": view.album.title,
        "musicToken": ids.music_id("track", view.track.id),
        "albumArtUrl": _art_url(t, view.album_art),
        "dateCreated": _date(row.created_at),
        "totalThumbsUp": totals[0],
        "totalThumbsDown": totals[1],
    }


@method("station.getStation")
def get_station(t: TunerCall) -> dict[str, Any]:
    """A station; with includeExtendedAttributes, its seeds and its thumbs."""
    db, listener = t.call.reader(), t.call.require_listener()
    token = t.text("stationToken", limit=64) or ""
    found = stations.details(db, listener.id, token)
    out = _station(t, found.view)
    if t.flag("includeExtendedAttributes"):
        sid = found.view.station.id
        seeds = [_seed(t, sid, s) for s in found.seeds]
        out["music"] = {
            "artists": [s for s in seeds if s["musicToken"].startswith("R")],
            "songs": [s for s in seeds if s["musicToken"].startswith("S")],
            "genres": [s for s in seeds if s["musicToken"].startswith("G")],
        }
        totals = (found.positive_feedback_count, found.negative_feedback_count)
        thumbs: dict[bool, list[dict[str, Any]]] = {}
        for positive in (True, False):
            _total, views = stations.feedback_page(db, listener.id, token, positive, 0, 1000)
            thumbs[positive] = [_feedback(t, v, totals) for v in views]
        out["feedback"] = {
            "thumbsUp": thumbs[True],
            "thumbsDown": thumbs[False],
            "totalThumbsUp": totals[0],
            "totalThumbsDown": totals[1],
        }
    return out


@method("station.addMusic", writes=True)
def add_music(t: TunerCall) -> dict[str, Any]:
    call = t.call
    station_token = t.text("stationToken", limit=64) or ""
    with call.write() as db:
        seed = stations.add_station_seed(
            db,
            call.require_listener().id,
            station_token,
            None,
            t.text("musicToken", limit=64),
            call.now(),
        )
        station = stations.get_station(db, call.require_listener().id, station_token)
        return _seed(t, station.id, seed)


@method("station.deleteMusic", writes=True)
def delete_music(t: TunerCall) -> None:
    station_id, _, token = (t.text("seedId", limit=128) or "").partition("-")
    if not token:
        raise TunerError(PARAMETER_VALUE_INVALID, "unknown seedId")
    with t.call.write() as db:
        try:
            stations.delete_station_seed(db, t.call.require_listener().id, station_id, None, token)
        except ApiError as error:
            if error.error is ErrorCode.CALL_NOT_ALLOWED:  # the record's "last seed" code
                raise TunerError(1032, error.message) from None
            raise


@method("user.setQuickMix", writes=True)
def set_quick_mix(t: TunerCall) -> None:
    chosen = t.body.get("quickMixStationIds")
    if not isinstance(chosen, list) or not all(isinstance(i, str | int) for i in chosen):
        raise TunerError(PARAMETER_TYPE_MISMATCH, "quickMixStationIds must be a list of ids")
    with t.call.write() as db:
        stations.update_shuffle(
            db, t.call.require_listener().id, [str(i)[:64] for i in chosen], t.call.now()
        )


@method("station.getGenreStations")
def get_genre_stations(t: TunerCall) -> dict[str, Any]:
    categories = _genre_categories(t)
    return {"categories": categories, "checksum": _genre_checksum(categories)}


def _genre_checksum(categories: list[dict[str, Any]]) -> str:
    return hashlib.md5(repr(categories).encode(), usedforsecurity=False).hexdigest()


@method("station.getGenreStationsChecksum")
def get_genre_stations_checksum(t: TunerCall) -> dict[str, Any]:
    return {"checksum": _genre_checksum(_genre_categories(t))}


def _genre_categories(t: TunerCall) -> list[dict[str, Any]]:
    db = t.call.reader()
    out = []
    for name in catalog.genre_categories(db):
        genres = [
            {
                "stationToken": ids.music_id("genre", g.id),  # a musicToken for createStation
                "stationId": ids.music_id("genre", g.id),
                "stationName": g.name,
            }
            for g, _count in catalog.genres_in(db, name)
        ]
        out.append({"categoryName": name, "stations": genres})
    return out


# ---------------------------------------------------------------- playing


def _audio(links: delivery.AudioLinks) -> dict[str, str]:
    encoding = links.encoding
    return {
        "audioUrl": links.audio_url,
        "bitrate": str(PROFILES[encoding].bitrate // 1000) if encoding in PROFILES else "0",
        "encoding": "mp3" if encoding.startswith("mp3") else encoding,
        "protocol": "http",
    }


def _track_item(
    t: TunerCall, item: playlist.TrackItem, issuer: delivery.Issuer, high: str
) -> dict[str, Any]:
    spin, view = item.spin, item.view
    tr, artist, album = view.track, view.artist, view.album
    listener = t.call.require_listener()
    medium = _audio(item.links)
    best = _audio(issuer.track(listener.id, tr.id, spin.id, high))
    seo = ids.seo_token("track", tr.id, artist.name, album.title, tr.title)
    return {
        "trackToken": spin.token,
        "stationId": str(item.station_id),
        "songName": tr.title,
        "artistName": artist.name,
        "albumName": album.title,
        "albumArtUrl": _art_url(t, view.album_art),
        "songDetailUrl": detail_url(t.call, seo),
        # the record's XML document of the song; its last segment is the title's slug, which
        # Pithos compares with songName to skip fetching it
        "songExplorerUrl": f"{t.call.base_url}{SONG_EXPLORER}"
        f"{ids.music_id('track', tr.id)}/{ids.slug(tr.title)}",
        "artistDetailUrl": detail_url(t.call, ids.seo_token("artist", artist.id, artist.name)),
        "albumDetailUrl": detail_url(
            t.call, ids.seo_token("album", album.id, view.album_artist.name, album.title)
        ),
        "musicId": ids.music_id("track", tr.id),
        "songRating": item.rating,
        "trackGain": f"{item.gain if item.gain is not None else 0.0:.2f}",
        "trackLength": round(tr.duration),
        "allowFeedback": item.allow_feedback,
        "audioUrlMap": {"highQuality": best, "mediumQuality": medium, "lowQuality": medium},
        "audioReceiptUrl": item.links.receipt_url,
    }


@method("station.getPlaylist", writes=True)
def get_playlist(t: TunerCall) -> dict[str, Any]:
    """The next tracks of a station: getFragment's rules (engine, skips, active player, ads),
    with the audio URLs the clients choose from."""
    call, listener = t.call, t.call.require_listener()
    assert call.session is not None
    now = call.now()
    high = delivery.encoding_for(call.settings, listener, "mp3-hifi")
    base = audio_base(t)
    result = playlist.serve_fragment(
        call.reader(),
        call.write,
        call.services,
        base,
        listener,
        call.session,
        t.text("stationToken", limit=64) or "",
        "Normal",
        "aacplus",
        now,
    )
    issuer = delivery.Issuer(call.services, base, now)
    items: list[dict[str, Any]] = []
    for item in result.items:
        if isinstance(item, playlist.TrackItem):
            items.append(_track_item(t, item, issuer, high))
        else:  # an ad: clients ask ad.getAdMetadata for it, or skip it
            items.append({"adToken": item.spin.token})
    wanted = t.text("additionalAudioUrl", required=False, limit=512)
    if wanted:
        for entry in items:
            if "audioUrlMap" in entry:
                urls = [_additional(entry["audioUrlMap"], w) for w in wanted.split(",")]
                entry["additionalAudioUrl"] = urls
    return {"items": items}


def _additional(urls: dict[str, dict[str, str]], wanted: str) -> str:
    """additionalAudioUrl asks by format name (HTTP_128_MP3, HTTP_32_AACPLUS, ...)."""
    if "MP3" in wanted.upper():
        return urls["highQuality"]["audioUrl"]
    return urls["mediumQuality"]["audioUrl"]


@method("station.addFeedback", writes=True)
def add_feedback(t: TunerCall) -> dict[str, Any]:
    call, listener = t.call, t.call.require_listener()
    assert call.session is not None
    with call.write() as db:
        found = playlist.thumb(
            db,
            listener.id,
            call.session.id,
            t.text("trackToken", limit=64) or "",
            t.flag("isPositive", default=True),
            call.now(),
        )
        totals = stations.feedback_counts(db, found.feedback.station_id)
        return _feedback(t, found, totals)


@method("station.deleteFeedback", writes=True)
def delete_feedback(t: TunerCall) -> None:
    with t.call.write() as db:
        playlist.unthumb(
            db,
            t.call.require_listener().id,
            t.text("feedbackId", limit=64),
            None,
            t.call.now(),
        )


@method("user.sleepSong", writes=True)
def sleep_song(t: TunerCall) -> None:
    with t.call.write() as db:
        playlist.add_tired(
            db, t.call.require_listener(), t.text("trackToken", limit=64) or "", t.call.now()
        )


@method("track.trackStarted", writes=True)
def track_started(t: TunerCall) -> None:
    call = t.call
    assert call.session is not None
    with call.write() as db:
        playlist.track_started(
            db,
            call.require_listener(),
            call.session,
            t.text("trackToken", limit=64) or "",
            call.now(),
        )


@method("track.explainTrack")
def explain_track(t: TunerCall) -> dict[str, Any]:
    """What the track sounds like and what ties it to its station (playlist/narrative)."""
    db, listener = t.call.reader(), t.call.require_listener()
    spin = spin_by_token(db, listener.id, t.text("trackToken", limit=64) or "", t.call.now())
    station_id = spin.origin_station_id or spin.station_id
    if station_id is None:
        raise ApiError(ErrorCode.STATION_DOES_NOT_EXIST, "the station of that track is deleted")
    told = narrative.explain(db, listener.id, str(station_id), ids.music_id("track", spin.track_id))
    return {
        "explanations": [
            {"focusTraitName": trait, "focusTraitId": f"F{n}"}
            for n, trait in enumerate(told.focus_traits, start=1)
        ]
    }


# ---------------------------------------------------------------- search and bookmarks


@method("music.search")
def music_search(t: TunerCall) -> dict[str, Any]:
    db, listener = t.call.reader(), t.call.require_listener()
    text = t.text("searchText", limit=256) or ""
    found = search.full_search(db, listener.id, text, ["AR", "TR", "GE"], 0, 30)
    artists, songs, genres = [], [], []
    for f in found:
        score = min(100, round(f.score * 25))
        token = ids.music_id({"AR": "artist", "TR": "track", "GE": "genre"}[f.kind], f.ref_id)  # type: ignore[arg-type]
        if f.kind == "AR":
            artists.append(
                {
                    "artistName": f.name,
                    "musicToken": token,
                    "likelyMatch": f.score >= 4,
                    "score": score,
                }
            )
        elif f.kind == "TR":
            songs.append(
                {
                    "songName": f.name,
                    "artistName": f.artist_name or "",
                    "musicToken": token,
                    "score": score,
                }
            )
        elif f.kind == "GE":
            genres.append({"stationName": f.name, "musicToken": token, "score": score})
    return {
        "nearMatchesAvailable": False,
        "explanation": "",
        "artists": artists,
        "songs": songs,
        "genreStations": genres,
    }


def _bookmark(t: TunerCall, view: bookmarks.BookmarkView) -> dict[str, Any]:
    row = view.bookmark
    out: dict[str, Any] = {"bookmarkToken": str(row.id), "dateCreated": _date(row.created_at)}
    if view.track is not None:
        tv: TrackView = view.track
        out |= {
            "songName": tv.track.title,
            "artistName": tv.artist.name,
            "albumName": tv.album.title,
            "musicToken": ids.music_id("track", tv.track.id),
            "artUrl": _art_url(t, tv.album_art),
            "sampleUrl": "",
            "sampleGain": "0.00",
        }
    elif view.artist is not None:
        out |= {
            "artistName": view.artist.artist.name,
            "musicToken": ids.music_id("artist", view.artist.artist.id),
            "artUrl": _art_url(t, view.artist.picture.artwork),
        }
    return out


def _add_bookmark(t: TunerCall, kind: str) -> dict[str, Any]:
    with t.call.write() as db:
        view = bookmarks.add_bookmark(
            db,
            t.call.require_listener().id,
            None,
            None,
            t.text("trackToken", limit=64),
            kind,  # type: ignore[arg-type]
            t.call.now(),
        )
        return _bookmark(t, view)


@method("bookmark.addArtistBookmark", writes=True)
def add_artist_bookmark(t: TunerCall) -> dict[str, Any]:
    return _add_bookmark(t, "artist")


@method("bookmark.addSongBookmark", writes=True)
def add_song_bookmark(t: TunerCall) -> dict[str, Any]:
    return _add_bookmark(t, "track")


@method("user.getBookmarks")
def get_bookmarks(t: TunerCall) -> dict[str, Any]:
    pages = bookmarks.lists(t.call.reader(), t.call.require_listener().id, None, 0, 1000)
    return {
        "artists": [_bookmark(t, v) for v in pages["AR"].items],
        "songs": [_bookmark(t, v) for v in pages["TR"].items],
    }


# ---------------------------------------------------------------- account


@method("user.getSettings")
def get_settings(t: TunerCall) -> dict[str, Any]:
    listener = t.call.require_listener()
    return {
        "username": listener.username,
        "gender": (listener.gender or "").capitalize(),
        "birthYear": listener.birth_year or 0,
        "zipCode": listener.zip_code or "",
        "isProfilePrivate": listener.profile_private,
        "emailOptIn": not listener.email_opt_out,
        "isExplicitContentFilterEnabled": listener.explicit_filter,
        "isExplicitContentFilterPINProtected": listener.explicit_pin_hash is not None,
    }


@method("user.canSubscribe")
def can_subscribe(t: TunerCall) -> dict[str, Any]:
    policy = t.call.settings.tier(t.call.require_listener().tier)
    return {"canSubscribe": False, "isSubscriber": not policy.ads}


@method("test.checkLicensing", auth=False)
def check_licensing(t: TunerCall) -> dict[str, Any]:
    return {"isAllowed": True}


@method("user.getUsageInfo")
def get_usage_info(t: TunerCall) -> dict[str, Any]:
    """The month's listening against the tier's cap (0 hours: no cap)."""
    call, listener = t.call, t.call.require_listener()
    seconds = listening.seconds_this_month(call.reader(), listener.id, call.now())
    cap = call.settings.tier(listener.tier).monthly_listening_cap_hours
    hours = round(seconds / 3600)
    return {
        "accountMonthlyListening": hours,
        "deviceMonthlyListening": hours,
        "monthlyCapHours": cap,
        "monthlyCapWarningPercent": 85,
        "monthlyCapWarningRepeatPercent": 95,
        "isMonthlyPayer": False,
        "isCapped": bool(cap) and seconds >= cap * 3600,
        "listeningTimestamp": int(call.now().timestamp() * 1000),
    }


@method("bookmark.deleteArtistBookmark", writes=True)
def delete_artist_bookmark(t: TunerCall) -> None:
    _delete_bookmark(t)


@method("bookmark.deleteSongBookmark", writes=True)
def delete_song_bookmark(t: TunerCall) -> None:
    _delete_bookmark(t)


def _delete_bookmark(t: TunerCall) -> None:
    with t.call.write() as db:
        bookmarks.delete_bookmark(
            db, t.call.require_listener().id, t.text("bookmarkToken", limit=64), None, None
        )


@method("ad.getAdMetadata")
def get_ad_metadata(t: TunerCall) -> dict[str, Any]:
    """An ad of a playlist (items carry only its adToken): its audio, art and tracking token."""
    call, listener = t.call, t.call.require_listener()
    db, now = call.reader(), call.now()
    token = t.text("adToken", limit=64) or ""
    spin = ads.ad_spin_by_token(db, listener.id, token, now)
    campaign = ads.require_campaign(db, spin.campaign_id)
    issuer = delivery.Issuer(call.services, audio_base(t), now)
    item = ads.ad_item(db, issuer, call.settings, listener, spin, campaign, "aacplus")
    audio = _audio(item.links)
    return {
        "title": campaign.title,
        "companyName": "",
        "clickThroughUrl": campaign.click_url,
        "imageUrl": _art_url(t, item.art),
        "trackGain": "0.00",
        "audioUrlMap": {"highQuality": audio, "mediumQuality": audio, "lowQuality": audio},
        "adTrackingTokens": [token],
    }


@method("ad.registerAd", writes=True)
def register_ad(t: TunerCall) -> None:
    """The ad played: its impression counts (once per token), as ad/registerImpression."""
    tokens = t.body.get("adTrackingTokens")
    if not isinstance(tokens, list) or not all(isinstance(x, str) for x in tokens):
        raise TunerError(PARAMETER_TYPE_MISMATCH, "adTrackingTokens must be a list of strings")
    with t.call.write() as db:
        ads.register_impressions(
            db, t.call.require_listener().id, [x[:64] for x in tokens[:100]], t.call.now()
        )


@method("test.echo", auth=False)
def echo(t: TunerCall) -> dict[str, Any]:
    return {}


# the record's user.changeSettings keys and the listener settings they are
_SETTINGS = {
    "gender": "gender",
    "birthYear": "birth_year",
    "zipCode": "zip_code",
    "isExplicitContentFilterEnabled": "explicit_filter",
}


@method("user.changeSettings", writes=True)
def change_settings(t: TunerCall) -> None:
    """Settings, after the account's password again (listener/updateAccount's rule); a new
    username or password goes through updateAccount's checks."""
    call, listener = t.call, t.call.require_listener()
    assert call.session is not None and call.auth_token is not None
    changes: dict[str, Any] = {
        name: t.body[key] for key, name in _SETTINGS.items() if key in t.body
    }
    if "emailOptIn" in t.body:
        changes["email_opt_out"] = not t.flag("emailOptIn")
    if "isExplicitContentFilterEnabled" in t.body:
        changes["explicit_filter"] = t.flag("isExplicitContentFilterEnabled")
    new_username = t.text("newUsername", required=False, limit=256)
    new_password = t.text("newPassword", required=False, limit=1024)
    if new_username or new_password:
        credentials.update_account(
            call.services,
            listener,
            call.session,
            call.auth_token,
            current_username=t.text("currentUsername", limit=256) or "",
            current_password=t.text("currentPassword", limit=1024) or "",
            new_username=new_username,
            new_password=new_password,
            explicit_filter=None,
            client=credentials.Client(call.client, call.user_agent, None),
        )
    else:
        credentials.confirm_password(
            call.services,
            listener,
            t.text("currentPassword", limit=1024) or "",
            credentials.Client(call.client, call.user_agent, None),
        )
    credentials.update_settings(call.services, listener, changes, None)


@method("user.setExplicitContentFilter", writes=True)
def set_explicit_content_filter(t: TunerCall) -> None:
    """The explicit filter; turning it off needs the PIN when one is set (the REST rule)."""
    call = t.call
    credentials.update_settings(
        call.services,
        call.require_listener(),
        {"explicit_filter": t.flag("isExplicitContentFilterEnabled")},
        t.text("explicitContentFilterPIN", required=False, limit=16),
    )
