"""Following an upstream MCP server's list changes, whichever way its protocol era delivers them.

A 2026-07-28 server sends them only on a ``subscriptions/listen`` stream the client opens; an older (handshake
era) server sends ``notifications/*/list_changed`` on the connection, which reach the client's message handler.
Both become one queue of typed events per target. Events are level triggers ("refetch"), so the queue keeps
each kind once, and a stream that ends (closed or lost) is re-opened with a refetch of everything it covered,
since nothing is replayed.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

import anyio
from mcp import Client
from mcp.client.session import IncomingMessage
from mcp.shared.subscriptions import (
    PromptsListChanged,
    ResourcesListChanged,
    ServerEvent,
    ToolsListChanged,
    event_from_wire,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

log = logging.getLogger(__name__)
OnEvent = Callable[[ServerEvent], Awaitable[None]]
LIST_EVENTS: tuple[ServerEvent, ...] = (ToolsListChanged(), PromptsListChanged(), ResourcesListChanged())
_MAX_DELAY_S = 30.0


class ChangeFeed:
    """The list-change events of one upstream target, in arrival order, each kind pending at most once."""

    def __init__(self, target: str) -> None:
        self.target = target
        self._pending: dict[ServerEvent, None] = {}
        self._wake = anyio.Event()

    def put(self, event: ServerEvent) -> None:
        self._pending[event] = None
        self._wake.set()

    async def message_handler(self, message: IncomingMessage) -> None:
        """The upstream client's message handler: handshake-era change notifications arrive here."""
        if isinstance(message, Exception):
            log.warning("upstream %s: transport error: %s", self.target, message)
            return
        event = event_from_wire(message.method, None)
        if event in LIST_EVENTS:
            self.put(event)

    async def run(self, client: Client, on_event: OnEvent) -> None:
        """Hand every event to ``on_event`` until cancelled; a failing handler is logged, never fatal."""
        async with anyio.create_task_group() as tasks:
            if client.protocol_version in MODERN_PROTOCOL_VERSIONS:
                tasks.start_soon(self._listen, client)
            while True:
                await self._wake.wait()
                self._wake = anyio.Event()
                events, self._pending = list(self._pending), {}
                for event in events:
                    try:
                        await on_event(event)
                    except Exception:  # a refetch that failed must not stop the following ones
                        log.exception("upstream %s: could not apply %s", self.target, type(event).__name__)

    async def _listen(self, client: Client) -> None:
        """Keep a ``subscriptions/listen`` stream open for the kinds the upstream says can change."""
        capabilities = client.server_capabilities
        tools = bool(capabilities.tools and capabilities.tools.list_changed)
        prompts = bool(capabilities.prompts and capabilities.prompts.list_changed)
        resources = bool(capabilities.resources and capabilities.resources.list_changed)
        if not (tools or prompts or resources):
            return
        delay = 1.0
        while True:
            try:
                async with client.listen(
                    tools_list_changed=tools, prompts_list_changed=prompts, resources_list_changed=resources
                ) as subscription:
                    delay = 1.0
                    async for event in subscription:
                        self.put(event)
                log.info("upstream %s: change stream closed; listening again in %.0fs", self.target, delay)
            except Exception as error:  # the stream or the connection dropped
                log.warning("upstream %s: change stream lost (%s); listening again in %.0fs", self.target, error, delay)
            await anyio.sleep(delay)  # closed or lost, nothing is replayed: listen again and refetch all it covers
            delay = min(delay * 2, _MAX_DELAY_S)
            for event, wanted in zip(LIST_EVENTS, (tools, prompts, resources), strict=True):
                if wanted:
                    self.put(event)
