"""Serving bytes from files over ASGI: validators, 304/206/416, zero-copy when the server offers it.

A complete file goes out through the ASGI `http.response.zerocopysend` extension (os.sendfile in
airwave.api.http.zerocopy) when the server advertises it, else in bounded chunks read by worker
threads; memory stays flat whatever the file size. A file still being written (a transcode in
progress) is streamed as it grows, with chunked transfer coding, until its writer says it is
complete.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from typing import Protocol

import anyio
import anyio.to_thread
from starlette.types import Receive, Scope, Send

from airwave.api.http.headers import request_headers
from airwave.api.http.ranges import (
    RangeNotSatisfiable,
    file_etag,
    http_date,
    if_range_holds,
    not_modified,
    parse_range,
)
from airwave.errors import ApiError, ErrorCode

ZEROCOPY = "http.response.zerocopysend"
CHUNK = 256 * 1024
Headers = list[tuple[bytes, bytes]]


@dataclass
class OpenFile:
    """An open regular file and what its validators are made of; `close()` when done."""

    fd: int
    size: int
    mtime_ns: int

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def open_file(path: str | os.PathLike[str]) -> OpenFile | None:
    """Open a regular file for reading (blocking: call from a worker thread); None if absent or
    not a file."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError, PermissionError):
        return None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        return None
    return OpenFile(fd, st.st_size, st.st_mtime_ns)


# Audio and art URLs are capabilities (signed, or content hashes) that need no cookie: any page may
# read them, so a player that routes <audio crossorigin="anonymous"> through Web Audio, or draws
# covers on a canvas, works from its own origin.
CORS: Headers = [
    (b"access-control-allow-origin", b"*"),
    (b"access-control-expose-headers", b"Content-Length, Content-Range, Accept-Ranges, ETag"),
]


async def send_file(
    scope: Scope,
    receive: Receive,
    send: Send,
    file: OpenFile,
    *,
    content_type: str,
    cache_control: str,
    etag: str | None = None,
) -> None:
    """Answer GET/HEAD with the file: 304 on a matching validator, 206 for one range, or 200; closes
    it.

    An unsatisfiable range raises ApiError (416, before anything was sent) for the caller's
    envelope.
    """
    try:
        headers = request_headers(scope)
        etag = etag or file_etag(file.size, file.mtime_ns)
        modified = file.mtime_ns / 1e9
        common: Headers = [
            *CORS,
            (b"accept-ranges", b"bytes"),
            (b"etag", etag.encode()),
            (b"last-modified", http_date(modified).encode()),
            (b"cache-control", cache_control.encode()),
        ]
        if not_modified(
            headers.get("if-none-match"), headers.get("if-modified-since"), etag, modified
        ):
            await send({"type": "http.response.start", "status": 304, "headers": common})
            await send({"type": "http.response.body", "body": b""})
            return
        part = None
        if "range" in headers and if_range_holds(headers.get("if-range"), etag, modified):
            try:
                part = parse_range(headers["range"], file.size)
            except RangeNotSatisfiable:
                raise ApiError(
                    ErrorCode.INVALID_REQUEST,
                    f"the range is outside the {file.size} bytes of this content",
                    http_status=416,
                    headers={"Content-Range": f"bytes */{file.size}", "Accept-Ranges": "bytes"},
                ) from None
        start, length = (part.start, part.length) if part else (0, file.size)
        response = [
            *common,
            (b"content-type", content_type.encode()),
            (b"content-length", str(length).encode()),
        ]
        if part is not None:
            response.append((b"content-range", part.content_range.encode()))
        await send(
            {"type": "http.response.start", "status": 206 if part else 200, "headers": response}
        )
        if scope["method"] == "HEAD" or length == 0:
            await send({"type": "http.response.body", "body": b""})
            return
        await send_range(scope, receive, send, file.fd, start, length)
    finally:
        file.close()


class Incomplete(Exception):
    """The file ended early or its writer failed: the response is cut off (its end was never
    sent)."""


async def send_range(
    scope: Scope, receive: Receive, send: Send, fd: int, offset: int, count: int
) -> None:
    """Send `count` bytes of fd from `offset` as the rest of the response body."""
    if ZEROCOPY in scope.get("extensions", {}):
        await send(
            {"type": ZEROCOPY, "file": fd, "offset": offset, "count": count, "more_body": False}
        )
        return
    end = offset + count
    short = False
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(_cancel_on_disconnect, receive, tasks.cancel_scope)
        while offset < end:
            data = await anyio.to_thread.run_sync(os.pread, fd, min(CHUNK, end - offset), offset)
            if not data:
                short = True
                break
            offset += len(data)
            await send({"type": "http.response.body", "body": data, "more_body": offset < end})
        tasks.cancel_scope.cancel()
    if short:
        raise Incomplete(f"the file shrank while being sent ({end - offset} bytes short)")


class Growing(Protocol):
    """A file some writer is still appending to."""

    version: int
    state: str
    error: str

    @property
    def finished(self) -> bool: ...

    async def changed(self, seen: int) -> None: ...


async def send_growing(
    scope: Scope,
    receive: Receive,
    send: Send,
    fd: int,
    growing: Growing,
    *,
    content_type: str,
    cache_control: str,
) -> None:
    """200 with the file's bytes as they are written, without Content-Length (chunked); closes fd.

    Raises Incomplete when the writer fails after the first bytes went out: the client then sees a
    transfer that never ended properly rather than a short file that looks whole.
    """
    try:
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [
                    *CORS,
                    (b"content-type", content_type.encode()),
                    (b"accept-ranges", b"bytes"),
                    (b"cache-control", cache_control.encode()),
                ],
            }
        )
        failed = False
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(_cancel_on_disconnect, receive, tasks.cancel_scope)
            position = 0
            while True:
                seen, finished = growing.version, growing.finished
                data = os.pread(fd, CHUNK, position)  # just written: served from the page cache
                if data:
                    position += len(data)
                    await send({"type": "http.response.body", "body": data, "more_body": True})
                    continue
                if finished:
                    failed = growing.state != "done"
                    if not failed:
                        await send({"type": "http.response.body", "body": b"", "more_body": False})
                    break
                await growing.changed(seen)
            tasks.cancel_scope.cancel()
        if failed:
            raise Incomplete(growing.error)
    finally:
        os.close(fd)


async def _cancel_on_disconnect(receive: Receive, scope: anyio.CancelScope) -> None:
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            scope.cancel()
            return
