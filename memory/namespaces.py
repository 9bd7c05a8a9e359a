"""Namespace templates such as ``/users/{actor_id}/preferences``, resolved per actor and session.

Values are percent-encoded before substitution, so an actor id like ``../x`` or ``a/b`` stays one
segment and cannot climb into another actor's namespace. A template is checked when a strategy is
built, so a misspelt field fails before any session is extracted rather than halfway through one.
"""

from __future__ import annotations

import string
from urllib.parse import quote

from agentcore.memory.errors import InvalidMemoryInputError
from agentcore.memory.validation import check_namespace

TEMPLATE_FIELDS = frozenset({"actor_id", "session_id", "strategy"})
# AgentCore Memory spells its template fields in camelCase; a template copied from there gets a hint.
_AGENTCORE_FIELDS = {"actorId": "actor_id", "sessionId": "session_id", "memoryStrategyId": "strategy"}


def template_fields(template: str) -> set[str]:
    """The fields ``template`` substitutes; unknown ones are refused, naming the right spelling."""
    try:
        fields = {name for _, name, _, _ in string.Formatter().parse(template) if name is not None}
    except ValueError as error:
        raise InvalidMemoryInputError(f"namespace template {template!r} is malformed: {error}") from None
    unknown = sorted(fields - TEMPLATE_FIELDS)
    if unknown:
        hints = [f"{{{name}}} -> {{{_AGENTCORE_FIELDS[name]}}}" for name in unknown if name in _AGENTCORE_FIELDS]
        raise InvalidMemoryInputError(
            f"namespace template {template!r} uses unknown fields {unknown}; allowed fields: "
            f"{sorted(TEMPLATE_FIELDS)}" + (f" (write {', '.join(hints)})" if hints else "")
        )
    return fields


def check_template(template: str) -> str:
    """``template`` if it resolves to a valid namespace for any actor and session (else a clear error)."""
    resolve_namespace(template, actor_id="actor", session_id="session", strategy="strategy")
    return template


def resolve_namespace(template: str, *, actor_id: str, session_id: str | None = None, strategy: str = "") -> str:
    """The concrete namespace of ``template`` for one actor (and session, when the template names it)."""
    fields = template_fields(template)
    if "session_id" in fields and session_id is None:
        raise InvalidMemoryInputError(f"namespace template {template!r} needs a session_id")
    values = {"actor_id": actor_id, "session_id": session_id or "", "strategy": strategy}
    return check_namespace(template.format(**{key: quote(value, safe="") for key, value in values.items()}))
