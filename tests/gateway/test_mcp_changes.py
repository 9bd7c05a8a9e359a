"""Upstream list changes through the MCP proxy: real processes (official client -> `agentcore gateway serve` over
stdio or streamable HTTP -> an upstream whose tools change), for 2026-07-28 clients (``subscriptions/listen``)
and handshake-era ones (``notifications/tools/list_changed``)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.client.subscriptions import PromptsListChanged, ToolsListChanged

from agentcore.gateway.audit import AuditLog
from agentcore.gateway.db import Database

HERE = Path(__file__).parent
AGENTCORE = str(Path(sys.executable).parent / "agentcore")
POLICY = """policy "shop"
allow shop.open_refunds, shop.close_refunds for users with role "support".
allow shop.refund for users with role "support" when amount is at most 100.
allow shop.wipe_ledger for users with role "admin".
allow prompt.shop.refund_policy for users with role "support".
"""
WAIT_S = 30


def _config(tmp_path: Path, http: bool) -> Path:
    (tmp_path / "shop.policy").write_text(POLICY)
    config = tmp_path / "gateway.toml"
    config.write_text(f"""[gateway]
name = "changes-proxy"
policies = ["{tmp_path / "shop.policy"}"]
database = "{tmp_path / "gw.db"}"
dev_unauthenticated = {str(http).lower()}

[gateway.identity]
principal = "alice"
roles = ["support"]
agent = "desktop-agent"

[[gateway.targets]]
name = "shop"
command = "{sys.executable}"
args = ["{HERE / "mcp_changing_upstream.py"}"]
""")
    return config


@pytest.fixture(params=["stdio", "http"])
def proxy(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    """What ``Client(...)`` connects to: the proxy as its stdio child, or a proxy process serving streamable HTTP."""
    serve = [AGENTCORE, "gateway", "serve", "--config", str(_config(tmp_path, request.param == "http"))]
    if request.param == "stdio":
        yield StdioServerParameters(command=serve[0], args=serve[1:], env=dict(os.environ))
        return
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    process = subprocess.Popen([*serve, "--transport", "http", "--port", str(port)], stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not _listening(port):
            assert process.poll() is None and time.monotonic() < deadline, "the HTTP proxy did not start"
            time.sleep(0.1)
        yield lambda: streamable_http_client(f"http://127.0.0.1:{port}/mcp")
    finally:
        process.terminate()
        process.wait(timeout=10)


def _listening(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


def _connect(proxy: Any, **options: Any) -> Client:
    return Client(proxy if isinstance(proxy, StdioServerParameters) else proxy(), **options)


async def _names(client: Client) -> list[str]:
    return sorted(t.name for t in (await client.list_tools()).tools)


def _text(result: Any) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


def test_a_listening_client_sees_upstream_tools_appear_and_go_policy_checked(tmp_path: Path, proxy: Any) -> None:
    async def main() -> None:
        async with _connect(proxy) as client:
            assert client.server_capabilities.tools is not None and client.server_capabilities.tools.list_changed
            assert await _names(client) == ["shop__close_refunds", "shop__open_refunds"]
            assert "unknown tool" in _text(await client.call_tool("shop__refund", {"order": "o1", "amount": 5}))
            assert (await client.list_prompts()).prompts == []
            async with client.listen(tools_list_changed=True, prompts_list_changed=True) as changes:
                assert not (await client.call_tool("shop__open_refunds", {})).is_error
                with anyio.fail_after(WAIT_S):
                    seen = {type(await changes.__anext__()) for _ in range(2)}
                assert seen == {ToolsListChanged, PromptsListChanged}
                # the new tools are policy-checked: wipe_ledger is admin-only, so alice is not shown it
                assert await _names(client) == ["shop__close_refunds", "shop__open_refunds", "shop__refund"]
                ok = await client.call_tool("shop__refund", {"order": "o1", "amount": 50})
                assert not ok.is_error and _text(ok) == "refunded 50 on o1"
                too_much = await client.call_tool("shop__refund", {"order": "o1", "amount": 500})
                assert too_much.is_error and "denied by policy" in _text(too_much)
                wiped = await client.call_tool("shop__wipe_ledger", {})
                assert wiped.is_error and "denied by policy" in _text(wiped)
                assert [p.name for p in (await client.list_prompts()).prompts] == ["shop__refund_policy"]
                prompt = await client.get_prompt("shop__refund_policy", {"order": "o1"})
                assert "Refund o1 only with a receipt." in prompt.messages[0].content.text

                assert not (await client.call_tool("shop__close_refunds", {})).is_error
                with anyio.fail_after(WAIT_S):
                    assert isinstance(await changes.__anext__(), ToolsListChanged)
                assert await _names(client) == ["shop__close_refunds", "shop__open_refunds"]
                gone = await client.call_tool("shop__refund", {"order": "o1", "amount": 5})
                assert gone.is_error and "unknown tool" in _text(gone)

    anyio.run(main)
    log = AuditLog(Database(str(tmp_path / "gw.db")))
    assert log.verify().ok
    decisions = [(r["tool"], r["effect"]) for r in log.rows() if r["effect"]]
    assert ("shop.refund", "allow") in decisions and ("shop.wipe_ledger", "deny") in decisions


def test_a_handshake_era_client_is_told_on_stdio_and_sees_the_change_at_its_next_listing_over_http(proxy: Any) -> None:
    """On stdio it is told on its connection; over HTTP it has no standing stream here, so the proxy does not
    advertise ``listChanged`` (it would be a promise it cannot keep) and the next listing shows the change."""
    changed = anyio.Event()
    on_stdio = isinstance(proxy, StdioServerParameters)

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changed.set()

    async def main() -> None:
        async with _connect(proxy, mode="legacy", message_handler=on_message) as client:
            assert client.server_capabilities.tools is not None
            assert client.server_capabilities.tools.list_changed is on_stdio
            assert await _names(client) == ["shop__close_refunds", "shop__open_refunds"]
            assert not (await client.call_tool("shop__open_refunds", {})).is_error
            with anyio.fail_after(WAIT_S):
                if on_stdio:
                    await changed.wait()
                while "shop__refund" not in await _names(client):
                    await anyio.sleep(0.1)
            assert changed.is_set() is on_stdio

    anyio.run(main)
