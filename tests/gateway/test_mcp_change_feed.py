"""The proxy's change feed, in process: handshake-era ``notifications/*/list_changed`` through the client's
message handler, and a 2026-07-28 ``subscriptions/listen`` stream that the upstream ends (the whole path runs in
test_mcp_changes.py, with real processes)."""

from __future__ import annotations

from typing import Any

import anyio
import mcp_types as types
from mcp import Client
from mcp.server.lowlevel import Server
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler
from mcp.shared.subscriptions import PromptsListChanged, ServerEvent, ToolsListChanged
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from agentcore.gateway.mcp.changes import ChangeFeed


def test_handshake_era_notifications_reach_the_feed_as_events() -> None:
    upstream = MCPServer("legacy-upstream")

    @upstream.tool()
    async def shuffle(ctx: Context) -> str:
        """Change the lists, announcing it the handshake era's way."""
        await ctx.session.send_tool_list_changed()
        await ctx.session.send_prompt_list_changed()
        return "shuffled"

    seen: list[ServerEvent] = []
    both = anyio.Event()

    async def on_event(event: ServerEvent) -> None:
        seen.append(event)
        if {type(e) for e in seen} == {ToolsListChanged, PromptsListChanged}:
            both.set()

    async def main() -> None:
        feed = ChangeFeed("legacy")
        async with (
            Client(upstream, mode="legacy", message_handler=feed.message_handler) as client,
            anyio.create_task_group() as tasks,
        ):
            tasks.start_soon(feed.run, client, on_event)
            assert not (await client.call_tool("shuffle", {})).is_error
            with anyio.fail_after(10):
                await both.wait()
            tasks.cancel_scope.cancel()

    anyio.run(main)
    assert sorted(type(e).__name__ for e in seen) == ["PromptsListChanged", "ToolsListChanged"]


def test_a_closed_listen_stream_is_opened_again_with_a_refetch() -> None:
    bus = InMemorySubscriptionBus()
    listen = ListenHandler(bus)

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[])

    upstream: Server[Any] = Server("modern-upstream", on_list_tools=list_tools, on_subscriptions_listen=listen)
    seen: list[ServerEvent] = []
    arrived = anyio.Event()

    async def on_event(event: ServerEvent) -> None:
        seen.append(event)
        arrived.set()

    async def next_event(publish: bool = False) -> ServerEvent:
        """The next event the feed hands on; with ``publish``, the upstream publishes until one arrives (its
        stream may still be opening)."""
        nonlocal arrived
        with anyio.fail_after(10):
            while not arrived.is_set():
                if publish:
                    await bus.publish(ToolsListChanged())
                with anyio.move_on_after(0.05):
                    await arrived.wait()
        arrived = anyio.Event()
        return seen.pop(0)

    async def main() -> None:
        feed = ChangeFeed("modern")
        async with Client(upstream) as client, anyio.create_task_group() as tasks:
            assert client.protocol_version in MODERN_PROTOCOL_VERSIONS
            tasks.start_soon(feed.run, client, on_event)
            assert await next_event(publish=True) == ToolsListChanged()  # through the listen stream
            listen.close()  # the upstream ends every stream
            assert await next_event() == ToolsListChanged()  # the feed's own refetch: nothing was replayed
            assert await next_event(publish=True) == ToolsListChanged()  # it listens again: the new stream delivers
            tasks.cancel_scope.cancel()

    anyio.run(main)
