"""uvicorn's httptools protocol plus the ASGI zero-copy send extension, done with os.sendfile.

uvicorn (0.54) implements neither `http.response.pathsend` nor `http.response.zerocopysend`, so file
bodies would pass through Python in chunks. On plain-HTTP connections this protocol advertises
`http.response.zerocopysend` in the scope and answers it by handing the file to the kernel: the
transport's buffer is flushed first, then os.sendfile writes straight to the socket, waiting for
writability on a duplicate of the socket descriptor (the transport owns the original). TLS
connections keep the ordinary path (the kernel here does no TLS).
"""

from __future__ import annotations

import asyncio
import os
from typing import Any, Awaitable, Callable

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol, RequestResponseCycle

EXTENSION = "http.response.zerocopysend"
MAX_CALL = 1024 * 1024  # bytes per sendfile call before other connections get a turn

Send = Callable[[Any], Awaitable[None]]


class ZeroCopyHttpToolsProtocol(HttpToolsProtocol):
    """HttpToolsProtocol whose plain-HTTP requests may send file bodies with os.sendfile."""

    def on_headers_complete(self) -> None:
        super().on_headers_complete()
        cycle = self.cycle
        if cycle is None or cycle.scope is not self.scope or self.scheme != "http":
            return  # an upgrade, or TLS
        if self.transport.get_extra_info("socket") is None:
            return
        self.scope.setdefault("extensions", {})[EXTENSION] = {}  # type: ignore[typeddict-unknown-key]
        cycle.send = _ZeroCopySend(cycle, cycle.send)  # type: ignore[method-assign]


    def shutdown(self) -> None:
        """Graceful shutdown; an idle TLS connection is cut after a short grace.

        Closing a TLS transport waits for the peer's close_notify, which an idle keep-alive client never
        sends until it reads again, so the server would sit out its whole graceful-shutdown timeout.
        """
        super().shutdown()
        if self.scheme == "https" and (self.cycle is None or self.cycle.response_complete):
            self.loop.call_later(0.5, self.transport.abort)


class _ZeroCopySend:
    """The cycle's `send`, taking `http.response.zerocopysend` messages too."""

    def __init__(self, cycle: RequestResponseCycle, send: Send) -> None:
        self.cycle = cycle
        self.send = send

    async def __call__(self, message: Any) -> None:
        if message["type"] != EXTENSION:
            await self.send(message)
            return
        cycle = self.cycle
        if cycle.flow.write_paused and not cycle.disconnected:
            await cycle.flow.drain()
        if cycle.disconnected:
            return
        if not cycle.response_started or cycle.response_complete or cycle.chunked_encoding:
            raise RuntimeError("zerocopysend needs a started response with a Content-Length")
        file = message["file"]
        fd = file if isinstance(file, int) else file.fileno()
        offset = message.get("offset")
        if offset is None:
            offset = os.lseek(fd, 0, os.SEEK_CUR)
        count = message.get("count")
        if count is None:
            count = os.fstat(fd).st_size - offset
        if cycle.scope["method"] != "HEAD" and count > 0:
            if count > cycle.expected_content_length:
                raise RuntimeError("Response content longer than Content-Length")
            sent = await sendfile(cycle.transport, fd, offset, count)
            if sent < count:  # the peer left, or the file shrank: the promised length cannot be kept
                cycle.transport.close()
                cycle.disconnected = True
                return
            cycle.expected_content_length -= count
        await self.send({"type": "http.response.body", "body": b"", "more_body": message.get("more_body", False)})


async def sendfile(transport: asyncio.Transport, fd: int, offset: int, count: int) -> int:
    """Copy count bytes of fd to the transport's socket in the kernel; returns how many went out."""
    await _flush(transport)
    if transport.is_closing():
        return 0
    loop = asyncio.get_running_loop()
    # A duplicate of the socket: the loop refuses writability waits on the transport's own descriptor,
    # and should the transport close meanwhile, its number could be reused by another connection.
    sock = os.dup(transport.get_extra_info("socket").fileno())
    sent = 0
    try:
        while sent < count and not transport.is_closing():
            try:
                n = os.sendfile(sock, fd, offset + sent, min(count - sent, MAX_CALL))
            except (BlockingIOError, InterruptedError):
                await _writable(loop, sock)
                continue
            except OSError:  # EPIPE, ECONNRESET: the client went away
                break
            if n == 0:  # end of file before count
                break
            sent += n
            if n == MAX_CALL:
                await asyncio.sleep(0)
    finally:
        os.close(sock)
    return sent


async def _flush(transport: asyncio.Transport) -> None:
    """Wait until the transport has written everything it buffered (normally only the headers, at once)."""
    while transport.get_write_buffer_size() and not transport.is_closing():
        await asyncio.sleep(0.001)


async def _writable(loop: asyncio.AbstractEventLoop, fd: int) -> None:
    future: asyncio.Future[None] = loop.create_future()

    def ready() -> None:
        if not future.done():
            future.set_result(None)

    loop.add_writer(fd, ready)
    try:
        await future
    finally:
        loop.remove_writer(fd)
