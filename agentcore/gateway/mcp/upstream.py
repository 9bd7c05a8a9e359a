"""Connections to upstream MCP servers; their tools are registered on the gateway as forwarding tools.

A tool ``lookup`` of target ``crm`` becomes gateway tool ``crm.lookup`` (what policies name) and is exposed to
MCP clients as ``crm__lookup`` (see :mod:`agentcore.gateway.naming`). One client session per target is shared by
all concurrent calls (JSON-RPC multiplexes them).

Resources and prompts are governed the same way through gateway actions that ``tools/list`` never shows:
reading any resource of target ``crm`` is the action ``resource.crm`` with the argument ``uri``, getting its
prompt ``greet`` is ``prompt.crm.greet`` with the prompt's arguments.
"""

from __future__ import annotations

import logging
import re
from contextlib import AsyncExitStack
from functools import partial
from typing import Any

import anyio
import httpx2
import mcp_types as types
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.subscriptions import PromptsListChanged, ServerEvent, ToolsListChanged

from agentcore.gateway.gateway import Gateway
from agentcore.gateway.mcp.changes import ChangeFeed, OnEvent
from agentcore.gateway.mcp.config import Target
from agentcore.gateway.mcp.http11 import upstream_transport
from agentcore.gateway.naming import exposed_name
from agentcore.gateway.registry import tool_from_callable

log = logging.getLogger(__name__)
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
NOT_A_TOOL = "mcp:not-a-tool"  # tag of the gateway actions behind resources and prompts
_BODY_FRAMING = (b"content-encoding", b"content-length", b"transfer-encoding")
_URI_SCHEMA = {"type": "object", "properties": {"uri": {"type": "string"}}, "required": ["uri"]}


class Upstreams:
    """Opens every target, registers its tools; ``origin`` maps gateway tool name -> (target, upstream name).

    While open, each target's list changes are followed (see :mod:`agentcore.gateway.mcp.changes`): its tools and
    prompts are fetched again and the registry is brought in line (new tools added, vanished ones removed,
    changed ones replaced), then ``on_change`` passes the event on to the proxy's own clients. What each caller
    is shown is decided afresh by policy at every listing, so a new tool is listed only to who may call it.
    """

    def __init__(self, gateway: Gateway, targets: list[Target], on_change: OnEvent | None = None) -> None:
        self.gateway = gateway
        self.targets = targets
        self.on_change = on_change
        self.origin: dict[str, tuple[str, str]] = {}
        self.resources: dict[str, Client] = {}  # target -> its client, for the targets that serve resources
        self.prompts: dict[str, tuple[str, types.Prompt]] = {}  # exposed name -> (gateway action, upstream prompt)
        self._stack = AsyncExitStack()

    def _client(self, target: Target, feed: ChangeFeed) -> Client:
        if target.command is not None:
            params = StdioServerParameters(command=target.command, args=target.args, env=target.env or None)
            return Client(params, cache=None, message_handler=feed.message_handler)
        assert target.url is not None
        transport = _AnsweredPosts(upstream_transport() or httpx2.AsyncHTTPTransport())
        http = httpx2.AsyncClient(headers=target.headers, timeout=httpx2.Timeout(30.0, read=300.0), transport=transport)
        self._stack.push_async_callback(http.aclose)
        # Parsed once here: given the text, httpx2 parses it again for every forwarded call (a third of building
        # each request). The transport hands it only to httpx2, which takes either.
        url: Any = httpx2.URL(target.url)
        return Client(streamable_http_client(url, http_client=http), cache=None, message_handler=feed.message_handler)

    async def __aenter__(self) -> Upstreams:
        followed: list[tuple[Client, ChangeFeed]] = []
        for target in self.targets:
            feed = ChangeFeed(target.name)
            client = await self._stack.enter_async_context(self._client(target, feed))
            await self._sync_tools(target.name, client)
            capabilities = client.server_capabilities
            if capabilities.resources is not None:
                self.resources[target.name] = client
                self._register(f"resource.{target.name}", _reader(client), _URI_SCHEMA)
            if capabilities.prompts is not None:
                await self._sync_prompts(target.name, client)
            followed.append((client, feed))
        tasks = await self._stack.enter_async_context(anyio.create_task_group())
        self._stack.callback(tasks.cancel_scope.cancel)  # runs first on exit: the followers stop, then clients close
        for client, feed in followed:
            tasks.start_soon(feed.run, client, partial(self._changed, feed.target, client))
        return self

    async def _changed(self, target: str, client: Client, event: ServerEvent) -> None:
        """Bring the registry in line with what changed upstream, then tell the proxy's clients."""
        if isinstance(event, ToolsListChanged):
            await self._sync_tools(target, client)
        elif isinstance(event, PromptsListChanged) and client.server_capabilities.prompts is not None:
            await self._sync_prompts(target, client)
        if self.on_change is not None:
            await self.on_change(event)

    async def _sync_tools(self, target: str, client: Client) -> None:
        listed = {f"{target}.{_UNSAFE.sub('_', t.name)}": t for t in (await client.list_tools()).tools}
        for name in [n for n, (t, _) in self.origin.items() if t == target and n not in listed]:
            self.gateway.registry.remove(name)
            del self.origin[name]
        for name, tool in listed.items():
            description = tool.description or ""
            known = self.gateway.registry.find(name) if name in self.origin else None
            if known is not None and (known.description, known.input_schema) == (description, tool.input_schema):
                continue
            if known is not None:
                self.gateway.registry.remove(name)
            self.gateway.registry.add(
                tool_from_callable(_forwarder(client, tool.name), name=name, description=description,
                                   schema=tool.input_schema)
            )  # fmt: skip
            self.origin[name] = (target, tool.name)
        log.info("upstream %s: %d tools", target, len(listed))

    async def _sync_prompts(self, target: str, client: Client) -> None:
        prefix = f"prompt.{target}."
        stale = {exposed: action for exposed, (action, _) in self.prompts.items() if action.startswith(prefix)}
        for exposed, action in stale.items():
            self.gateway.registry.remove(action)
            del self.prompts[exposed]
        for prompt in (await client.list_prompts()).prompts:
            action = f"prompt.{target}.{_UNSAFE.sub('_', prompt.name)}"
            self._register(action, _prompter(client, prompt.name), _prompt_schema(prompt))
            self.prompts[exposed_name(prompt.name, target)] = (action, prompt)

    def _register(self, action: str, forward: Any, schema: dict[str, Any]) -> None:
        self.gateway.registry.add(tool_from_callable(forward, name=action, schema=schema, tags=(NOT_A_TOOL,)))

    async def __aexit__(self, *exc: object) -> None:
        await self._stack.aclose()


class _AnsweredPosts(httpx2.AsyncBaseTransport):
    """A POST the upstream never answered (refused, dropped before or within a JSON answer, timed out, malformed)
    gets a 502 with a JSON-RPC error, which the SDK hands to that one call.

    The SDK lets the transport's exception out of the POST's task instead: it ended the client's task group, and
    with it the whole proxy (every client, every target), when one upstream crashed during a call. A JSON answer
    is read whole here for that (the SDK reads it whole anyway); an SSE one is streamed, and the SDK handles its
    failures itself.
    """

    def __init__(self, inner: httpx2.AsyncBaseTransport) -> None:
        self.inner = inner

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        if request.method != "POST":  # the SDK handles a failed GET (listen stream) or DELETE itself
            return await self.inner.handle_async_request(request)
        try:
            response = await self.inner.handle_async_request(request)
            if not response.headers.get("content-type", "").startswith("application/json"):
                return response
            body = await response.aread()
        except httpx2.TransportError as error:
            log.warning("upstream %s: %s: %s", request.url, type(error).__name__, error)
            failure = {"code": types.INTERNAL_ERROR, "message": f"the upstream did not answer ({type(error).__name__})"}
            return httpx2.Response(502, json={"jsonrpc": "2.0", "id": None, "error": failure}, request=request)
        headers = [(k, v) for k, v in response.headers.raw if k.lower() not in _BODY_FRAMING]  # body is decoded
        return httpx2.Response(response.status_code, headers=headers, content=body, request=request)

    async def aclose(self) -> None:
        await self.inner.aclose()


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


def _reader(client: Client) -> Any:
    async def read(uri: str) -> dict[str, Any]:
        return (await client.read_resource(uri)).model_dump(mode="json", by_alias=True, exclude_none=True)

    return read


def _prompter(client: Client, upstream_name: str) -> Any:
    async def get(**arguments: str) -> dict[str, Any]:
        result = await client.get_prompt(upstream_name, arguments)
        return result.model_dump(mode="json", by_alias=True, exclude_none=True)

    return get


def _prompt_schema(prompt: types.Prompt) -> dict[str, Any]:
    """A prompt's arguments as the JSON Schema the gateway validates (all strings, as MCP defines them)."""
    arguments = prompt.arguments or []
    return {
        "type": "object",
        "properties": {a.name: {"type": "string"} for a in arguments},
        "required": [a.name for a in arguments if a.required],
        "additionalProperties": False,
    }
