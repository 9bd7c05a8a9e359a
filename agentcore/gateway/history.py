"""Which call histories does a bundle read? Only for those is a call decided and reserved atomically.

History is read by rate limits, ``count``/``sum`` windows and ``after`` sequence conditions, each per one scope
(user, agent, session or tenant). A bundle without them needs no history and no state section; one with them
locks only the state keys of the scopes it reads. (A stateful rule added later by hot reload counts calls from
that moment on.)
"""

from __future__ import annotations

import functools
from typing import Any

from agentcore.policies.ast import structure
from agentcore.policies.context import Scope
from agentcore.policies.engine import PolicyEngine

_HISTORY_NODES = {"count", "sum", "after"}


def _scopes_read(data: Any) -> set[str]:
    if isinstance(data, list):
        return set().union(*map(_scopes_read, data))
    if not isinstance(data, dict):
        return set()
    found = {data["scope"]} if data.get("kind") in _HISTORY_NODES else set()
    return found.union(*map(_scopes_read, data.values()))


@functools.lru_cache(maxsize=16)
def history_scopes(engine: PolicyEngine) -> frozenset[Scope]:
    """The scopes whose history the engine's bundle reads: of its limits and count/sum/after conditions, also
    inside named conditions (``define``; every definition counts, used or not: reading more is safe)."""
    found: set[str] = set()
    for rule in engine.bundle.rules:
        data = structure(rule.rule)
        if rule.kind == "limit":
            found.add(data["limit"]["scope"])
        found |= _scopes_read(data)
    for file in engine.bundle.files:
        for definition in file.definitions:
            found |= _scopes_read(structure(definition))
    return frozenset(map(Scope, found))
