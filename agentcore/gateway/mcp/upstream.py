"""Connections to upstream MCP servers; their tools are registered on the gateway as forwarding tools.

A tool ``lookup`` of target ``crm`` becomes gateway tool ``crm.lookup`` (what policies name) and is exposed to
MCP clients as ``crm__lookup`` (see :mod:`agentcore.gateway.naming`). One client session per target is shared by
all concurrent calls (JSON-RPC multiplexes them).
"""

from __future__ import annotations

import logging
import re
from contextlib import AsyncExitStack
from typing import Any

import httpx2
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from agentcore.gateway.gateway import Gateway
from agentcore.gateway.mcp.config import Target
from agentcore.gateway.mcp.http11 import upstream_transport
from agentcore.gateway.registry import tool_from_callable

log = logging.getLogger(__name__)
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


class Upstreams:
    """Opens every target, registers its tools; ``origin`` maps gateway tool name -> (target, upstream name)."""

    def __init__(self, gateway: Gateway, targets: list[Target]) -> None:
        self.gateway = gateway
        self.targets = targets
        self.origin: dict[str, tuple[str, str]] = {}
        self._stack = AsyncExitStack()

    def _client(self, target: Target) -> Client:
        if target.command is not None:
            params = StdioServerParameters(command=target.command, args=target.args, env=target.env or None)
            return Client(params, cache=None)
        assert target.url is not None
        http = httpx2.AsyncClient(
            headers=target.headers, timeout=httpx2.Timeout(30.0, read=300.0), transport=upstream_transport()
        )
        self._stack.push_async_callback(http.aclose)
        return Client(streamable_http_client(target.url, http_client=http), cache=None)

    async def __aenter__(self) -> Upstreams:
        for target in self.targets:
            client = await self._stack.enter_async_context(self._client(target))
            listed = await client.list_tools()
            for tool in listed.tools:
                name = f"{target.name}.{_UNSAFE.sub('_', tool.name)}"
                self.gateway.registry.add(
                    tool_from_callable(
                        _forwarder(client, tool.name),
                        name=name,
                        description=tool.description or "",
                        schema=tool.input_schema,
                    )
                )
                self.origin[name] = (target.name, tool.name)
            log.info("upstream %s: %d tools", target.name, len(listed.tools))
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._stack.aclose()


class UpstreamToolError(Exception):
    """The upstream tool answered ``isError: true``: the call ran and failed, and is audited as a failure.

    ``result`` is the upstream's tool result, which the proxy passes on to its client.
    """

    def __init__(self, result: dict[str, Any]) -> None:
        self.result = result
        text = " ".join(str(c.get("text", "")) for c in result.get("content", []) if isinstance(c, dict))
        super().__init__(text.strip()[:2000] or "the upstream tool reported an error")


def _forwarder(client: Client, upstream_name: str) -> Any:
    async def forward(**arguments: Any) -> dict[str, Any]:
        result = await client.call_tool(upstream_name, arguments)
        dumped: dict[str, Any] = result.model_dump(mode="json", by_alias=True, exclude_none=True, exclude={"meta"})
        if result.is_error:
            raise UpstreamToolError(dumped)
        return dumped

    return forward
