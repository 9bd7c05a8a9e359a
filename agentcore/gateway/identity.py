"""Accept the caller's identity in the forms users have at hand (an id, a dict of claims, a model)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agentcore.policies.model import AgentInfo, Principal

PrincipalLike = Principal | str | Mapping[str, Any]
AgentLike = AgentInfo | str | Mapping[str, Any] | None
DEFAULT_AGENT = AgentInfo(id="agent")


def as_principal(value: PrincipalLike) -> Principal:
    """``"alice"`` -> Principal(id="alice"); a mapping needs ``id`` and may hold ``roles`` and ``attributes``."""
    if isinstance(value, Principal):
        return value
    if isinstance(value, str):
        return Principal(id=value)
    if isinstance(value, Mapping):
        return Principal.model_validate(dict(value))
    raise TypeError(f"principal must be a Principal, a user id or a mapping with 'id', not {type(value).__name__}")


def as_agent(value: AgentLike) -> AgentInfo:
    if value is None:
        return DEFAULT_AGENT
    if isinstance(value, AgentInfo):
        return value
    if isinstance(value, str):
        return AgentInfo(id=value)
    if isinstance(value, Mapping):
        return AgentInfo.model_validate(dict(value))
    raise TypeError(f"agent must be an AgentInfo, an agent id or a mapping with 'id', not {type(value).__name__}")
