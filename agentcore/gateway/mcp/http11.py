"""A lean HTTP/1.1 transport for the proxy's connections to upstream MCP servers (asyncio + ``httptools``).

Every forwarded call is one POST upstream. httpx2's default transport (httpcore2 over anyio streams, parsed by
h11) spent about a millisecond of CPU on each of them, a fifth of the proxy's cost per call. This transport
gives the MCP client what it uses (GET, POST and DELETE; keep-alive connections per origin; response bodies
streamed as they arrive, for SSE; connect and read timeouts; TLS with httpx2's certificate settings) on asyncio
protocol callbacks with a C parser. :func:`upstream_transport` returns None, meaning httpx2's default, where it
cannot serve: no ``httptools``, no asyncio loop, or an HTTP proxy configured in the environment.
"""

from __future__ import annotations

import asyncio
import ssl
import time
import urllib.request
from collections import deque
from collections.abc import AsyncIterator
from typing import Any, cast

import httpx2

httptools: Any
try:
    import httptools
except ImportError:  # pragma: no cover - httptools is an optional speed-up
    httptools = None

Origin = tuple[bytes, bytes, int]
# An idle connection older than this is closed, not reused: below the 5 s after which common servers (uvicorn's
# default) close idle connections, so a request is not written into a connection the server is closing.
KEEPALIVE_S = 4.0
_MAX_BUFFER = 256 * 1024  # stop reading a response body this far ahead of its consumer
_METHODS = frozenset({"GET", "POST", "DELETE"})  # HEAD would need the parser told that no body follows


def upstream_transport() -> httpx2.AsyncBaseTransport | None:
    """The lean transport, or None where httpx2's default must serve (see the module docstring)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return None  # another async library (trio) or no loop at all
    proxies = urllib.request.getproxies()
    if httptools is None or any(proxies.get(scheme) for scheme in ("http", "https", "all")):
        return None
    return Http11Transport()


class _Connection(asyncio.Protocol):
    """One keep-alive connection: parses each response as bytes arrive and queues its body for the reader."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.parser = httptools.HttpResponseParser(self)
        self.in_flight = False
        self.informational = False
        self.headers: list[tuple[bytes, bytes]] = []
        self.headers_done = False
        self.complete = False
        self.keep_alive = False
        self.chunks: deque[bytes] = deque()
        self.buffered = 0
        self.paused = False
        self.error: Exception | None = None
        self.waiter: asyncio.Future[None] | None = None
        self.idle_since = 0.0

    def start(self, data: bytes) -> None:
        """Send one request; the connection must be idle (no response pending or unread)."""
        assert self.transport is not None
        self.headers, self.headers_done, self.complete, self.keep_alive = [], False, False, False
        self.chunks.clear()  # what a reader left of the previous body
        self.buffered = 0
        if self.paused:
            self.paused = False
            self.transport.resume_reading()
        self.in_flight = True
        self.transport.write(data)

    async def wait(self, timeout: float | None) -> None:
        """Until the parser has news (headers, a body chunk, the end) or the connection failed."""
        if self.error is None:
            self.waiter = asyncio.get_running_loop().create_future()
            try:
                async with asyncio.timeout(timeout):
                    await self.waiter
            except TimeoutError:
                raise httpx2.ReadTimeout("timed out waiting for the upstream response") from None
            finally:
                self.waiter = None
        if self.error is not None:
            raise self.error

    def take(self) -> bytes:
        chunk = self.chunks.popleft()
        self.buffered -= len(chunk)
        if self.paused and self.buffered <= _MAX_BUFFER // 2 and self.transport is not None:
            self.paused = False
            self.transport.resume_reading()
        return chunk

    @property
    def reusable(self) -> bool:
        return self.keep_alive and self.error is None and self.transport is not None and not self.transport.is_closing()

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()
            self.transport = None

    # ---- asyncio.Protocol ---------------------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's transports do not subclass asyncio's

    def data_received(self, data: bytes) -> None:
        if not self.in_flight:
            self._fail(httpx2.RemoteProtocolError("upstream sent bytes while no request was pending"))
            return
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError as error:
            raised = error.__context__  # what a callback raised (httptools keeps it here)
            if not isinstance(raised, httpx2.HTTPError):
                raised = httpx2.RemoteProtocolError(f"malformed HTTP response from upstream: {error}")
            self._fail(raised)

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None
        if self.in_flight and self.headers_done and self._ends_at_eof():
            self.on_message_complete()
        elif self.in_flight:
            self._fail(httpx2.ReadError(f"upstream closed the connection mid-response ({exc or 'EOF'})"))

    # ---- httptools callbacks ------------------------------------------------------------------------------
    def on_message_begin(self) -> None:
        """A response right behind the complete one, in the same read, would be parsed on and its body queued
        as the rest of the first response's: parsing stops here instead, and the connection fails."""
        if not self.in_flight:
            raise httpx2.RemoteProtocolError("upstream sent a second response to one request")

    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers.append((name, value))

    def on_headers_complete(self) -> None:
        if self.parser.get_status_code() < 200:  # 1xx: an interim response, the real one follows
            self.headers, self.informational = [], True
            return
        self.headers_done = True
        self._wake()

    def on_body(self, body: bytes) -> None:
        self.chunks.append(body)
        self.buffered += len(body)
        if self.buffered > _MAX_BUFFER and self.transport is not None and not self.paused:
            self.paused = True
            self.transport.pause_reading()
        self._wake()

    def on_message_complete(self) -> None:
        if self.informational:
            self.informational = False
            return
        self.complete, self.in_flight = True, False
        self.keep_alive = self.transport is not None and self.parser.should_keep_alive()  # valid only in here
        self._wake()

    def _ends_at_eof(self) -> bool:
        """A body with neither length nor chunking ends when the server closes (the parser never sees that)."""
        names = {name.lower() for name, _ in self.headers}
        return b"content-length" not in names and b"transfer-encoding" not in names

    def _wake(self) -> None:
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_result(None)

    def _fail(self, error: Exception) -> None:
        self.error = self.error or error  # the first failure is the cause; the close it forces is not news
        self.close()
        self._wake()


class _Body(httpx2.AsyncByteStream):
    """A response body read off its connection; once fully read the connection goes back to the idle pool."""

    def __init__(self, pool: Http11Transport, origin: Origin, connection: _Connection, timeout: float | None):
        self.pool, self.origin, self.connection, self.timeout = pool, origin, connection, timeout
        self.released = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        connection = self.connection
        try:
            while True:
                while connection.chunks:
                    yield connection.take()
                if connection.complete:
                    break
                await connection.wait(self.timeout)
        except BaseException:
            # Cancelled or failed mid-body: the connection's state is unknown. Unless the body was closed first:
            # a reader that stops early (the SDK, at the SSE event it waited for) closes the response, and this
            # generator is finalized later, when the connection may already carry another request.
            if not self.released:
                self.released = True
                connection.close()
            raise
        await self.aclose()

    async def aclose(self) -> None:
        if not self.released:
            self.released = True
            if self.connection.complete and self.connection.reusable:
                self.pool.release(self.origin, self.connection)
            else:
                self.connection.close()


class Http11Transport(httpx2.AsyncBaseTransport):
    """HTTP/1.1 with keep-alive connections per origin, for the upstream MCP client on asyncio."""

    def __init__(self) -> None:
        self._idle: dict[Origin, list[_Connection]] = {}
        self._ssl_context: ssl.SSLContext | None = None

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        if request.method not in _METHODS:
            raise httpx2.UnsupportedProtocol(f"the upstream transport does not send {request.method} requests")
        url = request.url
        origin = (url.raw_scheme, url.raw_host, url.port or (443 if url.raw_scheme == b"https" else 80))
        timeouts: dict[str, float | None] = request.extensions.get("timeout", {})
        data = _encode(request, await request.aread())
        connection = self._checkout(origin) or await self._connect(origin, timeouts.get("connect"))
        try:
            connection.start(data)
            while not connection.headers_done:
                await connection.wait(timeouts.get("read"))
        except BaseException:
            connection.close()
            raise
        return httpx2.Response(
            status_code=connection.parser.get_status_code(),
            headers=connection.headers,
            stream=_Body(self, origin, connection, timeouts.get("read")),
            extensions={"http_version": b"HTTP/1.1"},
        )

    def release(self, origin: Origin, connection: _Connection) -> None:
        connection.idle_since = time.monotonic()
        self._idle.setdefault(origin, []).append(connection)

    def _checkout(self, origin: Origin) -> _Connection | None:
        idle = self._idle.get(origin)
        now = time.monotonic()
        while idle:
            connection = idle.pop()
            if connection.reusable and now - connection.idle_since < KEEPALIVE_S:
                return connection
            connection.close()
        return None

    async def _connect(self, origin: Origin, timeout: float | None) -> _Connection:
        scheme, host, port = origin
        hostname = host.decode("ascii")
        context = None
        if scheme == b"https":
            context = self._ssl_context = self._ssl_context or httpx2.create_ssl_context()
        try:
            async with asyncio.timeout(timeout):
                _, connection = await asyncio.get_running_loop().create_connection(
                    _Connection, hostname, port, ssl=context, server_hostname=hostname if context else None
                )
        except TimeoutError:
            raise httpx2.ConnectTimeout(f"timed out connecting to {hostname}:{port}") from None
        except OSError as error:
            raise httpx2.ConnectError(f"cannot connect to {hostname}:{port}: {error}") from None
        return connection

    async def aclose(self) -> None:
        for idle in self._idle.values():
            for connection in idle:
                connection.close()
        self._idle.clear()


def _encode(request: httpx2.Request, body: bytes) -> bytes:
    """Request line, headers and body; the body goes with a Content-Length (it is read whole anyway)."""
    lines = [b"%s %s HTTP/1.1" % (request.method.encode("ascii"), request.url.raw_path)]
    for name, value in request.headers.raw:
        if b"\r" in name or b"\n" in name or b"\r" in value or b"\n" in value:
            raise httpx2.LocalProtocolError(f"header {name!r} holds a line break")
        if name.lower() not in (b"content-length", b"transfer-encoding"):
            lines.append(b"%s: %s" % (name, value))
    if body or request.method == "POST":
        lines.append(b"Content-Length: %d" % len(body))
    return b"\r\n".join(lines) + b"\r\n\r\n" + body
