"""Namespace templates such as ``/users/{actor_id}/preferences``, resolved per actor and session.

Values are percent-encoded before substitution, so an actor id like ``../x`` or ``a/b`` stays one
segment and cannot climb into another actor's namespace.
"""

from __future__ import annotations

import string
from urllib.parse import quote

from agentcore.memory.errors import InvalidMemoryInputError
from agentcore.memory.validation import check_namespace

TEMPLATE_FIELDS = frozenset({"actor_id", "session_id", "strategy"})


def resolve_namespace(template: str, *, actor_id: str, session_id: str | None = None, strategy: str = "") -> str:
    """The concrete namespace of ``template`` for one actor (and session, when the template names it)."""
    fields = {name for _, name, _, _ in string.Formatter().parse(template) if name is not None}
    unknown = fields - TEMPLATE_FIELDS
    if unknown:
        raise InvalidMemoryInputError(
            f"namespace template {template!r} uses {sorted(unknown)}; allowed fields: {sorted(TEMPLATE_FIELDS)}"
        )
    if "session_id" in fields and session_id is None:
        raise InvalidMemoryInputError(f"namespace template {template!r} needs a session_id")
    values = {"actor_id": actor_id, "session_id": session_id or "", "strategy": strategy}
    return check_namespace(template.format(**{key: quote(value, safe="") for key, value in values.items()}))
