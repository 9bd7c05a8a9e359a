"""A real upstream MCP server for the proxy tests (official SDK), plus in-process tools for the gateway.

Run: ``python mcp_upstream.py`` (stdio) or ``python mcp_upstream.py PORT`` (streamable HTTP at /mcp).
"""

from __future__ import annotations

import sys
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("upstream-crm")


@server.tool()
def lookup(customer_id: str) -> dict[str, str]:
    """Look up a customer record."""
    return {"id": customer_id, "email": "jane@corp.example", "plan": "gold"}


@server.tool()
def delete_customer(customer_id: str) -> str:
    """Delete a customer."""
    return f"deleted {customer_id}"


@server.tool()
def charge(customer_id: str, amount: int) -> str:
    """Charge a customer's card; the card processor declines every charge (the result has ``isError: true``)."""
    raise ToolError(f"card of {customer_id} declined for {amount}")


@server.resource("docs://handbook")
def handbook() -> str:
    """The support handbook."""
    return "Be kind to customers."


@server.resource("docs://salaries")
def salaries() -> str:
    """Salaries (confidential)."""
    return "everyone: 1,000,000"


@server.prompt()
def greet(name: str) -> str:
    """How to greet a customer."""
    return f"Greet {name} warmly."


def register_local(gateway: Any) -> None:
    """``tools = ["mcp_upstream:register_local"]`` in gateway.toml: an in-process tool next to the upstreams."""

    @gateway.tool(name="calc.add")
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b


if __name__ == "__main__":
    if len(sys.argv) > 1:
        server.run("streamable-http", port=int(sys.argv[1]))
    else:
        server.run()
