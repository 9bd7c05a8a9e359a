"""The token usage a model SDK's response reports, charged to the gateway's ledger once per response.

The model SDK adapters read it from the whole response (a message or a list of calls carries none) and charge it
with :meth:`Gateway.record_llm_usage` to the caller of the turn, before its calls run, so budget rules on
``accelerator spend`` count the turn that asked for them. A response already charged (by its id) is not charged
again; without a ledger nothing is recorded.
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agentcore.accel.telemetry import per_object
from agentcore.gateway.adapters.calls import Caller, plain
from agentcore.gateway.gateway import Gateway
from agentcore.gateway.identity import as_agent, as_principal

log = logging.getLogger(__name__)

_REMEMBERED = 10_000  # response ids kept per gateway to make a second handling of a response a no-op


@dataclass(frozen=True)
class TokenKeys:
    """Where one SDK puts the counts in ``usage``: the input keys are summed (cached prompt tokens included)."""

    inputs: tuple[str, ...]
    output: str


@dataclass(frozen=True)
class Usage:
    """One response's usage: its id (None when it has none), the model it names, and its token counts."""

    response_id: str | None
    model: str | None
    input_tokens: int
    output_tokens: int


def usage_of(response: Any, keys: TokenKeys) -> Usage | None:
    """The usage of a whole response (SDK object or dict); None for a message, a list of calls or no ``usage``."""
    data = plain(response)
    if not isinstance(data, Mapping) or not isinstance(data.get("usage"), Mapping):
        return None
    tokens = data["usage"]
    response_id = data.get("id") or (data.get("ResponseMetadata") or {}).get("RequestId")  # Bedrock: the request
    model = data.get("model")
    return Usage(
        str(response_id) if response_id else None,
        str(model) if model else None,
        sum(_count(tokens, key) for key in keys.inputs),
        _count(tokens, keys.output),
    )


def charge(gw: Gateway, response: Any, keys: TokenKeys, caller: Caller) -> None:
    """Record the response's usage for the caller of the turn, once per response id; a no-op without usage
    or ledger. A failure to record propagates (the turn's calls do not run unaccounted)."""
    usage = usage_of(response, keys)
    if usage is None or gw.ledger is None:
        return
    from agentcore.accel.serving.usage import catalogue_llm  # lazily: accel imports onnx (seconds)

    priced_as = catalogue_llm(usage.model)
    if priced_as != usage.model:
        log.debug("LLM usage of %r (response %s) priced as %s", usage.model, usage.response_id, priced_as)
    seen = _seen(gw)
    with seen.lock:
        if usage.response_id in seen.ids:
            return
        gw.record_llm_usage(
            priced_as,
            usage.input_tokens,
            usage.output_tokens,
            user=as_principal(caller.principal).id,
            agent=as_agent(caller.agent).id,
            tenant=caller.tenant,
        )
        if usage.response_id is not None:  # one without an id has nothing to be known by: each handling counts
            seen.ids[usage.response_id] = None
            if len(seen.ids) > _REMEMBERED:
                seen.ids.popitem(last=False)


class _Seen:
    """The response ids already charged to one gateway (the oldest forgotten past ``_REMEMBERED``)."""

    def __init__(self) -> None:
        self.ids: OrderedDict[str, None] = OrderedDict()
        self.lock = threading.Lock()


_SEEN: weakref.WeakKeyDictionary[Gateway, _Seen] = weakref.WeakKeyDictionary()
_SEEN_LOCK = threading.Lock()


def _seen(gw: Gateway) -> _Seen:
    with _SEEN_LOCK:  # two first calls at once must share one set, or both would charge the same response
        return per_object(_SEEN, gw, lambda _: _Seen())


def _count(tokens: Mapping[str, Any], key: str) -> int:
    value = tokens.get(key) or 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"usage.{key} must be a non-negative integer, not {value!r}")
    return value
