"""The audio routes of spec §8: GET/HEAD /audio/{token}, POST /audio/receipt/{token} and
/audio/skip/{token}.

The token is the credential (no CSRF, no auth header). Every refusal is the §4 envelope. A transcode
that is still being produced is streamed to a plain GET as it grows (200, chunked); a Range (other
than `bytes=0-`), HEAD or an HTTP/1.0 request waits for it to complete and is then served like any
file.
"""

from __future__ import annotations

import logging
import math
import os
import re
import threading
from datetime import datetime
from urllib.parse import parse_qs

import anyio.to_thread
import orjson
from starlette.types import Message, Receive, Scope, Send

from airwave.api.http.files import (
    Incomplete,
    OpenFile,
    open_file,
    send_file,
    send_growing,
)
from airwave.api.http.headers import request_headers
from airwave.api.protocol import read_body, request_id_of, send_error, send_json
from airwave.audio import cache
from airwave.audio.cache import CacheFull, Job, TranscodeCache
from airwave.audio.formats import PROFILES, original_content_type
from airwave.audio.signing import AudioGrant, ReceiptGrant
from airwave.audio.transcode import TranscodeError
from airwave.core import plays
from airwave.core.radio import delivery
from airwave.core.services import Services
from airwave.errors import ApiError, ErrorCode
from airwave.library import containment

log = logging.getLogger("airwave.audio")

_AUDIO = re.compile(r"/audio/([A-Za-z0-9_-]{1,200})(?:\.[A-Za-z0-9]{1,5})?")
_RECEIPT = re.compile(r"/audio/(receipt|skip)/([A-Za-z0-9_-]{1,200})")
_OUTCOMES: dict[str, plays.Outcome] = {"receipt": "completed", "skip": "skipped"}
MAX_RECEIPT_BODY = 4096
WARM_UP_DELAY = 2.0  # seconds after the start before the transcode helpers are warmed up
NO_SPACE_RETRY_AFTER = 60  # seconds a client waits to ask again while the cache's disk is full


class AudioRoutes:
    """ASGI app for /audio/...: signed audio, receipts and skips."""

    def __init__(self, services: Services, roots: containment.Roots) -> None:
        self.services = services
        self.roots = roots  # where track files may really live
        self.cache: TranscodeCache = cache.for_settings(services.settings)
        self._warm_up: threading.Timer | None = None

    def start(self) -> None:
        """At server start: warm up what transcodes need, in the background, once the server
        had a moment to start listening (the warm-up is a process importing PyAV and numpy: on
        a small machine it would hold a core while the workers start). A transcode asked for
        sooner starts what it needs itself."""
        self._warm_up = threading.Timer(WARM_UP_DELAY, self.cache.start)
        self._warm_up.name, self._warm_up.daemon = "transcode-warm-up", True
        self._warm_up.start()

    def close(self) -> None:
        if self._warm_up is not None:
            self._warm_up.cancel()
        self.cache.close()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = False

        async def tracked(message: Message) -> None:
            nonlocal started
            started = True
            await send(message)

        try:
            await self._route(scope, receive, tracked)
        except ApiError as error:
            if not started:
                await send_error(send, error)
        except (
            Incomplete
        ) as exc:  # headers are out: ending without the last chunk tells the client it is short
            log.warning(
                "audio response cut off",
                extra={"request_id": request_id_of(scope), "error": str(exc)},
            )
        except Exception:
            log.exception("unhandled error", extra={"request_id": request_id_of(scope)})
            if not started:
                await send_error(
                    send,
                    ApiError(
                        ErrorCode.SERVER_ERROR, f"internal error; request id {request_id_of(scope)}"
                    ),
                )

    async def _route(self, scope: Scope, receive: Receive, send: Send) -> None:
        path, method = scope["path"], scope["method"]
        match = _RECEIPT.fullmatch(path)
        if match:
            if method != "POST":
                raise ApiError(
                    ErrorCode.METHOD_NOT_ALLOWED, "receipt and skip URLs answer POST", allow="POST"
                )
            await self._receipt(scope, receive, send, _OUTCOMES[match.group(1)], match.group(2))
            return
        match = _AUDIO.fullmatch(path)
        if match is None:
            raise ApiError(ErrorCode.NOT_FOUND, f"nothing at {path[:200]}")
        if method not in ("GET", "HEAD"):
            raise ApiError(
                ErrorCode.METHOD_NOT_ALLOWED, "audio URLs answer GET and HEAD", allow="GET, HEAD"
            )
        now = self.services.clock.now()
        grant = self.services.signer.verify_audio(match.group(1), now)
        scope.setdefault("state", {})["listener_id"] = grant.listener_id
        cache_control = f"private, max-age={max(0, int((grant.expires_at - now).total_seconds()))}"
        original = grant.encoding == "original"
        source, opened = await anyio.to_thread.run_sync(self._source, grant)
        if opened is None:
            raise ApiError(ErrorCode.NOT_FOUND, "the file of this track is missing")
        if original:
            await send_file(
                scope,
                receive,
                send,
                opened,
                content_type=original_content_type(source.path, source.codec),
                cache_control=cache_control,
            )
            return
        opened.close()  # the transcoder reads the (just checked) source itself
        profile = PROFILES[grant.encoding]
        for attempt in (1, 2):
            try:
                found = await self.cache.get(source.path, profile)
            except FileNotFoundError:
                raise ApiError(ErrorCode.NOT_FOUND, "the file of this track is missing") from None
            except CacheFull:
                raise _no_space(grant.encoding) from None
            if isinstance(found, Job):
                with self.cache.listening(found):
                    if _streams_whole(scope):
                        fd = await _first_bytes(found)
                        if fd is not None:
                            await send_growing(
                                scope,
                                receive,
                                send,
                                fd,
                                found,
                                content_type=profile.content_type,
                                cache_control=cache_control,
                            )
                            return
                    try:
                        path = await found.wait()
                    except CacheFull:
                        raise _no_space(grant.encoding) from None
                    except TranscodeError:
                        if attempt == 1 and (found.remote or found.abandoned):
                            # the other process's transcode, or an abandoned one, ended: start
                            # afresh
                            continue
                        raise ApiError(
                            ErrorCode.SERVER_ERROR,  # the cache logged why, once for all waiters
                            f"this track could not be transcoded to {grant.encoding}; "
                            f"request id {request_id_of(scope)}",
                        ) from None
            else:
                path = found
            if await self._send_path(
                scope, receive, send, path, profile.content_type, cache_control
            ):
                return  # else evicted between lookup and open: once more
        raise ApiError(ErrorCode.SERVER_ERROR, "the transcode vanished from the cache; try again")

    def _source(self, grant: AudioGrant) -> tuple[delivery.AudioSource, OpenFile | None]:
        """In a worker thread: the grant's file and that file opened (None if it cannot be).

        A track's file is opened only while it really lies inside the library: one swapped for a
        link out of it after the scan is not served. Ads are the operator's files, opened as is.
        """
        with self.services.database.read() as db:
            source = delivery.audio_source(db, grant, self.services.clock.now())
        if grant.campaign_id is not None:
            return source, open_file(source.path)
        try:
            fd = containment.open_fd(source.path, self.roots, containment.AUDIO_MAX_BYTES)
        except containment.Refused as exc:
            log.warning("refused library file", extra={"path": source.path, "reason": str(exc)})
            return source, None
        except OSError:
            return source, None
        st = os.fstat(fd)
        return source, OpenFile(fd, st.st_size, st.st_mtime_ns)

    async def _send_path(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        path: str | os.PathLike[str],
        content_type: str,
        cache_control: str,
    ) -> bool:
        """Serve a complete file; False, with nothing sent, when there is no such file."""
        opened = await anyio.to_thread.run_sync(open_file, path)
        if opened is None:
            return False
        await send_file(
            scope, receive, send, opened, content_type=content_type, cache_control=cache_control
        )
        return True

    async def _receipt(
        self, scope: Scope, receive: Receive, send: Send, outcome: plays.Outcome, token: str
    ) -> None:
        if self.services.settings.readonly_mode:
            raise ApiError(ErrorCode.READONLY_MODE, "the server is in read-only maintenance mode")
        body = await read_body(receive, None, MAX_RECEIPT_BODY, "a receipt body is at most 4 KiB")
        reported = _reported_seconds(scope, body)
        now = self.services.clock.now()
        grant = self.services.signer.verify_receipt(token, now)
        scope.setdefault("state", {})["listener_id"] = grant.listener_id
        if grant.ad:
            await self._ad_receipt(send, grant, outcome, reported, now)
            return

        def record() -> plays.SpinEnd:
            with self.services.database.write() as db:
                return delivery.settle(db, grant, outcome, reported, now)

        end = await anyio.to_thread.run_sync(record)
        await send_json(
            send,
            200,
            orjson.dumps(
                {
                    "outcome": end.outcome,
                    "secondsPlayed": end.seconds_played,
                    "recorded": end.recorded,
                }
            ),
        )

    async def _ad_receipt(
        self,
        send: Send,
        grant: ReceiptGrant,
        outcome: plays.Outcome,
        reported: float | None,
        now: datetime,
    ) -> None:
        """An ad's receipt counts its impression (once per ad); an ad's skip URL records nothing."""
        from airwave.core.radio import ads

        def record() -> tuple[bool, float]:
            with self.services.database.write() as db:
                return ads.record_receipt(
                    db, grant.listener_id, grant.spin_id, outcome == "completed", now
                )

        counted, duration = await anyio.to_thread.run_sync(record)
        seconds = (
            reported if reported is not None else (duration if outcome == "completed" else 0.0)
        )
        await send_json(
            send,
            200,
            orjson.dumps({"outcome": outcome, "secondsPlayed": seconds, "recorded": counted}),
        )


def _no_space(encoding: str) -> ApiError:
    """The answer while the transcode cache's disk is full: 503, Retry-After; no 500, no hang."""
    log.warning("transcode cache out of disk space", extra={"encoding": encoding})
    return ApiError(
        ErrorCode.SERVER_ERROR,
        f"the server is out of disk space for transcoding to {encoding}; "
        "try again later or ask for the original encoding",
        http_status=503,
        retry_after=NO_SPACE_RETRY_AFTER,
    )


async def _first_bytes(job: Job) -> int | None:
    """A descriptor on the job's part once it holds bytes (so a source that fails at once still gets
    an
    envelope); None when the job finished first."""
    fd = await job.open_part()
    while fd is not None:
        seen = job.version
        if job.finished:
            break
        if os.fstat(fd).st_size:
            return fd
        await job.changed(seen)
    if fd is not None:
        os.close(fd)
    return None


def _streams_whole(scope: Scope) -> bool:
    """Whether a request for a transcode in progress can take it as it grows: a plain HTTP/1.1
    GET."""
    if scope["method"] != "GET" or scope.get("http_version") == "1.0":
        return False
    value = request_headers(scope).get("range")
    return value is None or value.replace(" ", "").lower() == "bytes=0-"


def _reported_seconds(scope: Scope, body: bytes) -> float | None:
    """Seconds played as the client reports them: JSON {"secondsPlayed": n} or ?secondsPlayed= /
    ?elapsed=."""
    value: object = None
    if body.strip():
        try:
            data = orjson.loads(body)
        except orjson.JSONDecodeError:
            raise ApiError(
                ErrorCode.INVALID_REQUEST, "the body must be a JSON object (or empty)"
            ) from None
        if not isinstance(data, dict):
            raise ApiError(ErrorCode.INVALID_REQUEST, "the body must be a JSON object (or empty)")
        value = data.get("secondsPlayed")
    if value is None:
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        raw = (query.get("secondsPlayed") or query.get("elapsed") or [None])[0]
        if raw is not None:
            try:
                value = float(raw)
            except ValueError:
                raise ApiError(
                    ErrorCode.INVALID_REQUEST, "secondsPlayed: must be a number"
                ) from None
    if value is None:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or value < 0
    ):
        raise ApiError(
            ErrorCode.INVALID_REQUEST, "secondsPlayed: must be a number of seconds, 0 or more"
        )
    return float(value)
