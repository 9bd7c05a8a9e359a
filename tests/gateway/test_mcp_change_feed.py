"""The proxy's change feed on a handshake-era upstream connection: the SDK's ``notifications/*/list_changed``
reach it through the client's message handler (the 2026-07-28 ``subscriptions/listen`` path runs in
test_mcp_changes.py, with real processes)."""

from __future__ import annotations

import anyio
from mcp import Client
from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.subscriptions import PromptsListChanged, ServerEvent, ToolsListChanged

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
