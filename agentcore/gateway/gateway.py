"""The Gateway: every tool call is resolved, validated, decided, (approved,) executed, redacted and audited.

Order follows DESIGN.md §2. Anything that goes wrong before execution denies the call (fail closed) and is
audited. No tool runs before its allow decision is committed (a ``decision`` record, outcome ``started``); its
outcome is a second record, committed before the caller gets the result (DESIGN.md §8.2): an outcome that cannot
be recorded raises :class:`OutcomeNotRecorded` with the result, never a bare database error that invites a retry,
and waits in memory to be appended on the next write, by ``flush()`` or at ``close()``. ``outcome_delay_s > 0``
opts out of that wait: the outcome rides in the next commit (the next call's ``started`` record, or the audit's
flusher within the delay), a crash in between leaves the call "started, outcome unknown" (as a crash while the tool
ran does), and a refused write is retried but no longer surfaced to the caller.

Under a bundle with stateful rules the decision is taken again inside the state store's atomic section for the
call's keys, and the call is reserved in the history there, before it runs (see :mod:`.state`).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
import logging
import reprlib
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import TypeAdapter, ValidationError

from agentcore.errors import ConfigError
from agentcore.gateway.anchors import AnchorSink, open_sink
from agentcore.gateway.approval_flow import Approvals
from agentcore.gateway.approvals import Approval
from agentcore.gateway.audit import AuditEvent, AuditLog, Joined, new_call_id
from agentcore.gateway.audit_keys import KeySource, load_chain_keys
from agentcore.gateway.cancellation import in_thread, to_thread_settled
from agentcore.gateway.canonical import MAX_INT_BITS, ArgumentLimits, UnicodeMode
from agentcore.gateway.context import GatewayContext, ledger_spend
from agentcore.gateway.db import Database, Durability
from agentcore.gateway.erasure import ForgetReport, forget_subject
from agentcore.gateway.errors import (
    ApprovalError,
    ApprovalRequired,
    GatewayError,
    OutcomeNotRecorded,
    ToolArgumentError,
    ToolDenied,
    ToolExecutionError,
    UnknownToolError,
)
from agentcore.gateway.history import history_scopes
from agentcore.gateway.identity import (
    ANY_TENANT,
    AgentLike,
    PrincipalLike,
    TenantFilter,
    as_agent,
    as_principal,
    principal_fields,
)
from agentcore.gateway.obligations import redaction_for
from agentcore.gateway.otel_setup import configure_from_env
from agentcore.gateway.policy_source import PolicySource, PolicyStatus
from agentcore.gateway.redaction import Redaction
from agentcore.gateway.registry import Tool, ToolRegistry, tool_from_callable
from agentcore.gateway.schema import ensure_schema
from agentcore.gateway.state import CallRecord, SqlStateStore, StateKeys, StateView, open_store
from agentcore.gateway.status import StatusBoard
from agentcore.gateway.telemetry import GatewayTelemetry, current_call
from agentcore.policies.context import scope_key
from agentcore.policies.engine import PolicyEngine
from agentcore.policies.model import Decision, Effect, IdentityString, Principal, Reason, Request, TenantString
from agentcore.text import canonical_text, printable

if TYPE_CHECKING:
    from opentelemetry.metrics import MeterProvider
    from opentelemetry.trace import TracerProvider

    from agentcore.accel.ledger import Ledger
    from agentcore.accel.runtime import Receipt

log = logging.getLogger(__name__)

Mode = Literal["enforce", "monitor"]
ApprovalMode = Literal["raise", "wait"]


class _Held(threading.local):
    held = False


class _CallerMistake(Exception):
    """Carries a programming error of the Python caller out of admission, so that it is audited, then raised."""

    def __init__(self, error: TypeError | ValueError) -> None:
        super().__init__(str(error))
        self.error = error


@dataclass
class _Plan:
    """An admitted call: everything needed to execute it and record the outcome."""

    event: dict[str, Any]  # the call's audit fields (call_id, tool, principal, agent, ..., bundle_hash)
    tool: Tool
    kwargs: dict[str, Any]
    request: Request
    redaction: Redaction
    detail: dict[str, Any]  # the decision's audit detail
    approval_id: str | None = None
    reserved: CallRecord | None = None  # its place in the history of stateful rules, given back if it fails


class Gateway:
    """Enforces policies on tool calls made in-process (``call``/``acall``), by adapters and by the MCP proxy.

    ``policies``: a .policy file, a folder, a list of them, or a built engine; ``None`` or an empty folder denies
    everything. ``database``: SQLAlchemy URL or SQLite path (default ``.agentcore/agentcore.db``). ``state``:
    where stateful rules keep counts (default the database; ``redis://...`` for several processes).
    ``ledger``: the accel cost ledger that budget rules (``accelerator spend of user today``) read.
    ``durability``: ``"process"`` (default) audit records survive a crash of the process, ``"power"`` also a
    power loss (fsync per commit). Either way an allowed decision is committed before its tool runs.
    ``outcome_delay_s``: ``0`` (default) commits an executed call's outcome record before the call returns; a
    positive delay lets it wait that long after the call returned for a commit to share (one commit per call
    instead of two, but a failure to record it is no longer the caller's error). ``flush()`` commits it at once.
    ``audit_key``: the chain's HMAC keys (key file path, ``ChainKeys`` or a callback; default
    ``AGENTCORE_AUDIT_KEY_FILE`` / ``AGENTCORE_AUDIT_KEY``). ``anchors``: where signed checkpoints go (a JSONL path
    or an ``AnchorSink``; default ``AGENTCORE_AUDIT_ANCHORS``).
    ``resolver_timeout_s``: the deadline of each resolver lookup; a late one fails closed like a failing one.
    ``unicode``: text in arguments and identities that is not in canonical form (NFKC, no invisible or bidi
    control characters) is ``"canonicalize"``-d (default: the tool receives the text the policy decided on) or
    ``"reject"``-ed (ToolArgumentError, or ToolDenied for an identity).
    ``tracer_provider`` / ``meter_provider``: where the gateway's spans and metrics go (default the global
    OpenTelemetry providers, which the standard ``OTEL_*`` variables configure; nothing is recorded without one).
    """

    def __init__(
        self,
        policies: PolicyEngine | str | Path | Sequence[str | Path] | None = None,
        *,
        database: str | None = None,
        state: str | None = None,
        durability: Durability = "process",
        outcome_delay_s: float = 0,
        mode: Mode = "enforce",
        approval_mode: ApprovalMode = "raise",
        approval_ttl_s: float = 86400.0,
        approval_timeout_s: float = 300.0,
        limits: ArgumentLimits | None = None,
        unicode: UnicodeMode = "canonicalize",
        reload: bool = True,
        name: str = "gateway",
        ledger: Ledger | None = None,
        audit_key: KeySource | None = None,
        anchors: AnchorSink | str | Path | None = None,
        resolver_timeout_s: float = 5.0,
        tracer_provider: TracerProvider | None = None,
        meter_provider: MeterProvider | None = None,
    ) -> None:
        if mode not in ("enforce", "monitor"):
            raise ValueError(f"mode must be 'enforce' or 'monitor', not {mode!r}")
        if approval_mode not in ("raise", "wait"):
            raise ValueError(f"approval_mode must be 'raise' or 'wait', not {approval_mode!r}")
        if not resolver_timeout_s > 0:
            raise ValueError(f"resolver_timeout_s must be a positive number of seconds, not {resolver_timeout_s!r}")
        if not outcome_delay_s >= 0:
            raise ValueError(f"outcome_delay_s must be zero or a positive number of seconds, not {outcome_delay_s!r}")
        if unicode not in ("canonicalize", "reject"):
            raise ValueError(f"unicode must be 'canonicalize' or 'reject', not {unicode!r}")
        self.name = name
        self.mode: Mode = mode
        self.approval_mode: ApprovalMode = approval_mode
        self.approval_ttl_s = approval_ttl_s
        self.approval_timeout_s = approval_timeout_s
        self.limits = limits or ArgumentLimits()
        self.unicode: UnicodeMode = unicode
        self.outcome_delay_s = outcome_delay_s
        self._validation = {"unicode": unicode} if unicode == "reject" else None  # Request's validation context
        self.policy = PolicySource(policies, reload=reload, on_change=self._publish)  # first: a bad path writes nothing
        configure_from_env()
        self.telemetry = GatewayTelemetry(tracer_provider, meter_provider)
        self.db = Database(database, durability=durability)
        ensure_schema(self.db)
        self.board = StatusBoard(self.db)
        keys = load_chain_keys(audit_key)
        self.audit = AuditLog(self.db, keys=keys, anchors=open_sink(anchors), defer_s=outcome_delay_s or 0.005)
        self.audit.observe = self.telemetry.audit_written
        self.store = open_store(state, self.db)
        self.context = GatewayContext(self.store, resolver_timeout_s)
        self._tool_threads = concurrent.futures.ThreadPoolExecutor(64, thread_name_prefix="agentcore-tool")
        self.ledger = ledger
        if ledger is not None:
            self.context.spend_source = ledger_spend(ledger)
        self.registry = ToolRegistry()
        self.approvals = Approvals(self)
        self.telemetry.watch_approvals(name, self.approvals.store)
        self._pending: deque[Callable[[], Any]] = deque()  # outcome writes the database refused, oldest first
        self._pending_lock = threading.Lock()
        self._in_flight = 0  # acalls between admission and outcome: one alone may run its steps on the loop
        self._in_flight_lock = threading.Lock()
        self._on_loop = _Held()  # per thread: is it in a step of _without_waiting, holding the audit's lead?
        self._publish(self.policy.status)

    def _publish(self, status: PolicyStatus) -> None:
        self.board.publish(self.name, self.mode, status)

    # ---- registration -------------------------------------------------------------------------------------
    def tool(
        self,
        func: Callable[..., Any] | None = None,
        *,
        name: str | None = None,
        description: str | None = None,
        schema: Mapping[str, Any] | None = None,
        timeout: float | None = None,
        tags: tuple[str, ...] = (),
    ) -> Any:
        """Register a sync or async callable: ``@gw.tool`` or ``@gw.tool(name="crm.lookup", schema={...})``."""

        def register(fn: Callable[..., Any]) -> Callable[..., Any]:
            self.registry.add(
                tool_from_callable(fn, name=name, description=description, schema=schema, timeout=timeout, tags=tags)
            )
            return fn

        return register(func) if func is not None else register

    def resolver(self, entity: str) -> Callable[[Callable[[Any], Any]], Callable[[Any], Any]]:
        """Register the loader behind ``entity(key).attr`` conditions: ``@gw.resolver("order")``."""

        def register(fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
            self.context.resolvers[entity] = fn
            return fn

        return register

    def detector(self, name: str) -> Callable[[Callable[[str], float]], Callable[[str], float]]:
        """Register a guardrail detector (text -> score in [0, 1]) for ``score of`` conditions."""

        def register(fn: Callable[[str], float]) -> Callable[[str], float]:
            self.context.detectors[name] = fn
            return fn

        return register

    def list_tools(self, principal: PrincipalLike, agent: AgentLike = None) -> list[Tool]:
        """Tools this principal could ever be allowed to call (the engine's permissive partial evaluation).

        AgentCore lists a tool when *any* caller could be permitted; this lists it only when *this* one could.
        """
        who, bot = as_principal(principal), as_agent(agent)
        engine = self.policy.current()
        return [t for t in self.registry if engine.could_allow(who, bot, t.name)]

    # ---- calls ----------------------------------------------------------------------------------------------
    def call(
        self,
        name: str,
        args: Mapping[str, Any] | None = None,
        *,
        principal: PrincipalLike,
        agent: AgentLike = None,
        session: str | None = None,
        tenant: str | None = None,
        approval: ApprovalMode | None = None,
    ) -> Any:
        """Run one tool call under policy; raise ToolDenied / ApprovalRequired / ToolArgumentError / ..."""
        observed = self.telemetry.tool_call(name, session)
        if observed is None:
            return self._call(name, args, principal, agent, session, tenant, approval)
        with observed:
            return self._call(name, args, principal, agent, session, tenant, approval)

    def _call(
        self,
        name: str,
        args: Mapping[str, Any] | None,
        principal: PrincipalLike,
        agent: AgentLike,
        session: str | None,
        tenant: str | None,
        approval: ApprovalMode | None,
    ) -> Any:
        tool = self.registry.find(name)
        if tool is not None and tool.is_async and _loop_running():  # a programming error, not a tool failure
            mistake = TypeError(f"tool {name!r} is async and this thread runs an event loop: use `await gw.acall(...)`")
            self._record(self._event(name, principal, session, tenant), "deny", "invalid", {"error": str(mistake)})
            raise mistake
        plan = self._admit(name, args, principal, agent, session, tenant)
        if isinstance(plan, Approval):
            return self.approvals.wait_sync(self._awaited(plan, approval).id, self.approval_timeout_s)
        return self._run_sync(plan)

    async def acall(
        self,
        name: str,
        args: Mapping[str, Any] | None = None,
        *,
        principal: PrincipalLike,
        agent: AgentLike = None,
        session: str | None = None,
        tenant: str | None = None,
        approval: ApprovalMode | None = None,
        approval_timeout_s: float | None = None,
    ) -> Any:
        """Async ``call``; in ``wait`` approval mode it waits (up to the timeout) for a human decision.

        Sync tools run in threads, and so do admission (resolvers, state and audit reads and writes) and the
        outcome's record, so one slow call never holds up the event loop that serves every other caller. The
        exception is a step that cannot wait (see ``_without_waiting``): it runs on the loop, sparing two thread
        hand-offs per call.
        """
        observed = self.telemetry.tool_call(name, session)
        if observed is None:
            return await self._acall(name, args, principal, agent, session, tenant, approval, approval_timeout_s)
        with observed:
            return await self._acall(name, args, principal, agent, session, tenant, approval, approval_timeout_s)

    async def _acall(
        self,
        name: str,
        args: Mapping[str, Any] | None,
        principal: PrincipalLike,
        agent: AgentLike,
        session: str | None,
        tenant: str | None,
        approval: ApprovalMode | None,
        approval_timeout_s: float | None,
    ) -> Any:
        with self._in_flight_lock:
            self._in_flight += 1
        try:
            with self._without_waiting() as now:
                plan = self._admit(name, args, principal, agent, session, tenant) if now else None
            if plan is None:
                admit = functools.partial(self._admit, name, args, principal, agent, session, tenant)
                plan = await to_thread_settled(admit, self._abandoned)
            if not isinstance(plan, Approval):
                return await self._run_async(plan)
            pending = self._awaited(plan, approval)
        finally:
            with self._in_flight_lock:
                self._in_flight -= 1
        return await self.approvals.wait(pending.id, approval_timeout_s or self.approval_timeout_s)

    def decide(
        self,
        name: str,
        args: Mapping[str, Any] | None = None,
        *,
        principal: PrincipalLike,
        agent: AgentLike = None,
        session: str | None = None,
        tenant: str | None = None,
    ) -> Decision:
        """Dry run for UIs and planning agents: the policy's decision on this call now, and its reasons.

        Nothing runs, nothing is reserved, no approval is requested and nothing is audited (the audit log records
        calls, not questions). The effect is the policy's even in monitor mode; rate limits appear in
        ``obligations`` but their remaining capacity is only checked by a real call. An unknown tool or invalid
        arguments raise ``UnknownToolError`` / ``ToolArgumentError`` (``ToolDenied`` for a tool this caller could
        never be allowed), as ``call`` does.
        """
        try:
            _, _, request = self._request(name, args, principal, agent, session, tenant)
        except _CallerMistake as mistake:
            raise mistake.error from mistake.__cause__
        return self.policy.current().decide(request, self.context)

    def _awaited(self, pending: Approval, approval: ApprovalMode | None) -> Approval:
        """The request to wait for, or (a retried call, approved already) to execute; in ``raise`` mode a pending
        one raises ApprovalRequired with its id."""
        if pending.status == "pending" and (approval or self.approval_mode) == "raise":
            raise ApprovalRequired(pending.tool, pending.id, " and ".join(pending.missing_roles) or None)
        return pending

    # ---- the seam of gw.approvals: a claimed request is decided again, with the approval, and run ---------
    def run_approved(self, approval: Approval) -> Any:
        """Run the call of a claimed approval (``gw.approvals.execute``); a deny added meanwhile still wins."""
        observed = self.telemetry.tool_call(approval.tool, approval.session)
        if observed is None:
            return self._run_sync(self._readmit(approval))
        with observed:
            return self._run_sync(self._readmit(approval))

    async def arun_approved(self, approval: Approval) -> Any:
        observed = self.telemetry.tool_call(approval.tool, approval.session)
        readmit = functools.partial(self._readmit, approval)
        if observed is None:
            return await self._run_async(await to_thread_settled(readmit, self._abandoned))
        with observed:
            return await self._run_async(await to_thread_settled(readmit, self._abandoned))

    def _abandoned(self, plan: _Plan | Approval) -> None:
        """Settle a call admitted in a thread for an ``acall`` cancelled meanwhile: its tool never runs, so it is
        recorded ``cancelled`` and its reservation given back (and its approval settled as failed). A pending
        approval request it made stays pending, as any unanswered request does."""
        if isinstance(plan, _Plan):
            self._settle(plan, "cancelled", {"error": _NOT_RUN}, _NOT_RUN, plan.reserved)

    def _readmit(self, approval: Approval) -> _Plan:
        principal = Principal.model_validate(approval.principal)
        plan = self._admit(
            approval.tool, approval.args, principal, approval.agent, approval.session, approval.tenant, approval
        )
        if isinstance(plan, Approval):  # pragma: no cover - admission with an approval never asks for another
            raise ApprovalError(f"approval {approval.id} could not be executed")
        return plan

    # ---- admission: resolve, validate, decide, approvals, reservations; fail closed -------------------------
    def _admit(
        self,
        name: str,
        args: Mapping[str, Any] | None,
        principal: PrincipalLike,
        agent: AgentLike,
        session: str | None,
        tenant: str | None,
        approved: Approval | None = None,
    ) -> _Plan | Approval:
        event = self._event(name, principal, session, tenant)
        try:
            tool, kwargs, request = self._request(name, args, principal, agent, session, tenant)
            event.update(principal=request.principal.id, agent=request.agent.id, session=request.context.session_id,
                         tenant=request.context.tenant)  # fmt: skip
            engine = self.policy.current()
            scopes = history_scopes(engine)
            context = self.context.for_call() if scopes else self.context
            decision = engine.decide(request, context)
        except (UnknownToolError, ToolArgumentError, ToolDenied, _CallerMistake) as exc:
            self._record(event, "deny", "invalid", {"error": str(exc), "args": _preview(args)})
            if isinstance(exc, _CallerMistake):
                raise exc.error from exc.__cause__
            raise
        except Exception as exc:  # fail closed: any error before execution is a DENY
            raise self._fail_closed(event, exc, args) from exc
        except BaseException as exc:  # KeyboardInterrupt, SystemExit: nothing runs, the attempt is recorded
            interrupted = {"error": f"interrupted by {type(exc).__name__}", "args": _preview(args)}
            self._record(event, "deny", "error", interrupted)
            raise
        reserved: CallRecord | None = None
        try:
            plan: _Plan | Approval | None = None
            if scopes and self._runs(decision, approved):
                keys = {scope: key for scope in scopes if (key := scope_key(request, scope)) is not None}
                request, decision, reserved, plan = self._decide_atomically(
                    event, engine, context, request, tool=tool, kwargs=kwargs, approved=approved, keys=keys
                )
            if plan is None:
                plan = self._apply(event, tool, kwargs, request, decision, approved)
                if isinstance(plan, _Plan):  # durable before it runs; if this commit fails, nothing runs
                    self._record(event, "allow", "started", plan.detail)
            if isinstance(plan, _Plan):
                plan.reserved = reserved
            return plan
        except BaseException as exc:
            if reserved is not None:
                self._release(reserved)
            if isinstance(exc, ToolDenied) or not isinstance(exc, Exception):
                raise
            # state store, approval store or audit database unavailable: deny, never run unchecked
            raise self._fail_closed(event, exc, args) from exc

    @staticmethod
    def _event(name: Any, principal: Any, session: Any, tenant: Any) -> dict[str, Any]:
        """A new call's audit fields, as the caller sent them until the request is validated."""
        who = principal.get("id") if isinstance(principal, Mapping) else getattr(principal, "id", principal)
        return {"call_id": new_call_id(), "tool": _label(name), "principal": _label(str(who)),
                "session": _label(session), "tenant": _label(tenant)}  # fmt: skip

    def _request(
        self,
        name: str,
        args: Mapping[str, Any] | None,
        principal: PrincipalLike,
        agent: AgentLike,
        session: str | None,
        tenant: str | None,
    ) -> tuple[Tool, dict[str, Any], Request]:
        """Resolve the tool and canonicalise and validate the arguments: (tool, its keyword arguments, the request
        to decide), the request's identities canonical (or refused under ``unicode="reject"``: ToolDenied).

        An unknown name suggests only tools this caller may see; invalid arguments of a tool this caller could
        never be allowed are denied as its valid ones would be, not described. A malformed identity is the Python
        caller's mistake: ``_CallerMistake`` carries the TypeError/ValueError.
        """
        try:
            tool = self.registry.get(name)
        except UnknownToolError:
            raise UnknownToolError(str(name)[:200], self._visible(principal, agent)) from None
        try:
            canon, kwargs = tool.validate(args if args is not None else {}, self.limits, self.unicode)
        except ToolArgumentError:
            if tool.name not in self._visible(principal, agent):  # what its schema wants is not theirs to learn
                raise ToolDenied(tool.name, []) from None
            raise
        try:
            fields = {
                "principal": principal_fields(principal),
                "agent": as_agent(agent),
                "action": tool.name,
                "resource": self.name,
                "args": canon,
                "context": {"session_id": session, "tenant": tenant},
            }
            request = Request.model_validate(fields, context=self._validation)  # one validation for all the parts
        except TypeError as exc:
            raise _CallerMistake(exc) from exc
        except ValidationError as exc:
            refused = [e for e in exc.errors() if e["type"] == "noncanonical_text"]
            if refused:
                reason = f"the caller's identity is not in canonical form: {_problems(refused)}"
                raise ToolDenied(tool.name, [reason]) from None
            mistake = ValueError(
                f"invalid caller identity: {_problems(exc.errors())}; pass principal= a user id, a Principal or a "
                "mapping with 'id' (and optional 'roles', 'attributes'), agent= likewise, session= and tenant= as str"
            )
            raise _CallerMistake(mistake) from exc
        return tool, kwargs, request

    def _visible(self, principal: PrincipalLike, agent: AgentLike) -> list[str]:
        """Names of the tools this caller may see; none when the caller cannot even be identified."""
        try:
            return [tool.name for tool in self.list_tools(principal, agent)]
        except Exception:
            return []

    def _runs(self, decision: Decision, approved: Approval | None) -> bool:
        """Will the call execute if nothing else goes wrong? (In monitor mode every call does.)"""
        effect = decision.effect
        return self.mode == "monitor" or effect is Effect.ALLOW or (effect is Effect.NEEDS_APPROVAL and bool(approved))

    def _decide_atomically(
        self,
        event: dict[str, Any],
        engine: PolicyEngine,
        context: GatewayContext,
        request: Request,
        *,
        tool: Tool,
        kwargs: dict[str, Any],
        approved: Approval | None,
        keys: StateKeys,
    ) -> tuple[Request, Decision, CallRecord | None, _Plan | None]:
        """Decide again over the locked history of the call's state keys (of the scopes the bundle reads), at the
        store's time, and reserve the call there when it will run: check and reservation are one atomic step.

        A plainly allowed call whose section is a transaction on the audit's database gets its plan here, and its
        ``started`` record is written in that transaction: one commit makes the reservation and the decision
        durable together (or neither). The audit's lock is held until the rows are noted as committed."""
        shared = isinstance(self.store, SqlStateStore) and self.store.db is self.audit.db
        with self.audit.db.lock if shared else contextlib.nullcontext():
            with self.store.atomic(keys) as view:
                at = datetime.fromtimestamp(view.now, tz=UTC)
                request = request.model_copy(update={"context": request.context.model_copy(update={"time": at})})
                decision = engine.decide(request, context.over(view))
                if not self._runs(decision, approved):
                    return request, decision, None, None
                call = self._reservation(event["call_id"], tool, request, view.now)
                view.reserve(call)
                started = self._started_within(view, event, tool, kwargs, request, decision, approved)
            if started is None:
                return request, decision, call, None
            plan, joined = started
            self.audit.committed(joined)
        return request, decision, call, plan

    def _started_within(
        self,
        view: StateView,
        event: dict[str, Any],
        tool: Tool,
        kwargs: dict[str, Any],
        request: Request,
        decision: Decision,
        approved: Approval | None,
    ) -> tuple[_Plan, Joined] | None:
        """The plan of a plainly allowed call and its ``started`` record, written in the section's transaction;
        ``None`` when that cannot be (another store, an approval, monitor mode, waiting outcomes, an unknown
        sealing key, a redaction that fails to build): the caller then takes the usual path."""
        if approved is not None or self.mode != "enforce" or decision.effect is not Effect.ALLOW or self._pending:
            return None
        cursor = view.transaction(self.audit.db)
        if cursor is None or not self.audit.can_join(request.principal.id, request.context.tenant):
            return None
        try:
            redaction_for(decision.obligations)
        except Exception:  # _apply records the denial, outside the section
            return None
        plan = self._apply(event, tool, kwargs, request, decision, None)  # an enforced ALLOW: it writes nothing
        if not isinstance(plan, _Plan):  # pragma: no cover - an enforced ALLOW always gives a plan
            raise GatewayError(f"call {event['call_id']}: an allowed call gave no plan")
        return plan, self.audit.append_within(cursor, self._decision(event, "allow", "started", plan.detail))

    @staticmethod
    def _reservation(call_id: str, tool: Tool, request: Request, now: float) -> CallRecord:
        """The call as the history of stateful rules keeps it, at the store's time."""
        return CallRecord(
            call_id=call_id,
            ts=now,
            tool=tool.name,
            user=request.principal.id,
            agent=request.agent.id,
            session=request.context.session_id,
            tenant=request.context.tenant,
            args=request.args,
        )

    def _release(self, call: CallRecord) -> None:
        try:
            self.store.release(call)
        except Exception:  # the call did not run; it counts against its caps until the store takes the release
            log.exception("gateway: could not release the reservation of call %s", call.call_id)

    def _fail_closed(self, event: dict[str, Any], exc: Exception, args: Any) -> ToolDenied:
        log.exception("gateway: error while deciding %s", event["tool"])
        reason = f"internal error while deciding: {type(exc).__name__}: {exc}"
        try:
            self._record(event, "deny", "error", {"error": reason, "args": _preview(args)})
        except Exception:  # the audit database is down too: still deny (nothing ran), loudly in the log
            log.exception("gateway: could not audit the denial of call %s", event["call_id"])
        return ToolDenied(event["tool"], [reason], audit_id=event["call_id"], internal=True)

    def _apply(
        self,
        event: dict[str, Any],
        tool: Tool,
        kwargs: dict[str, Any],
        request: Request,
        decision: Decision,
        approved: Approval | None,
    ) -> _Plan | Approval:
        detail: dict[str, Any] = {"args": request.args, "reasons": _reasons(decision.reasons)}
        if decision.errors:
            detail["errors"] = _reasons(decision.errors)
        if decision.monitored:
            detail["monitored"] = _reasons(decision.monitored)
            detail["would_effect"] = decision.would_effect.value if decision.would_effect else None
        event["bundle_hash"] = decision.bundle_hash
        effect = decision.effect
        if effect is Effect.NEEDS_APPROVAL and approved is not None:
            detail["approval_id"] = approved.id
            detail["approved_by"] = [{"by": s.by, "role": s.role} for s in approved.signoffs]
            unmet = set(decision.obligations.approver_roles) - {s.role for s in approved.signoffs}
            if unmet:  # the policy changed since: the approval no longer covers every requirement
                text = f"approval {approved.id} lacks a sign-off by role {' and '.join(sorted(unmet))}"
                self._record(event, "deny", "denied", {**detail, "error": text})
                raise ToolDenied(request.action, [text + "; request it again"], audit_id=event["call_id"])
            effect = Effect.ALLOW
        if effect is not Effect.ALLOW and self.mode == "monitor":
            self._record(event, f"would_{effect.value}", "allowed_by_monitor", detail, mode="monitor")
            effect = Effect.ALLOW
        if effect is Effect.DENY:
            self._record(event, "deny", "denied", detail)
            raise ToolDenied(request.action, decision.reasons, audit_id=event["call_id"])
        if effect is Effect.NEEDS_APPROVAL and not decision.obligations.approver_roles:
            text = 'its approval rule names no approver role, so no one may approve it (add `from role "..."`)'
            self._record(event, "deny", "denied", {**detail, "error": text})
            raise ToolDenied(request.action, [text], audit_id=event["call_id"])
        if effect is Effect.NEEDS_APPROVAL:
            pending = self.approvals.store.request(
                tool=tool.name,
                args=request.args,
                principal=request.principal.model_dump(mode="json"),
                agent=request.agent.model_dump(mode="json"),
                session=request.context.session_id,
                tenant=request.context.tenant,
                approver_roles=list(decision.obligations.approver_roles),
                rules=[r.rule_id for r in decision.reasons],
                ttl_s=self.approval_ttl_s,
            )
            self._record(event, "needs_approval", pending.status, {**detail, "approval_id": pending.id})
            return pending
        try:
            redaction = redaction_for(decision.obligations)
        except Exception as exc:  # an obligation we cannot honour denies the call
            self._record(event, "deny", "error", {**detail, "error": f"bad redaction obligation: {exc}"})
            raise ToolDenied(request.action, [f"result redaction cannot be applied: {exc}"]) from exc
        approval_id = approved.id if approved else None
        return _Plan(event, tool, kwargs, request, redaction, detail, approval_id)

    # ---- execution -------------------------------------------------------------------------------------------
    def _run_sync(self, plan: _Plan) -> Any:
        tool, started = plan.tool, time.perf_counter()
        try:
            if tool.is_async:
                result = _run_coroutine(tool.func(**plan.kwargs), tool.timeout)
            elif tool.timeout is not None:  # a pool of its own would be shut down waiting for the late tool
                result = self._tool_threads.submit(tool.func, **plan.kwargs).result(timeout=tool.timeout)
            else:
                result = tool.func(**plan.kwargs)
        except BaseException as exc:
            return self._complete(plan, None, exc, started)
        return self._complete(plan, result, None, started)

    async def _run_async(self, plan: _Plan) -> Any:
        """The outcome is recorded in a thread too: its commit may wait for another caller's batch, and on the
        event loop that wait would stall every other call the loop serves."""
        tool, started = plan.tool, time.perf_counter()
        try:
            if tool.is_async:
                result = await asyncio.wait_for(tool.func(**plan.kwargs), tool.timeout)
            else:
                running = asyncio.get_running_loop().run_in_executor(
                    self._tool_threads, functools.partial(tool.func, **plan.kwargs)
                )
                result = await asyncio.wait_for(running, tool.timeout)
        except BaseException as exc:
            return await self._acomplete(plan, None, exc, started)
        return await self._acomplete(plan, result, None, started)

    async def _acomplete(self, plan: _Plan, result: Any, error: BaseException | None, started: float) -> Any:
        if plan.reserved is None:  # a reservation's release goes to the state store: never on the loop
            with self._without_waiting() as now:
                if now:
                    return self._complete(plan, result, error, started)
        return await in_thread(self._complete, plan, result, error, started)  # even if cancelled again

    @contextlib.contextmanager
    def _without_waiting(self) -> Iterator[bool]:
        """True while a call's admission or outcome may run on the event loop: when it is the only ``acall`` in
        flight (with others, a thread lets the loop serve them during its commit, and lets their records share
        commits) and nothing in it can wait for anything but this thread's CPU. That holds with no resolvers,
        detectors or ledger (user code, perhaps remote), no stateful rule (the state store), no policy reload due
        (a parse), SQLite without fsync, no refused outcome waiting to be retried, and the group commit's lead,
        the connection and the writer lock all free this instant; they are held until the step is over, so its
        writes never wait for another thread or process of ours. Anything else: False, and the step goes to a
        thread as before."""
        context, db = self.context, self.db
        if (
            self._in_flight > 1 or self._pending
            or context.resolvers or context.detectors or context.spend_source is not None
            or db.backend != "sqlite" or db.durability != "process" or self.policy.reload_due()
            or history_scopes(self.policy.current())
        ):  # fmt: skip
            yield False
            return
        with self.audit.held_without_waiting() as held, self.policy.pinned():
            self._on_loop.held = held  # its writes retry no refused outcome: their lock may wait for this lead
            try:
                yield held
            finally:
                self._on_loop.held = False

    def _complete(self, plan: _Plan, result: Any, error: BaseException | None, started: float) -> Any:
        """Redact, record the outcome (and the approval's), then return the result or raise why not."""
        detail: dict[str, Any] = {"duration_ms": round((time.perf_counter() - started) * 1000, 3)}
        if error is not None:
            timed_out = isinstance(error, TimeoutError | asyncio.TimeoutError | concurrent.futures.TimeoutError)
            outcome = "timeout" if timed_out else "error"
            if not isinstance(error, Exception):  # the caller's task was cancelled, or the process interrupted
                outcome = "cancelled" if isinstance(error, asyncio.CancelledError) else "interrupted"
            message = f"timed out after {plan.tool.timeout}s" if timed_out else f"{type(error).__name__}: {error}"
            if plan.redaction:  # error text is tool output too: it reaches the caller, a model, the audit
                message, detail["redacted"] = plan.redaction.message(message, type(error).__name__)
            # failed calls do not count; a timed-out or interrupted one may have acted (a sync tool even runs on
            # in its thread), and a caller who can slow a tool or cancel it would otherwise undo any cap: it counts
            release = plan.reserved if isinstance(error, Exception) and not timed_out else None
            recorded = self._settle(plan, outcome, {**detail, "error": message}, message, release)
            if not isinstance(error, Exception):
                raise error
            cause = None if detail.get("redacted") else error  # nor in a logged traceback of the caller's
            if not recorded:
                raise OutcomeNotRecorded(plan.tool.name, audit_id=plan.event["call_id"], error=message) from cause
            raise ToolExecutionError(plan.tool.name, message) from cause
        if plan.redaction:
            try:
                result, detail["redacted"] = plan.redaction.apply(result)
            except Exception as exc:  # the result is withheld: handing it over unredacted would break the policy
                message = f"result redaction failed: {type(exc).__name__}: {exc}"
                self._finish(plan, "error", {**detail, "error": message}, {"error": message})
                raise ToolExecutionError(
                    plan.tool.name, "it ran, but its result could not be redacted and is withheld; do not retry it"
                ) from exc
        if not self._finish(plan, "ok", detail, result):
            raise OutcomeNotRecorded(plan.tool.name, audit_id=plan.event["call_id"], result=result)
        return result

    def _settle(
        self, plan: _Plan, outcome: str, detail: dict[str, Any], message: str, release: CallRecord | None
    ) -> bool:
        """Record a call that did not complete, then give ``release`` back: after its outcome is committed, not
        merely queued (no deferring), so the history never lacks a call the audit still shows as running."""
        recorded = self._finish(plan, outcome, detail, {"error": message}, defer=release is None)
        if release is not None:
            self._release(release)
        return recorded

    def _finish(self, plan: _Plan, outcome: str, detail: dict[str, Any], result: Any, *, defer: bool = True) -> bool:
        """Record an executed call's outcome (and settle its approval), after any earlier outcome still waiting;
        False when the database refused it: the writes wait in memory, in order, for the next attempt.

        With ``outcome_delay_s`` the record of a call without an approval to settle is queued for the next commit
        (``defer``: unless the caller has more to do once it is committed) and this returns True; if that commit
        fails, the record joins the writes waiting in memory."""
        record = AuditEvent(kind="execution", outcome=outcome, mode=self.mode, detail=detail, **plan.event)
        if (observed := current_call()) is not None:
            observed.outcome(outcome, result)
        writes: list[Callable[[], Any]] = [functools.partial(self.audit.append, record)]
        if plan.approval_id:
            settle = self.approvals.store.finish
            writes.append(functools.partial(settle, plan.approval_id, ok=outcome == "ok", result=result))
        deferred = defer and self.outcome_delay_s > 0 and len(writes) == 1
        held = self._on_loop.held  # see _without_waiting: this thread holds the group commit's lead
        if self._pending and not held and self.record_pending_outcomes():  # earlier outcomes wait: join them
            with self._pending_lock:
                self._pending.extend(writes)
            return deferred  # a deferred outcome's caller does not wait for its commit, whenever that will be
        if deferred:
            return self._defer(record)
        for done, write in enumerate(writes):  # not under _pending_lock: concurrent outcomes share a commit
            try:
                write()
            except BaseException as exc:
                self._wait_for_storage(writes[done:], held)
                if not isinstance(exc, Exception):
                    raise
                log.exception("gateway: the outcome of call %s waits for the database", plan.event["call_id"])
                return False
        return True

    def _defer(self, record: AuditEvent) -> bool:
        try:
            self.audit.defer(record, functools.partial(self._deferred, record))
        except Exception as exc:  # sealing needed the database (a new subject's key) and it refused
            self._deferred(record, exc)
            return False
        return True

    def _deferred(self, record: AuditEvent, error: BaseException | None) -> None:
        """A deferred outcome's commit is over: if it failed, the record waits in memory like a refused one."""
        if error is None:
            return
        log.error("gateway: the outcome of call %s waits for the database: %s", record.call_id, error, exc_info=error)
        # not under _pending_lock: its holder may be waiting for the very commit that calls this (deque.append
        # is atomic, and record_pending_outcomes only takes from the left)
        self._pending.append(functools.partial(self.audit.append, record))

    def _record(
        self, event: dict[str, Any], effect: str, outcome: str, detail: dict[str, Any], *, mode: str | None = None
    ) -> None:
        self._append(self._decision(event, effect, outcome, detail, mode=mode))

    def _decision(
        self, event: dict[str, Any], effect: str, outcome: str, detail: dict[str, Any], *, mode: str | None = None
    ) -> AuditEvent:
        """The audit record of a decision, shown to telemetry as it is made."""
        if (observed := current_call()) is not None:
            observed.decision(event, effect, detail)
        return AuditEvent(
            kind="decision", effect=effect, outcome=outcome, mode=mode or self.mode, detail=detail, **event
        )

    def _append(self, record: AuditEvent) -> None:
        if self._pending and not self._on_loop.held:
            self.record_pending_outcomes()
        self.audit.append(record)

    def _wait_for_storage(self, writes: list[Callable[[], Any]], held: bool) -> None:
        """Keep refused writes for the next attempt. A step holding the group commit's lead takes no lock for it:
        ``record_pending_outcomes`` may hold that lock in another thread while its write waits for the lead (the
        deque's ``extend`` is atomic, and the retries only take from the left)."""
        if held:
            self._pending.extend(writes)
            return
        with self._pending_lock:
            self._pending.extend(writes)

    def flush(self) -> int:
        """Commit the deferred outcome records now, and retry those the database refused; return how many still
        wait (``record_pending_outcomes``). After it returns, every call that returned before has its outcome in
        the audit unless the database refuses it."""
        self.audit.flush()
        return self.record_pending_outcomes()

    def record_pending_outcomes(self) -> int:
        """Make the outcome writes the database refused earlier, oldest first; return how many still wait (their
        calls stay "started, outcome unknown" in the audit until then). Runs before every audit write too."""
        with self._pending_lock:
            try:
                while self._pending:
                    self._pending[0]()
                    self._pending.popleft()
            except Exception:
                log.exception("gateway: %d outcome write(s) wait for the database", len(self._pending))
            return len(self._pending)

    def record_llm_usage(
        self,
        model: str,
        input_tokens: int,
        output_tokens: int,
        *,
        user: str | None = None,
        agent: str | None = None,
        tenant: str | None = None,
        device: str = "trn3",
    ) -> Receipt:
        """Charge one LLM call's tokens (priced by the simulated serving model) to the ledger budget rules read.

        ``user``, ``agent`` and ``tenant`` are checked and filed as a call's identities are (canonical form; an id
        empty in it is a ValueError), so the call's budget rules read them back; ``None`` (no tenant) is filed
        under :data:`~agentcore.accel.ledger.NO_TENANT`, which no tenant (not even one named ``"default"``) is."""
        if self.ledger is None:
            raise ConfigError(
                "this gateway has no ledger: create it with Gateway(..., ledger=Ledger()) to record spend"
            )
        from agentcore.accel.ledger import NO_TENANT
        from agentcore.accel.serving.usage import record_llm_usage  # lazily: accel imports onnx (seconds)

        owner: dict[str, str | None] = {}
        for name, value, kind in (("user", user, _ID), ("agent", agent, _ID), ("tenant", tenant, _TENANT)):
            try:
                owner[name] = None if value is None else kind.validate_python(value)
            except ValidationError as error:
                raise ValueError(f"invalid owner of LLM usage: {name} {error.errors()[0]['msg']}") from None
        filed = owner["tenant"]
        return record_llm_usage(
            self.ledger, model, input_tokens, output_tokens, device=device,
            tenant=NO_TENANT if filed is None else filed, agent=owner["agent"], user=owner["user"],
        )  # fmt: skip

    def forget(self, subject: str, *, tenant: TenantFilter = ANY_TENANT) -> ForgetReport:
        """Erase ``subject`` in ``tenant`` (``None``: without a tenant; by default in every tenant and without one)
        from this gateway's database, then from its state store (see :func:`agentcore.gateway.erasure.forget_subject`),
        after committing the queued outcomes (sealed under keys that are about to go)."""
        self.audit.flush()
        return forget_subject(self.db, subject, self.audit.sealer, tenant=tenant, state=self.store)

    def close(self) -> None:
        if self.flush():
            log.error("gateway: closing with %d outcome write(s) not made: their calls stay started, outcome unknown",
                      len(self._pending))  # fmt: skip
        self._tool_threads.shutdown(wait=False)
        self.context.close()
        self.audit.close()
        self.store.close()
        self.db.close()


_ID: TypeAdapter[str] = TypeAdapter(IdentityString)
_TENANT: TypeAdapter[str] = TypeAdapter(TenantString)
_NOT_RUN = "cancelled before it ran: the caller's task was cancelled while the call was being admitted"

_REASONS: dict[int, tuple[tuple[Reason, ...], list[dict[str, Any]]]] = {}  # id -> (the reasons, their records)
_REASONS_KEPT = 4096


def _reasons(reasons: tuple[Reason, ...]) -> list[dict[str, Any]]:
    """The audit records of a decision's reasons (read-only). A cached decision hands out the same tuple on every
    call it decides, so it is looked up by identity (the tuple is kept, so its id is not reused meanwhile):
    hashing pydantic models, as a cache keyed by value does, costs more than the lookup saves."""
    found = _REASONS.get(id(reasons))
    if found is not None and found[0] is reasons:
        return found[1]
    records = [_reason_record(r) for r in reasons]
    if len(_REASONS) >= _REASONS_KEPT:
        _REASONS.clear()
    _REASONS[id(reasons)] = (reasons, records)
    return records


@functools.lru_cache(maxsize=4096)
def _reason_record(reason: Reason) -> dict[str, Any]:
    """A compiled rule's reason is the same object on every call it decides: dump it once (read-only result)."""
    return reason.model_dump()


class _Preview(reprlib.Repr):
    """reprlib, bounded for hostile arguments: repr() of 5,000-deep ones would raise RecursionError (six levels are
    enough), and of an integer past Python's 4,300 digits ValueError."""

    def repr_int(self, x: int, level: int) -> str:
        return super().repr_int(x, level) if x.bit_length() <= MAX_INT_BITS else f"<integer of {x.bit_length()} bits>"


_PREVIEW = _Preview()
_PREVIEW.maxlevel, _PREVIEW.maxstring, _PREVIEW.maxother = 6, 400, 400


def _label(value: Any) -> Any:
    """An identity or name as the caller sent it, fit for the audit before it is validated: bounded, in canonical
    form (``b\u200bob`` is bob, whose erasure must reach the record), and printable."""
    return None if value is None else printable(canonical_text(str(value)[:200])[:200])


def _problems(errors: Sequence[Any]) -> str:
    return "; ".join(f"{'.'.join(str(p) for p in e['loc']) or '$'}: {e['msg']}" for e in errors[:5])


def _preview(args: Any) -> str:
    """What of unvalidated arguments goes into the audit: bounded in size and depth, whatever the caller sent."""
    text = _PREVIEW.repr(args)
    return text if len(text) <= 2000 else text[:2000] + f"... ({len(text)} chars)"


def _loop_running() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _run_coroutine(coro: Any, timeout: float | None) -> Any:
    if not _loop_running():
        return asyncio.run(asyncio.wait_for(coro, timeout))
    coro.close()
    raise GatewayError("an async tool cannot be called with call() inside a running event loop; use await acall()")
