"""The decision contract: what the gateway asks (:class:`Request`) and what the engine answers (:class:`Decision`).

These models are the border between ``agentcore.policies`` and its callers; they only grow (additive changes).
Arguments and identities are canonicalised on the way in (strings in :func:`~agentcore.text.canonical_text`
form, tuples to lists, keys to strings), so policy comparisons see one spelling of each value whatever look-alike
or invisible characters an agent sent. Validated with ``context={"unicode": "reject"}``, an identity string (ids,
roles, session, tenant) that is not already canonical is an error of type ``noncanonical_text`` instead. An
identity must also be printable text of bounded size, and (but for a tenant) not empty in canonical form: else an
error of type ``invalid_identity``.
"""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated, Any

from pydantic import AfterValidator, AwareDatetime, BaseModel, ConfigDict, Field, ValidationInfo
from pydantic_core import PydanticCustomError

from agentcore.text import LONE_SURROGATE, canonical_problem, canonical_text

MAX_ARG_DEPTH = 64


def canonical(value: Any, depth: int = 0, facts: bool = False) -> Any:
    """Return ``value`` as canonical JSON data: canonical strings and keys, string keys, lists for sequences.

    Raises ``ValueError`` for values JSON cannot hold or nesting deeper than ``MAX_ARG_DEPTH``. ``facts``: a
    resolver's record, whose other values (dates, decimals) are kept as they are.
    """
    if depth > MAX_ARG_DEPTH:
        raise ValueError(f"arguments are nested deeper than {MAX_ARG_DEPTH} levels")
    if isinstance(value, str):  # strings first: most argument values are strings (every tool call comes here)
        return value if value.isascii() else canonical_text(value)
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, dict):  # keys are normalised in place: a value at this depth is checked anyway
        return {canonical_text(str(k)): canonical(v, depth + 1, facts) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [canonical(v, depth + 1, facts) for v in value]
    if facts:
        return value
    raise ValueError(
        f"argument value of type {type(value).__name__} is not JSON; send str, number, bool, null, list or object"
    )


def _identity_text(value: str, info: ValidationInfo) -> str:
    """An identity in canonical form; with ``context={"unicode": "reject"}`` one that is not is refused."""
    if value.isascii():  # every call validates several identities: the common case stays one C call
        return value
    text = canonical_text(value)
    reject = text != value and info.context is not None and info.context.get("unicode") == "reject"
    surrogate = LONE_SURROGATE.search(text) is not None
    if reject or surrogate:
        problem = "contains a lone surrogate, which is not text" if surrogate else canonical_problem(value)
        raise PydanticCustomError(
            "noncanonical_text", "{value} {problem}", {"value": repr(value[:80]), "problem": problem}
        )
    return text


MAX_ID_CHARS = 1024  # a principal, agent or tenant id, or a role: as sent and in canonical form
MAX_SESSION_CHARS = 4 * MAX_ID_CHARS  # the MCP proxy's session id names the principal and the tenant


def _shaped(limit: int, *, empty: bool = False) -> AfterValidator:
    """An identity in canonical form that is printable text of at most ``limit`` characters, and not empty unless
    ``empty``: every caller whose id held only invisible characters would otherwise be one user ``""``, a huge id
    would be copied into every audit record and state key, and a control character (a newline, an ANSI escape)
    would be printed as it is by the CLI."""

    def check(value: str, info: ValidationInfo) -> str:
        if value.isascii() and value.isprintable() and (empty or value) and len(value) <= limit:
            return value  # the common case: three C calls
        if len(value) > limit:  # before canonical form, which would copy a megabyte id
            raise PydanticCustomError(
                "invalid_identity", "is {size} characters long, more than the limit of {limit}",
                {"size": len(value), "limit": limit},
            )  # fmt: skip
        text = _identity_text(value, info)
        if len(text) > limit:
            raise PydanticCustomError(
                "invalid_identity", "is {size} characters long in canonical form, more than the limit of {limit}",
                {"size": len(text), "limit": limit},
            )  # fmt: skip
        if not (empty or text):
            raise PydanticCustomError(
                "invalid_identity", "is empty in canonical form ({value} holds no visible character): send a real id",
                {"value": repr(value[:80])},
            )  # fmt: skip
        if not text.isprintable():
            index, char = next((i, c) for i, c in enumerate(text) if not c.isprintable())
            raise PydanticCustomError(
                "invalid_identity",
                "contains the non-printable character U+{code} at index {index} (ids are printable text)",
                {"code": f"{ord(char):04X}", "index": index},
            )
        return text

    return AfterValidator(check)


# Validated values are canonicalised so that policies compare one spelling of each (look-alike characters included).
CanonicalString = Annotated[str, AfterValidator(_identity_text)]
IdentityString = Annotated[str, _shaped(MAX_ID_CHARS)]  # principal and agent ids, roles
TenantString = Annotated[str, _shaped(MAX_ID_CHARS, empty=True)]  # "" is a tenant (None: no tenant)
SessionString = Annotated[str, _shaped(MAX_SESSION_CHARS)]
CanonicalJSON = Annotated[dict[str, Any], AfterValidator(canonical)]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Principal(_Frozen):
    """The user (or service) on whose behalf the agent acts; ``attributes`` holds identity claims."""

    id: IdentityString
    roles: frozenset[IdentityString] = frozenset()
    attributes: CanonicalJSON = Field(default_factory=dict)


class AgentInfo(_Frozen):
    """The agent making the call."""

    id: IdentityString
    attributes: CanonicalJSON = Field(default_factory=dict)


class RequestContext(_Frozen):
    """When and where the call happens: decision time (aware), session and tenant used for stateful rules."""

    time: AwareDatetime = Field(default_factory=lambda: datetime.now(UTC))
    session_id: SessionString | None = None
    tenant: TenantString | None = None


class Request(_Frozen):
    """One tool call to authorise. ``action`` is the dotted tool name; ``args`` its canonical JSON arguments."""

    principal: Principal
    agent: AgentInfo = AgentInfo(id="agent")
    action: CanonicalString
    resource: str | None = None
    args: CanonicalJSON = Field(default_factory=dict)
    context: RequestContext = Field(default_factory=RequestContext)


class Effect(StrEnum):
    """The answer to a request; any matching deny beats approval, which beats allow."""

    ALLOW = "allow"
    DENY = "deny"
    NEEDS_APPROVAL = "needs_approval"


class Reason(_Frozen):
    """Why: the rule (id, file, line, its text) and what it did for this request."""

    rule_id: str
    file: str
    line: int
    text: str
    effect: str = Field(description="the rule's kind: allow, deny, approval, limit, redact, suppress, default")
    note: str = Field(
        default="", description="for errors and defaults: what could not be evaluated, or why no rule matched"
    )


class RedactPattern(_Frozen):
    """A named regular expression whose matches the gateway replaces in tool results."""

    name: str
    regex: str


class RateLimit(_Frozen):
    """A rate limit the request falls under, for the gateway's atomic check-and-reserve.

    The engine has already checked ``count < limit`` through the :class:`DecisionContext`, which is not atomic
    across processes. Before executing, the gateway must atomically count calls to ``actions`` (glob patterns) in
    the last ``window_seconds`` for ``scope``/``key`` of ``tenant`` and reserve one slot if fewer than ``limit``
    exist; otherwise it treats the decision as deny.
    """

    rule_id: str
    actions: tuple[str, ...]
    scope: str
    key: str
    tenant: str | None = None
    window_seconds: float
    limit: int


class Obligations(_Frozen):
    """What the gateway must do besides executing: redaction of results, output suppression, approvals, limits."""

    redact_patterns: tuple[RedactPattern, ...] = ()
    redact_fields: tuple[str, ...] = ()
    suppress_output: bool = False
    approver_roles: tuple[str, ...] = ()
    rate_limits: tuple[RateLimit, ...] = ()


NO_OBLIGATIONS = Obligations()


class Decision(_Frozen):
    """The engine's answer. ``reasons`` name the determining rules; ``errors`` the rules that could not be evaluated.

    ``monitored`` lists log-only rules that matched and ``would_effect`` is the effect had they been enforced.
    ``bundle_hash`` identifies the compiled bundle, for audit records.
    """

    effect: Effect
    reasons: tuple[Reason, ...] = ()
    obligations: Obligations = NO_OBLIGATIONS
    bundle_hash: str = ""
    errors: tuple[Reason, ...] = ()
    monitored: tuple[Reason, ...] = ()
    would_effect: Effect | None = None

    @property
    def allowed(self) -> bool:
        return self.effect is Effect.ALLOW
