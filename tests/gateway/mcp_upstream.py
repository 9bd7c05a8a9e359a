"""A real upstream MCP server for the proxy tests (official SDK), plus in-process tools for the gateway.

Run: ``python mcp_upstream.py`` (stdio) or ``python mcp_upstream.py PORT`` (streamable HTTP at /mcp).
"""

from __future__ import annotations

import os
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
def card_on_file(customer_id: str) -> dict[str, Any]:
    """The card on file: a card number as a JSON number and as a key, an e-mail with a fullwidth at sign."""
    return {
        "customer": {"id": customer_id, "card": 4000000000000002, "dob": "1990-01-01"},
        "last_charges": {"4000000000000002": [12.5, 4000000000000002.0]},
        "contact": "jane\uff20corp.example",
    }


@server.tool()
def charge(customer_id: str, amount: int = 0) -> str:
    """Charge a customer's card; the processor declines every charge (``isError: true``, its text names the card)."""
    raise ToolError(f"card 4000000000000002 for jane@corp.example declined ({customer_id}, {amount})")


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


@server.tool()
def received(url: str) -> str:
    """Say exactly which text arrived (ASCII escapes), so a test sees what the upstream got."""
    return ascii(url)


@server.tool()
def crash() -> str:
    """Exit this server in the middle of the call (the connection drops before any answer)."""
    os._exit(1)


def register_local(gateway: Any) -> None:
    """``tools = ["mcp_upstream:register_local"]`` in gateway.toml: an in-process tool next to the upstreams."""

    @gateway.tool(name="calc.add")
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @gateway.tool(name="pay.charge")
    def pay_charge(order: str) -> str:
        """Charge an order (always fails, naming the card)."""
        raise ValueError(f"card 4000000000000002 for jane@corp.example declined ({order})")


if __name__ == "__main__":
    if len(sys.argv) > 1:
        server.run("streamable-http", port=int(sys.argv[1]))
    else:
        server.run()
