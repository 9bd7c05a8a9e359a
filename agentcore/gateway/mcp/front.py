"""The proxy's HTTP/1.1 server protocol: uvicorn's httptools protocol with a bound and a deadline on each request
head.

llhttp puts no limit on a request's header bytes and uvicorn gives a client no deadline to send them, both before
authentication runs: one unauthenticated client grew the proxy by the size of the headers it sent (300 MB from
three connections, freed only when they closed), and a connection that sends nothing, or a byte at a time, held
its socket forever. Here more than :data:`MAX_HEAD_BYTES` received without the head ending gets 431 (a head holds
at most that plus one read of memory), and a head not complete within :data:`HEAD_TIMEOUT_S` of the connection
(or of its first byte, for later requests) gets 408; both close the connection. Bodies are the SDK's to bound
(413 over its limit); idle keep-alive connections are closed by uvicorn.
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

MAX_HEAD_BYTES = 64 * 1024  # request line and headers; a bearer JWT is a few kB
HEAD_TIMEOUT_S = 30.0


class BoundedHttpTools(HttpToolsProtocol):
    """``uvicorn.Config(http=BoundedHttpTools)``: see the module docstring."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._head_bytes: int | None = 0  # None while a request's head is complete (its body may be arriving)
        self._deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._head_bytes is not None:
            self._head_bytes += len(data)
        super().data_received(data)
        if self._head_bytes is not None and self._head_bytes > MAX_HEAD_BYTES:
            self._refuse(b"431 Request Header Fields Too Large")

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._arm()

    def on_headers_complete(self) -> None:
        self._head_bytes = None
        self._disarm()
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self._head_bytes = 0  # what arrives next is the next request's head

    def _arm(self) -> None:
        if self._deadline is None:
            self._deadline = self.loop.call_later(HEAD_TIMEOUT_S, self._refuse, b"408 Request Timeout")

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _refuse(self, status: bytes) -> None:
        """Answer ``status`` (unless an earlier pipelined request's response is being written) and close."""
        self._disarm()
        if self.transport.is_closing():
            return
        if self.cycle is None or self.cycle.response_complete:
            self.transport.write(b"HTTP/1.1 %s\r\ncontent-length: 0\r\nconnection: close\r\n\r\n" % status)
        self.transport.close()
