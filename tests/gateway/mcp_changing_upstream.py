"""A real upstream MCP server (official SDK) whose tool list changes while it runs, for the proxy's tests.

``open_refunds`` adds the tools ``refund`` and ``wipe_ledger`` and the prompt ``refund_policy``; ``close_refunds``
removes ``refund`` again. Each change is announced the SDK's way (``subscriptions/listen`` events on 2026-07-28
connections). Run: ``python mcp_changing_upstream.py`` (stdio).
"""

from __future__ import annotations

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.prompts import Prompt

server = MCPServer("upstream-shop")


def refund(order: str, amount: int) -> str:
    """Refund an order."""
    return f"refunded {amount} on {order}"


def wipe_ledger() -> str:
    """Erase the ledger."""
    return "wiped"


def refund_policy(order: str) -> str:
    """How to decide a refund."""
    return f"Refund {order} only with a receipt."


@server.tool()
async def open_refunds(ctx: Context) -> str:
    """Start offering refunds: two tools appear."""
    server.add_tool(refund)
    server.add_tool(wipe_ledger)
    server.add_prompt(Prompt.from_function(refund_policy))
    await ctx.notify_tools_changed()
    await ctx.notify_prompts_changed()
    return "refunds open"


@server.tool()
async def close_refunds(ctx: Context) -> str:
    """Stop offering refunds: the refund tool goes away."""
    server.remove_tool("refund")
    await ctx.notify_tools_changed()
    return "refunds closed"


if __name__ == "__main__":
    server.run()
