"""The proxy's HTTP front (uvicorn's httptools protocol, bounded) on a real uvicorn server and raw sockets:
oversized and unfinished request heads are refused before any application code runs, other clients are served."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip("httptools")

import uvicorn

from agentcore.gateway.mcp import front
from agentcore.gateway.mcp.front import MAX_HEAD_BYTES, BoundedHttpTools

OK = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"


async def _app(scope: Any, receive: Any, send: Any) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
    await send({"type": "http.response.body", "body": b"ok"})


async def _answer(port: int, *parts: bytes) -> bytes:
    """What the server answers to ``parts`` sent in turn, until it closes or the answer is complete."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        for part in parts:
            writer.write(part)
            await writer.drain()
    except ConnectionError:  # refused mid-head: the answer may still be readable
        pass
    answer = b""
    try:
        while not answer.endswith(b"ok") and (chunk := await asyncio.wait_for(reader.read(65536), 10)):
            answer += chunk
    except ConnectionError:
        pass
    writer.close()
    return answer


def _serve(check: Any) -> None:
    async def main() -> None:
        config = uvicorn.Config(_app, host="127.0.0.1", port=0, http=BoundedHttpTools, lifespan="off",
                                log_level="warning")  # fmt: skip
        server = uvicorn.Server(config)
        serving = asyncio.create_task(server.serve())
        while not server.started:
            await asyncio.sleep(0.01)
        port = server.servers[0].sockets[0].getsockname()[1]
        try:
            await check(port)
        finally:
            server.should_exit = True
            await serving

    asyncio.run(main())


def test_an_oversized_head_is_refused_and_others_are_served() -> None:
    async def check(port: int) -> None:
        piece = b"X-Big: " + b"a" * 8192 + b"\r\n"
        endless = [b"GET / HTTP/1.1\r\nHost: x\r\n", *[piece] * (4 * MAX_HEAD_BYTES // len(piece))]
        refused, served = await asyncio.gather(_answer(port, *endless), _answer(port, OK))
        assert refused == b"" or refused.startswith(b"HTTP/1.1 431 Request Header Fields Too Large\r\n")  # or reset
        assert served.startswith(b"HTTP/1.1 200") and served.endswith(b"ok")
        near = b"GET / HTTP/1.1\r\nHost: x\r\nX-Token: " + b"t" * (MAX_HEAD_BYTES - 100) + b"\r\n\r\n"
        assert (await _answer(port, near)).endswith(b"ok")  # a big token within the bound is fine

    _serve(check)


def test_a_head_not_finished_in_time_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(front, "HEAD_TIMEOUT_S", 0.2)

    async def check(port: int) -> None:
        dripping, silent, served = await asyncio.gather(
            _answer(port, b"GET / HTTP/1.1\r\nHost: x\r\nX-Slow: a"), _answer(port), _answer(port, OK)
        )
        assert dripping.startswith(b"HTTP/1.1 408") and silent.startswith(b"HTTP/1.1 408")
        assert served.endswith(b"ok")

    _serve(check)
