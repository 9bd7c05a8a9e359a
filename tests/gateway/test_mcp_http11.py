"""The proxy's lean upstream HTTP/1.1 transport against a scripted server: keep-alive reuse, streamed chunked
bodies (SSE), bodies that end at EOF, closed connections, timeouts and refused requests."""

from __future__ import annotations

import asyncio
import gzip
from collections.abc import Awaitable, Callable

import httpx2
import pytest

pytest.importorskip("httptools")

from mcp_types import INTERNAL_ERROR

from agentcore.gateway.mcp.http11 import Http11Transport, upstream_transport
from agentcore.gateway.mcp.upstream import _AnsweredPosts
from tests.gateway.test_mcp import _free_port  # nothing listens there once it returns

BIG = bytes(range(256)) * 4096  # 1 MiB
Handler = Callable[[str, asyncio.StreamWriter], Awaitable[bool]]  # path, writer -> keep the connection open


async def _serve(handler: Handler) -> tuple[asyncio.Server, int, list[int]]:
    """A server that reads one request at a time per connection and lets ``handler`` answer it."""
    connections = [0]

    async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections[0] += 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode().split("\r\n")
                length = next((int(h.split(":")[1]) for h in lines if h.lower().startswith("content-length")), 0)
                await reader.readexactly(length)
                if not await handler(lines[0].split()[1], writer):
                    break
        except asyncio.IncompleteReadError:
            pass
        writer.close()

    server = await asyncio.start_server(connection, "127.0.0.1", 0)
    return server, server.sockets[0].getsockname()[1], connections


def test_keeps_connections_alive_and_streams_chunked_bodies() -> None:
    first_chunk_seen = asyncio.Event()

    async def handler(path: str, writer: asyncio.StreamWriter) -> bool:
        if path == "/big":  # more than the transport buffers ahead of its reader
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(BIG) + BIG)
        elif path == "/json":
            writer.write(b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 12\r\n\r\n{"ok": true}')
        else:  # an SSE response: the second event only once the client has read the first
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
            writer.write(b"b\r\ndata: one\n\n\r\n")
            await first_chunk_seen.wait()
            writer.write(b"b\r\ndata: two\n\n\r\n0\r\n\r\n")
        return True

    async def main() -> None:
        server, port, connections = await _serve(handler)
        async with server, httpx2.AsyncClient(transport=Http11Transport()) as http:
            for _ in range(3):
                response = await http.post(f"http://127.0.0.1:{port}/json", json={"q": 1})
                assert response.status_code == 200 and response.json() == {"ok": True}
            chunks = []
            async with http.stream("GET", f"http://127.0.0.1:{port}/sse") as stream:
                async for chunk in stream.aiter_bytes():
                    chunks.append(chunk)
                    first_chunk_seen.set()
            assert chunks == [b"data: one\n\n", b"data: two\n\n"]
            assert (await http.post(f"http://127.0.0.1:{port}/json", content=b"")).json() == {"ok": True}
            assert (await http.get(f"http://127.0.0.1:{port}/big")).content == BIG
            assert connections[0] == 1

    asyncio.run(main())


def test_a_body_read_in_part_then_closed_leaves_its_reused_connection_alone() -> None:
    """The SDK stops reading an SSE body at the event it waits for and closes the response; the abandoned body
    iterator is finalized later, by which time its connection may carry the next request (a handshake-era
    upstream's POSTs: the one after ``initialize`` failed with "closed the connection mid-response")."""

    async def handler(path: str, writer: asyncio.StreamWriter) -> bool:
        if path == "/sse":  # the whole stream in one write: the response is complete once its first event is read
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
            writer.write(b"b\r\ndata: one\n\n\r\nb\r\ndata: two\n\n\r\n0\r\n\r\n")
        else:
            writer.write(b"HTTP/1.1 202 Accepted\r\nContent-Length: 2\r\n\r\nok")
        return True

    async def main() -> None:
        server, port, connections = await _serve(handler)
        async with server:
            transport = Http11Transport()
            sse = await transport.handle_async_request(httpx2.Request("GET", f"http://127.0.0.1:{port}/sse"))
            assert isinstance(sse.stream, httpx2.AsyncByteStream)
            events = sse.stream.__aiter__()
            assert await events.__anext__() == b"data: one\n\n"
            await sse.aclose()  # the reader is done: the complete response's connection goes back to the pool
            post = asyncio.create_task(
                transport.handle_async_request(httpx2.Request("POST", f"http://127.0.0.1:{port}/n"))
            )
            await asyncio.sleep(0)  # the POST is written on the pooled connection and waits for its answer
            await events.aclose()  # the abandoned iterator is finalized meanwhile
            assert await (await post).aread() == b"ok"
            assert connections[0] == 1
            await transport.aclose()

    asyncio.run(main())


def test_closed_connections_eof_bodies_and_timeouts() -> None:
    async def handler(path: str, writer: asyncio.StreamWriter) -> bool:
        if path == "/eof":  # no length, no chunking: the body ends when the server closes
            writer.write(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nbye")
            return False
        if path == "/slow":
            await asyncio.sleep(5)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi")
        return path != "/then-close"  # closes after a complete keep-alive response

    async def main() -> None:
        server, port, connections = await _serve(handler)
        base = f"http://127.0.0.1:{port}"
        async with server, httpx2.AsyncClient(transport=Http11Transport()) as http:
            assert (await http.get(f"{base}/eof")).text == "bye"
            assert (await http.get(f"{base}/then-close")).text == "hi"
            await asyncio.sleep(0.05)  # the close reaches the idle connection
            assert (await http.delete(f"{base}/ok")).text == "hi"
            assert connections[0] == 3  # neither a closed nor a closing connection was reused
            with pytest.raises(httpx2.ReadTimeout):
                await http.get(f"{base}/slow", timeout=httpx2.Timeout(5.0, read=0.2))
            assert (await http.get(f"{base}/ok")).text == "hi"  # the timed-out connection was dropped
            with pytest.raises(httpx2.LocalProtocolError):
                await http.get(f"{base}/ok", headers={"X-Smuggle": "a\r\nX-Other: b"})
            with pytest.raises(httpx2.UnsupportedProtocol):
                await http.head(f"{base}/ok")
        server.close()
        await server.wait_closed()
        async with httpx2.AsyncClient(transport=Http11Transport()) as http:
            with pytest.raises(httpx2.ConnectError):
                await http.get(f"{base}/ok")

    asyncio.run(main())


def test_malformed_responses_fail_the_request() -> None:
    async def handler(path: str, writer: asyncio.StreamWriter) -> bool:
        if path == "/garbage":
            writer.write(b"NOT HTTP AT ALL\r\n\r\n")
        else:  # promises 10 bytes, sends 2, closes
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhi")
        return False

    async def main() -> None:
        server, port, _ = await _serve(handler)
        async with server, httpx2.AsyncClient(transport=Http11Transport()) as http:
            with pytest.raises(httpx2.RemoteProtocolError):
                await http.get(f"http://127.0.0.1:{port}/garbage")
            with pytest.raises(httpx2.ReadError):
                await http.get(f"http://127.0.0.1:{port}/short")

    asyncio.run(main())


def test_a_second_response_in_the_same_read_fails_the_request() -> None:
    """Parsed on, the forged response's body was queued as the rest of the first one's: b"hiforged"."""

    async def handler(path: str, writer: asyncio.StreamWriter) -> bool:
        if path == "/two":
            writer.write(
                b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhiHTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nforged"
            )
        else:
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        return True

    async def main() -> None:
        server, port, connections = await _serve(handler)
        async with server, httpx2.AsyncClient(transport=Http11Transport()) as http:
            with pytest.raises(httpx2.RemoteProtocolError, match="second response"):
                await http.get(f"http://127.0.0.1:{port}/two")
            assert (await http.get(f"http://127.0.0.1:{port}/ok")).content == b"ok"
            assert connections[0] == 2  # the failed connection was not reused

    asyncio.run(main())


def test_a_post_the_upstream_never_answers_gets_a_json_rpc_error() -> None:
    """What the proxy's upstream clients use: the SDK let such a transport error take the whole proxy down."""
    answer = b'{"jsonrpc":"2.0","id":1,"result":{}}'
    packed = gzip.compress(answer)

    async def handler(path: str, writer: asyncio.StreamWriter) -> bool:
        if path == "/cut":  # promises more JSON than it sends, then closes
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 99\r\n\r\n{")
            return False
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\n")
        writer.write(b"Content-Length: %d\r\n\r\n%s" % (len(packed), packed))
        return True

    async def main() -> None:
        server, port, _ = await _serve(handler)
        async with server, httpx2.AsyncClient(transport=_AnsweredPosts(Http11Transport())) as http:
            for path in ("/cut", "/closed-port"):
                url = f"http://127.0.0.1:{port if path == '/cut' else _free_port()}{path}"
                failed = await http.post(url, json={})
                assert failed.status_code == 502 and failed.json()["error"]["code"] == INTERNAL_ERROR
            assert (await http.post(f"http://127.0.0.1:{port}/ok", json={})).content == answer
            with pytest.raises(httpx2.ConnectError):  # a GET (listen stream) failure is the SDK's to handle
                await http.get(f"http://127.0.0.1:{_free_port()}/")

    asyncio.run(main())


def test_default_transport_where_the_lean_one_cannot_serve(monkeypatch: pytest.MonkeyPatch) -> None:
    for variable in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(variable, raising=False)

    async def chosen() -> httpx2.AsyncBaseTransport | None:
        return upstream_transport()

    assert upstream_transport() is None  # no asyncio loop running
    assert isinstance(asyncio.run(chosen()), Http11Transport)
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    assert asyncio.run(chosen()) is None  # httpx2's default honours the proxy settings
