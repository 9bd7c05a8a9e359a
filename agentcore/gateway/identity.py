"""Accept the caller's identity in the forms users have at hand (an id, a dict of claims, a model)."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any, Literal

from agentcore.policies.model import AgentInfo, Principal
from agentcore.text import canonical_text

PrincipalLike = Principal | str | Mapping[str, Any]
AgentLike = AgentInfo | str | Mapping[str, Any] | None
DEFAULT_AGENT = AgentInfo(id="agent")


class _Tenants(enum.Enum):
    ANY = "any"


ANY_TENANT = _Tenants.ANY
"""The default of a tenant filter: every tenant (``None`` selects what was made without a tenant)."""
TenantFilter = str | None | Literal[_Tenants.ANY]


def principal_fields(value: PrincipalLike) -> Principal | dict[str, Any]:
    """The principal, or the fields to validate it from: ``Request(principal=...)`` validates them in the same
    step as the rest of the request, which is cheaper than building the Principal first (every call does this)."""
    if isinstance(value, Principal):
        return value
    if isinstance(value, str):
        return {"id": value}
    if isinstance(value, Mapping):
        return dict(value)
    raise TypeError(f"principal must be a Principal, a user id or a mapping with 'id', not {type(value).__name__}")


def as_principal(value: PrincipalLike) -> Principal:
    """``"alice"`` -> Principal(id="alice"); a mapping needs ``id`` and may hold ``roles`` and ``attributes``."""
    fields = principal_fields(value)
    return fields if isinstance(fields, Principal) else Principal.model_validate(fields)


def canonical_tenant(tenant: str | None) -> str | None:
    """The tenant as calls and approval requests store it: one spelling of each (``None``: no tenant)."""
    return None if tenant is None else canonical_text(tenant)


def tenant_filter(tenant: TenantFilter) -> TenantFilter:
    """``tenant`` checked and canonical (``ANY_TENANT`` as it is): a tenant id, ``None`` or every tenant."""
    if tenant is ANY_TENANT:
        return tenant
    if tenant is not None and not isinstance(tenant, str):
        raise TypeError(f"tenant must be a tenant id, None (no tenant) or left out (every tenant), not {tenant!r}")
    return canonical_tenant(tenant)


def erasure_subject(subject: str, tenant: TenantFilter) -> tuple[str, TenantFilter]:
    """An erasure's subject and tenant, checked and in canonical form: the spelling calls, keys and sign-offs are
    stored in (``forget("s\u200bam")`` is sam)."""
    if not isinstance(subject, str) or not subject:
        raise ValueError("forget needs a non-empty subject id")
    return canonical_text(subject), tenant_filter(tenant)


def in_tenant(tenant: TenantFilter, value: str | None) -> bool:
    """Does a row of tenant ``value`` (canonical) pass the filter ``tenant`` (checked by :func:`tenant_filter`)?"""
    return tenant is ANY_TENANT or value == tenant


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
