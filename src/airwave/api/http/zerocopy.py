"""uvicorn's httptools protocol with connection guards and the ASGI zero-copy send extension.

Guards (uvicorn has none of these): a connection must deliver each request head within
`header_timeout` seconds and `MAX_HEAD_BYTES`; when open connections reach the cap the
descriptor limit allows, the oldest idle ones (waiting for a request head, or kept alive between
requests) are dropped to make room; unparsable requests get a 400 in the API's error envelope.

uvicorn (0.54) implements neither `http.response.pathsend` nor `http.response.zerocopysend`, so file
bodies would pass through Python in chunks. On plain-HTTP connections this protocol advertises
`http.response.zerocopysend` in the scope and answers it by handing the file to the kernel: the
transport's buffer is flushed first, then os.sendfile writes straight to the socket, waiting for
writability on a duplicate of the socket descriptor (the transport owns the original). TLS
connections keep the ordinary path (the kernel here does no TLS).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import socket
from collections.abc import Awaitable, Callable
from typing import Any

from uvicorn.protocols.http.httptools_impl import (
    STATUS_LINE,
    HttpToolsProtocol,
    RequestResponseCycle,
)

from airwave.errors import ErrorCode

EXTENSION = "http.response.zerocopysend"
MAX_CALL = 1024 * 1024  # bytes per sendfile call before other connections get a turn
MAX_HEAD_BYTES = 64 * 1024  # request line plus headers

Send = Callable[[Any], Awaitable[None]]
log = logging.getLogger("airwave.server")


class ConnectionGuard:
    """One server's connection bookkeeping: the head deadline and the cap on open connections."""

    def __init__(self, header_timeout: float = 10.0, max_connections: int | None = None) -> None:
        self.header_timeout = header_timeout
        self.max_connections = max_connections
        self.open: set[ZeroCopyHttpToolsProtocol] = set()
        self.idle: dict[ZeroCopyHttpToolsProtocol, None] = {}  # insertion order: longest idle first
        self.dropped = 0

    def opened(self, conn: ZeroCopyHttpToolsProtocol) -> None:
        """Count a new connection, dropping the longest-idle ones while over the cap."""
        self.open.add(conn)
        if self.max_connections is None:
            return
        while len(self.open) > self.max_connections and self.idle:
            oldest = next(iter(self.idle))
            self.forget(oldest)
            oldest.transport.abort()  # frees the descriptor now; an idle peer loses nothing
            self.dropped += 1
            if self.dropped in (1, 10, 100) or self.dropped % 1000 == 0:
                log.warning(
                    "connection limit %d reached: dropped %d idle connection(s) so far",
                    self.max_connections,
                    self.dropped,
                )

    def forget(self, conn: ZeroCopyHttpToolsProtocol) -> None:
        self.open.discard(conn)
        self.idle.pop(conn, None)

    def set_idle(self, conn: ZeroCopyHttpToolsProtocol, idle: bool) -> None:
        self.idle.pop(conn, None)
        if idle and conn in self.open:
            self.idle[conn] = None


_DEFAULT_GUARD = ConnectionGuard()


def _envelope_response(status: int, message: str, extra: bytes = b"") -> bytes:
    """A complete HTTP/1.1 response carrying the §4 error envelope, closing the connection."""
    body = json.dumps(
        {
            "errorCode": ErrorCode.INVALID_REQUEST.code,
            "errorString": ErrorCode.INVALID_REQUEST.name,
            "message": message,
        }
    ).encode()
    return b"".join(
        [
            STATUS_LINE[status],
            extra,
            b"content-type: application/json\r\ncontent-length: ",
            str(len(body)).encode(),
            b"\r\nconnection: close\r\n\r\n",
            body,
        ]
    )


class ZeroCopyHttpToolsProtocol(HttpToolsProtocol):
    """HttpToolsProtocol with connection guards whose plain-HTTP requests may use os.sendfile."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        guard = getattr(self.config, "connection_guard", None)
        self.guard: ConnectionGuard = guard or _DEFAULT_GUARD
        self.in_head = True  # between requests: no request head complete yet
        self.head_bytes = 0
        self.head_timer: asyncio.TimerHandle | None = None
        self.in_message = False  # the parser is inside a request (head or body)

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        # A response leaves in two writes (head, then body): with Nagle's algorithm on, the
        # second waits for the client's delayed ACK of the first (~40 ms). uvloop turns it off
        # on every TCP connection; asyncio's loop only on sockets made with IPPROTO_TCP.
        sock = transport.get_extra_info("socket")
        if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        super().connection_made(transport)
        self.guard.opened(self)
        self.guard.set_idle(self, True)
        self._arm_head_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        self.guard.forget(self)
        self._cancel_head_timer()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self.in_head:
            if self.head_timer is None:  # the first bytes after a keep-alive pause start the clock
                self._arm_head_timer()
            self.head_bytes += len(data)
        super().data_received(data)
        if self.in_head and self.head_bytes > MAX_HEAD_BYTES and not self.transport.is_closing():
            self._reply_and_close(431, f"the request head is larger than {MAX_HEAD_BYTES} bytes")

    def send_400_response(self, msg: str) -> None:
        """The parser refused the bytes: the error envelope, unless a response has begun."""
        cycle = self.cycle
        if cycle is not None and not cycle.response_complete:
            cycle.disconnected = True  # the app, reading a broken body, sees the client leave
            cycle.message_event.set()
            if cycle.response_started:
                self.transport.close()
                return
        self._reply_and_close(400, "the request is not valid HTTP/1.1")

    def on_headers_complete(self) -> None:
        self.in_head = False
        self.head_bytes = 0
        self._cancel_head_timer()
        self.guard.set_idle(self, False)
        super().on_headers_complete()
        cycle = self.cycle
        if cycle is None or cycle.scope is not self.scope or self.scheme != "http":
            return  # an upgrade, or TLS
        if self.transport.get_extra_info("socket") is None:
            return
        self.scope.setdefault("extensions", {})[EXTENSION] = {}  # type: ignore[typeddict-unknown-key]
        cycle.transport = _OneWrite(self.transport)  # type: ignore[assignment]
        cycle.send = _ZeroCopySend(cycle, cycle.send)  # type: ignore[method-assign]

    def on_message_begin(self) -> None:
        self.in_message = True
        super().on_message_begin()

    def on_message_complete(self) -> None:
        self.in_message = False
        super().on_message_complete()
        cycle = self.cycle
        if cycle is not None and cycle.response_complete and not self.transport.is_closing():
            self._await_next_head()  # answered before its body ended (e.g. a 413): now idle

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if self.transport.is_closing() or not (self.cycle is None or self.cycle.response_complete):
            return  # closing, or a pipelined request is being answered now
        if self.in_message:
            return  # the rest of this request's body is still arriving: body bytes, not a head
        self._await_next_head()

    def _await_next_head(self) -> None:
        self.in_head = True  # the keep-alive timer runs until bytes of the next request arrive
        self.guard.set_idle(self, True)

    def _unsupported_upgrade_warning(self) -> None:
        """A request asking to switch protocols (WebSocket, h2c) is answered as the HTTP request
        it also is, which RFC 9110 §7.8 allows: Airwave speaks no other protocol on this port.
        uvicorn logged two warnings for each such request, one telling the operator to install a
        WebSocket library, which is not what is missing."""

    def _arm_head_timer(self) -> None:
        self._cancel_head_timer()
        self.head_timer = self.loop.call_later(self.guard.header_timeout, self._head_timed_out)

    def _cancel_head_timer(self) -> None:
        if self.head_timer is not None:
            self.head_timer.cancel()
            self.head_timer = None

    def _head_timed_out(self) -> None:
        """No complete request head in time: a 408 if the client began one, else a silent close."""
        self.head_timer = None
        if self.transport.is_closing():
            return
        if self.head_bytes:
            limit = self.guard.header_timeout
            self._reply_and_close(408, f"no complete request head within {limit:g} s")
        else:
            self._close()

    def _reply_and_close(self, status: int, message: str) -> None:
        self.in_head = False
        self._cancel_head_timer()
        self.guard.set_idle(self, False)
        defaults = self.server_state.default_headers
        extra = b"".join(name + b": " + value + b"\r\n" for name, value in defaults)
        self.transport.write(_envelope_response(status, message, extra))
        self._close()

    def _close(self) -> None:
        """Close the connection; TLS without waiting for a close_notify the peer may never send."""
        if self.scheme == "https":
            self.loop.call_later(0.5, self.transport.abort)
        self.transport.close()

    def shutdown(self) -> None:
        """Graceful shutdown; an idle TLS connection is cut after a short grace.

        Closing a TLS transport waits for the peer's close_notify, which an idle keep-alive client
        never sends until it reads again, so the server would sit out its whole graceful-shutdown
        timeout.
        """
        super().shutdown()
        if self.scheme == "https" and (self.cycle is None or self.cycle.response_complete):
            self.loop.call_later(0.5, self.transport.abort)


class _OneWrite:
    """A response cycle's transport, on which the response's head waits for its first body bytes
    and leaves with them in one write: a small answer is one TCP segment and one system call, not
    two. A body that does not follow within the same turn of the event loop (a stream still
    starting) finds the head sent at the next turn. Any other use of the transport (close, the
    buffer's size, sendfile's socket) sends a waiting head first."""

    __slots__ = ("head", "holding", "transport")

    def __init__(self, transport: asyncio.Transport) -> None:
        self.transport = transport
        self.holding = False  # the next write is the head
        self.head: bytes | None = None

    def write(self, data: bytes) -> None:
        if self.holding:
            self.holding = False
            self.head = data
            asyncio.get_running_loop().call_soon(self.flush)
            return
        head = self.head
        if head is None:
            self.transport.write(data)
        else:
            self.head = None
            self.transport.writelines((head, data))

    def flush(self) -> None:
        head = self.head
        if head is not None:
            self.head = None
            self.transport.write(head)

    def __getattr__(self, name: str) -> Any:  # noqa: ANN401
        self.flush()
        return getattr(self.transport, name)


class _ZeroCopySend:
    """The cycle's `send`, taking `http.response.zerocopysend` messages too; a response's head
    waits for its body on the cycle's transport (`_OneWrite`)."""

    def __init__(self, cycle: RequestResponseCycle, send: Send) -> None:
        self.cycle = cycle
        self.send = send

    async def __call__(self, message: Any) -> None:
        if message["type"] == "http.response.start":
            transport = self.cycle.transport
            transport.holding = True  # type: ignore[attr-defined]
            try:
                await self.send(message)
            finally:
                transport.holding = False  # type: ignore[attr-defined]
            return
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
            if (
                sent < count
            ):  # the peer left, or the file shrank: the promised length cannot be kept
                cycle.transport.close()
                cycle.disconnected = True
                return
            cycle.expected_content_length -= count
        await self.send(
            {
                "type": "http.response.body",
                "body": b"",
                "more_body": message.get("more_body", False),
            }
        )


async def sendfile(transport: asyncio.Transport, fd: int, offset: int, count: int) -> int:
    """Copy count bytes of fd to the transport's socket in the kernel; returns how many went out."""
    await _flush(transport)
    if transport.is_closing():
        return 0
    loop = asyncio.get_running_loop()
    # A duplicate of the socket: the loop refuses writability waits on the transport's own
    # descriptor,
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
    """Wait until the transport has written everything it buffered (normally only the headers, at
    once)."""
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
