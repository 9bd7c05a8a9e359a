"""Does a bundle read call history? Only then is each executed call written to the state store.

History is read by rate limits, ``count``/``sum`` windows and ``after`` sequence conditions. A bundle without
them needs no history, and skipping the write keeps the call path at one commit per audit record. (A stateful
rule added later by hot reload counts calls from that moment on.)
"""

from __future__ import annotations

import functools
from typing import Any

from agentcore.policies.ast import structure
from agentcore.policies.engine import PolicyEngine

_HISTORY_NODES = {"count", "sum", "after"}


def _mentions_history(data: Any) -> bool:
    if isinstance(data, dict):
        return data.get("kind") in _HISTORY_NODES or any(_mentions_history(v) for v in data.values())
    if isinstance(data, list):
        return any(_mentions_history(v) for v in data)
    return False


@functools.lru_cache(maxsize=16)
def reads_history(engine: PolicyEngine) -> bool:
    """True when any rule of the engine's bundle is a limit or has a count/sum/after condition."""
    return any(rule.kind == "limit" or _mentions_history(structure(rule.rule)) for rule in engine.bundle.rules)
