"""The gateway as an MCP server: aggregates upstream MCP servers and in-process tools, enforcing policies.

Needs the ``mcp`` extra: ``pip install 'agentcore-governance[mcp]'``.
"""

from __future__ import annotations

from agentcore.gateway.mcp.config import ProxyConfig, load_config
from agentcore.gateway.mcp.server import McpProxy

__all__ = ["McpProxy", "ProxyConfig", "load_config"]
