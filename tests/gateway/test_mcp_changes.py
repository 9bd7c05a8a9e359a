"""Upstream list changes through the MCP proxy: real processes (official client -> `agentcore gateway serve` over
stdio -> an upstream whose tools change), for 2026-07-28 clients (``subscriptions/listen``) and handshake-era ones
(``notifications/tools/list_changed``)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp import Client, StdioServerParameters
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


def _proxy(tmp_path: Path) -> StdioServerParameters:
    (tmp_path / "shop.policy").write_text(POLICY)
    config = tmp_path / "gateway.toml"
    config.write_text(f"""[gateway]
name = "changes-proxy"
policies = ["{tmp_path / "shop.policy"}"]
database = "{tmp_path / "gw.db"}"

[gateway.identity]
principal = "alice"
roles = ["support"]
agent = "desktop-agent"

[[gateway.targets]]
name = "shop"
command = "{sys.executable}"
args = ["{HERE / "mcp_changing_upstream.py"}"]
""")
    return StdioServerParameters(
        command=AGENTCORE, args=["gateway", "serve", "--config", str(config)], env=dict(os.environ)
    )


async def _names(client: Client) -> list[str]:
    return sorted(t.name for t in (await client.list_tools()).tools)


def _text(result: Any) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


def test_a_listening_client_sees_upstream_tools_appear_and_go_policy_checked(tmp_path: Path) -> None:
    async def main() -> None:
        async with Client(_proxy(tmp_path)) as client:
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


def test_a_handshake_era_client_gets_the_list_changed_notification(tmp_path: Path) -> None:
    changed = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changed.set()

    async def main() -> None:
        async with Client(_proxy(tmp_path), mode="legacy", message_handler=on_message) as client:
            assert client.server_capabilities.tools is not None and client.server_capabilities.tools.list_changed
            assert await _names(client) == ["shop__close_refunds", "shop__open_refunds"]
            assert not (await client.call_tool("shop__open_refunds", {})).is_error
            with anyio.fail_after(WAIT_S):
                await changed.wait()
            assert "shop__refund" in await _names(client)

    anyio.run(main)
