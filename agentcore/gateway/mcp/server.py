"""The MCP proxy server: tools/list filtered per caller, tools/call enforced by the gateway.

A denial (or pending approval, or argument error) is a tool result with ``isError: true`` and the reason the
model can read, not a protocol error. Identity: from the configured ``identity`` on stdio, from a verified
bearer JWT on HTTP (checked by an ASGI middleware before the MCP layer; bad tokens get 401).
"""

from __future__ import annotations

import asyncio
import functools
import importlib
import importlib.util
import ipaddress
import json
import logging
import uuid
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from contextvars import ContextVar
from typing import Any

import mcp_types as types
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.stdio import stdio_server
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler
from mcp.shared.exceptions import MCPError
from mcp.shared.inbound import x_mcp_header_map
from mcp.shared.subscriptions import ServerEvent, event_to_notification
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from opentelemetry import trace

from agentcore.errors import ConfigError
from agentcore.gateway import canonical
from agentcore.gateway.errors import ApprovalRequired, GatewayError, ToolExecutionError
from agentcore.gateway.gateway import Gateway
from agentcore.gateway.mcp.auth import AuthError, Caller, JwtVerifier
from agentcore.gateway.mcp.config import Identity, ProxyConfig
from agentcore.gateway.mcp.upstream import NOT_A_TOOL, Upstreams, UpstreamToolError
from agentcore.gateway.naming import name_map
from agentcore.policies.model import AgentInfo, Principal
from agentcore.references import load_reference

log = logging.getLogger(__name__)
ASGIApp = Callable[[MutableMapping[str, Any], Any, Any], Awaitable[None]]
# The HTTP caller, for code the SDK runs in the request's task without a request context (the schema lookup).
_http_caller: ContextVar[Caller | None] = ContextVar("agentcore_http_caller", default=None)
APPROVAL_META = "agentcore/approval_id"  # a tools/call ``_meta`` key: run this approved request


class McpProxy:
    """Build from a :class:`ProxyConfig` (or an existing Gateway) and run with :meth:`run_stdio` / :meth:`run_http`."""

    def __init__(self, config: ProxyConfig, gateway: Gateway | None = None) -> None:
        self.config = config
        self.gateway = gateway or Gateway(
            config.policies or None,
            database=config.database,
            state=config.state,
            durability=config.durability,
            outcome_delay_s=config.outcome_delay_s,
            mode=config.mode,
            unicode=config.unicode,
            name=config.name,
            audit_key=config.audit_key_file,
            anchors=config.anchors,
            resolver_timeout_s=config.resolver_timeout_s,
        )
        for spec in config.tools:
            _load_registrar(spec)(self.gateway)
        self.changes = InMemorySubscriptionBus()  # upstream list changes, for the clients' listen streams
        self._stdio_listener: Any = None  # the stdio client's session, when it speaks a pre-2026 protocol
        self.upstreams = Upstreams(self.gateway, config.targets, on_change=self._upstream_changed)
        self._catalog_cache: tuple[int, dict[str, str], frozenset[str]] = (-1, {}, frozenset())
        self._resource_owner: dict[str, str] = {}  # resource URI -> the target that listed it
        self._stdio_session = "stdio-" + uuid.uuid4().hex
        self.server: Server[Any] = Server(
            config.name,
            version="1",
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
            on_list_resources=self._list_resources,
            on_list_resource_templates=self._list_resource_templates,
            on_read_resource=self._read_resource,
            on_list_prompts=self._list_prompts,
            on_get_prompt=self._get_prompt,
            get_tool_input_schema=self._input_schema,
            on_subscriptions_listen=ListenHandler(self.changes),
        )
        self.server.middleware = [  # the SDK's span middleware, found by name: its module is private
            _TracedWhenConfigured(m) if type(m).__name__ == "OpenTelemetryMiddleware" else m
            for m in self.server.middleware
        ]

    # ---- identity and names ---------------------------------------------------------------------------------
    def _caller(self, ctx: Any) -> Caller:
        request = getattr(ctx, "request", None)
        state = getattr(request, "state", None)
        caller: Caller | None = getattr(state, "agentcore_caller", None) if state is not None else None
        if caller is not None:
            return caller
        if self.config.identity is None or request is not None:
            raise AuthError("no caller identity: configure [gateway.identity] for stdio or [gateway.auth] for HTTP")
        return _identity_caller(self.config.identity)

    def _session(self, ctx: Any, caller: Caller) -> str:
        """The key of ``per session`` and ``in the same session`` rules; never shared by two principals.

        stdio: the one connection of this process (its single caller). HTTP: the client's ``Mcp-Session-Id``
        within the authenticated principal (and tenant), or that principal's default session when the client
        sends none; a session id a client copies from another caller is still another session.
        """
        request = getattr(ctx, "request", None)
        if request is None:
            return self._stdio_session
        principal, _, tenant = caller
        return canonical.dumps(["http", tenant, principal.id, request.headers.get("mcp-session-id") or ""])

    def _catalog(self) -> tuple[int, dict[str, str], frozenset[str]]:
        """Registry version, exposed name -> gateway tool name, and the tools whose schema names ``Mcp-Param-*``
        headers (``x-mcp-header``); recomputed only when the registry changed."""
        if self._catalog_cache[0] != self.gateway.registry.version:
            tools = [t for t in self.gateway.registry if NOT_A_TOOL not in t.tags]
            pairs = [(self.upstreams.origin.get(t.name, (None, t.name))[0], t.name) for t in tools]
            exposed = name_map((prefix, name.split(".", 1)[1] if prefix else name) for prefix, name in pairs)
            names = {n: f"{prefix}.{tool}" if prefix else tool for n, (prefix, tool) in exposed.items()}
            headers = frozenset(t.name for t in tools if x_mcp_header_map(t.input_schema))
            self._catalog_cache = (self.gateway.registry.version, names, headers)
        return self._catalog_cache

    def _names(self) -> dict[str, str]:
        """Exposed name -> gateway tool name."""
        return self._catalog()[1]

    def _input_schema(self, exposed: str) -> Mapping[str, Any] | None:
        """The schema the SDK checks a call's ``Mcp-Param-*`` headers against (2026 HTTP requests only).

        Without this the SDK runs a whole ``tools/list`` per ``tools/call`` to find it. Like that listing, a tool
        the caller may not see has no schema here: its call goes on to be denied as a tool result, and a header
        mismatch does not reveal that the tool exists. A schema without ``x-mcp-header`` has nothing to check,
        so most calls skip the visibility check too.
        """
        _, names, with_headers = self._catalog()
        name = names.get(exposed)
        caller = _http_caller.get()
        if name is None or name not in with_headers or caller is None:
            return None
        principal, agent, _ = caller
        if not self.gateway.policy.current().could_allow(principal, agent, name):
            return None
        return self.gateway.registry.get(name).input_schema

    # ---- list changes -----------------------------------------------------------------------------------------
    async def _upstream_changed(self, event: ServerEvent) -> None:
        """Tell the clients an upstream list changed; each re-lists and sees its own view, decided afresh.

        2026-07-28 clients hear it on their ``subscriptions/listen`` streams (stdio and HTTP); a handshake-era
        client on stdio gets ``notifications/*/list_changed`` on its connection. (Handshake-era HTTP clients
        have no standing stream here: they see the change when they list again.)
        """
        await self.changes.publish(event)
        if self._stdio_listener is not None:
            try:
                await self._stdio_listener.send_notification(event_to_notification(event, {}))
            except Exception as error:  # the client went away; nothing to tell
                log.info("could not tell the stdio client its list changed: %s", error)

    def _listed(self, ctx: Any) -> None:
        """Remember the stdio client's session if it speaks a pre-2026 protocol: list changes are sent on it."""
        if getattr(ctx, "request", None) is None and ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            self._stdio_listener = ctx.session

    # ---- handlers -------------------------------------------------------------------------------------------
    async def _list_tools(self, ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        self._listed(ctx)
        principal, agent, _ = self._caller(ctx)
        allowed = {t.name: t for t in self.gateway.list_tools(principal, agent)}
        tools = [
            types.Tool(name=exposed, description=allowed[name].description, input_schema=allowed[name].input_schema)
            for exposed, name in self._names().items()
            if name in allowed
        ]
        return types.ListToolsResult(tools=tools)

    async def _call_tool(self, ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        try:
            principal, agent, tenant = self._caller(ctx)
        except AuthError as error:
            return _error(str(error))
        name = self._names().get(params.name, params.name)
        session = self._session(ctx, (principal, agent, tenant))
        approval_id = (params.meta or {}).get(APPROVAL_META)
        try:
            if approval_id is not None:
                result = await self._approved(str(approval_id), name, (principal, agent, tenant), session)
            else:
                result = await self.gateway.acall(
                    name, params.arguments or {}, principal=principal, agent=agent, session=session, tenant=tenant,
                    approval="raise",
                )  # fmt: skip
        except ApprovalRequired as pending:
            return _error(
                f"Pending human approval ({pending.approval_id}). Once it is approved, make the same call again "
                f'(same arguments, or _meta {{"{APPROVAL_META}": "{pending.approval_id}"}}) to run it and get '
                "its result."
            )
        except ToolExecutionError as error:
            if isinstance(error.__cause__, UpstreamToolError):  # audited as failed; the client sees the upstream's
                return types.CallToolResult.model_validate(error.__cause__.result)
            return _error(str(error))
        except GatewayError as error:
            return _error(getattr(error, "agent_message", str(error)))
        if name in self.upstreams.origin and isinstance(result, dict) and "content" in result:
            return types.CallToolResult.model_validate(result)
        return _wrap(result)

    async def _approved(self, approval_id: str, name: str, caller: Caller, session: str) -> Any:
        """The call of the approval named in ``_meta``, for its requester only: the approved arguments run once;
        after that the stored result comes back.

        An approved request runs as a retry of its call by this caller would: decided for the caller as the
        token names them now, so a role or claim they lost (or one that needs another approver) is not walked
        around by naming the request instead of repeating its arguments."""
        principal, agent, tenant = caller
        approval = await asyncio.to_thread(
            functools.partial(
                self.gateway.approvals.of_requester, approval_id, tool=name, principal=principal, agent=agent,
                session=session, tenant=tenant,
            )
        )  # fmt: skip
        if approval.status == "pending":
            raise ApprovalRequired(approval.tool, approval.id, " and ".join(approval.missing_roles) or None)
        if approval.status == "approved":
            return await self.gateway.acall(
                approval.tool, approval.args, principal=principal, agent=agent, session=session, tenant=tenant,
                approval="raise",
            )  # fmt: skip
        return await self.gateway.approvals.wait(approval_id, 0)

    # ---- resources and prompts: listed per caller, each read or get decided and audited like a tool call -------
    async def _list_resources(self, ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
        self._listed(ctx)
        resources = []
        for target, client in self._readable(ctx):
            listed = (await client.list_resources()).resources
            self._resource_owner.update((str(r.uri), target) for r in listed)
            resources.extend(listed)
        return types.ListResourcesResult(resources=resources)

    async def _list_resource_templates(
        self, ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        templates = [t for _, c in self._readable(ctx) for t in (await c.list_resource_templates()).resource_templates]
        return types.ListResourceTemplatesResult(resource_templates=templates)

    def _readable(self, ctx: Any) -> list[tuple[str, Any]]:
        """(target, client) of the targets whose resources this caller could be allowed to read."""
        principal, agent, _ = self._caller(ctx)
        engine = self.gateway.policy.current()
        return [
            (t, c) for t, c in self.upstreams.resources.items() if engine.could_allow(principal, agent, f"resource.{t}")
        ]

    async def _read_resource(self, ctx: Any, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        uri = str(params.uri)
        targets = list(self.upstreams.resources)
        target = self._resource_owner.get(uri) or (targets[0] if len(targets) == 1 else None)
        if target is None:
            raise MCPError(code=types.INVALID_PARAMS, message=f"unknown resource {uri!r}; list the resources first")
        result = await self._governed(ctx, f"resource.{target}", {"uri": uri})
        return types.ReadResourceResult.model_validate(result)

    async def _list_prompts(self, ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListPromptsResult:
        self._listed(ctx)
        principal, agent, _ = self._caller(ctx)
        engine = self.gateway.policy.current()
        return types.ListPromptsResult(
            prompts=[
                prompt.model_copy(update={"name": exposed})
                for exposed, (action, prompt) in self.upstreams.prompts.items()
                if engine.could_allow(principal, agent, action)
            ]
        )

    async def _get_prompt(self, ctx: Any, params: types.GetPromptRequestParams) -> types.GetPromptResult:
        found = self.upstreams.prompts.get(params.name)
        if found is None:
            raise MCPError(code=types.INVALID_PARAMS, message=f"unknown prompt {params.name!r}")
        result = await self._governed(ctx, found[0], dict(params.arguments or {}))
        return types.GetPromptResult.model_validate(result)

    async def _governed(self, ctx: Any, action: str, arguments: dict[str, Any]) -> Any:
        """Run a resource read or prompt get through the gateway; a denial is an MCP error with the reason."""
        try:
            principal, agent, tenant = caller = self._caller(ctx)
            return await self.gateway.acall(
                action, arguments, principal=principal, agent=agent, session=self._session(ctx, caller),
                tenant=tenant, approval="raise",
            )  # fmt: skip
        except ApprovalRequired as pending:
            raise MCPError(
                code=types.INVALID_REQUEST, message=f"Pending human approval ({pending.approval_id})"
            ) from None
        except GatewayError as error:
            raise MCPError(code=types.INVALID_REQUEST, message=getattr(error, "agent_message", str(error))) from None

    # ---- transports -----------------------------------------------------------------------------------------
    async def run_stdio(self) -> None:
        async with self.upstreams, stdio_server() as (read, write):
            changes = NotificationOptions(prompts_changed=True, resources_changed=True, tools_changed=True)
            await self.server.run(read, write, self.server.create_initialization_options(changes))

    def http_app(self, host: str = "127.0.0.1") -> ASGIApp:
        """The streamable HTTP app at ``/mcp``, behind bearer-JWT verification (or, in loopback development
        mode, every request is the configured identity)."""
        app = self.server.streamable_http_app(host=host, json_response=True)  # no SSE framing per response
        auth = self.config.auth
        if auth is not None:  # read the key only here: stdio never needs it
            verifier = JwtVerifier(auth, unicode=self.gateway.unicode)
            servers = auth.authorization_servers or ([auth.issuer] if auth.issuer else [])
            metadata = {"authorization_servers": servers, "bearer_methods_supported": ["header"],
                        "resource_name": self.config.name}  # fmt: skip
            return _CallerMiddleware(app, verifier.verify, metadata, auth.resource)
        if not self.config.dev_unauthenticated:
            raise ConfigError(
                "serving over HTTP needs [gateway.auth] (bearer JWT settings); for development on this machine "
                "only, set dev_unauthenticated = true with a [gateway.identity]"
            )
        if not _is_loopback(host):
            raise ConfigError(f"dev_unauthenticated serves only loopback addresses (127.0.0.1, ::1), not {host!r}")
        if self.config.identity is None:
            raise ConfigError("dev_unauthenticated needs [gateway.identity]: who every caller is")
        log.warning("serving MCP over HTTP without authentication on %s: every caller is %r (development only)",
                    host, self.config.identity.principal)  # fmt: skip
        caller = _identity_caller(self.config.identity)
        return _CallerMiddleware(app, lambda authorization: caller)

    async def run_http(self, host: str = "127.0.0.1", port: int = 8765) -> None:
        import uvicorn

        try:
            from agentcore.gateway.mcp.front import BoundedHttpTools

            protocol: Any = BoundedHttpTools
        except ImportError:  # pragma: no cover - httptools is in the mcp extra; h11 bounds heads (16 KiB) itself
            protocol = "h11"
        async with self.upstreams:
            config = uvicorn.Config(self.http_app(host), host=host, port=port, log_level="warning", access_log=False,
                                    http=protocol)  # fmt: skip
            await uvicorn.Server(config).serve()


def loop_options() -> dict[str, Any]:
    """``anyio.run`` backend options for serving: uvloop where it is installed (a faster event loop per call)."""
    return {"use_uvloop": importlib.util.find_spec("uvloop") is not None}


class _TracedWhenConfigured:
    """The SDK's span per MCP request, skipped while no OpenTelemetry tracer provider is installed.

    Unconfigured, the span records nothing, yet opening it (and reading trace context from ``_meta``) costs time
    on every call. The provider is looked up per request, so one installed after startup is honoured.
    """

    def __init__(self, traced: Callable[[ServerRequestContext[Any, Any], CallNext], Awaitable[HandlerResult]]) -> None:
        self.traced = traced

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
            return await call_next(ctx)
        return await self.traced(ctx, call_next)


class _CallerMiddleware:
    """Finds the caller before the MCP layer sees the request (``verify`` maps the Authorization header to a
    Caller or raises AuthError: HTTP 401) and hands it to the handlers.

    With ``metadata`` it also serves RFC 9728 Protected Resource Metadata at
    ``/.well-known/oauth-protected-resource[/mcp]`` and names it in each 401, so a client can find the
    authorization server to get a token from.
    """

    def __init__(
        self,
        app: ASGIApp,
        verify: Callable[[str | None], Caller],
        metadata: dict[str, Any] | None = None,
        resource: str | None = None,
    ) -> None:
        self.app = app
        self.verify = verify
        self.metadata = metadata
        self.resource = resource

    async def __call__(self, scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        raw_headers = scope.get("headers") or []
        request_headers = dict(raw_headers)
        if self.metadata is not None and scope["path"].rstrip("/") in _METADATA_PATHS:
            document = {"resource": self._resource(scope, request_headers), **self.metadata}
            await _respond(send, 200, json.dumps(document).encode(), [])
            return
        try:
            if sum(name == b"authorization" for name, _ in raw_headers) > 1:  # which one a front checked is unknown
                raise AuthError("more than one Authorization header: send exactly one bearer token")
            caller = self.verify(request_headers.get(b"authorization", b"").decode("latin-1") or None)
        except AuthError as error:
            log.warning("rejected MCP request: %s", error)
            body = json.dumps({"error": "invalid_token", "error_description": str(error)}).encode()
            challenge = 'Bearer error="invalid_token"'
            if self.metadata is not None:
                base = self._resource(scope, request_headers).removesuffix("/mcp")
                challenge += f', resource_metadata="{base}{_METADATA_PATHS[1]}"'
            await _respond(send, 401, body, [(b"www-authenticate", challenge.encode("latin-1"))])
            return
        scope.setdefault("state", {})["agentcore_caller"] = caller
        scope["user"] = _session_owner(caller)
        token = _http_caller.set(caller)
        try:
            await self.app(scope, receive, send)
        finally:
            _http_caller.reset(token)

    def _resource(self, scope: MutableMapping[str, Any], headers: dict[bytes, bytes]) -> str:
        """The configured resource URL, else this server's ``/mcp`` as the request reached it."""
        if self.resource is not None:
            return self.resource
        host = headers.get(b"host", b"127.0.0.1").decode("latin-1")
        return f"{scope.get('scheme', 'http')}://{host}/mcp"


_METADATA_PATHS = ("/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp")


async def _respond(send: Any, status: int, body: bytes, headers: list[tuple[bytes, bytes]]) -> None:
    headers = [(b"content-type", b"application/json"), *headers]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _session_owner(caller: Caller) -> AuthenticatedUser:
    """The caller as the SDK's session owner: a ``Mcp-Session-Id`` is then served only to the caller (principal,
    agent and tenant) whose request opened it; anyone else gets 404, as for an unknown session.

    Without an owner, the SDK served a session to whoever sent its id, and its responses are routed by JSON-RPC id
    alone: another caller posting the same id while a call was in flight received that call's result.
    """
    principal, agent, tenant = caller
    owner = AccessToken(token="", client_id=agent.id, scopes=[], subject=canonical.dumps([tenant, principal.id]))
    return AuthenticatedUser(owner)


def _identity_caller(identity: Identity) -> Caller:
    principal = Principal(id=identity.principal, roles=frozenset(identity.roles), attributes=identity.attributes)
    return principal, AgentInfo(id=identity.agent), identity.tenant


def _error(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=True)


def _wrap(result: Any) -> types.CallToolResult:
    text = result if isinstance(result, str) else json.dumps(result, default=str)
    structured = result if isinstance(result, dict) else None
    return types.CallToolResult(content=[types.TextContent(text=text)], structured_content=structured)


def _load_registrar(spec: str) -> Callable[[Gateway], Any]:
    """``package.module:function`` -> the function that registers in-process tools on the gateway."""
    function: Callable[[Gateway], Any] = load_reference(spec, "tools entry")
    return function
