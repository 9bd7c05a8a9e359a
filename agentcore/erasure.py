"""One call that erases a person everywhere agentcore keeps them: memory and the gateway alike.

Memory rows are deleted; gateway audit records stay in the chain, unreadable once the subject's keys are gone
(crypto-shredding); call history and approval requests are deleted. Both default to the same database
(:func:`agentcore.config.database_url`); pass ``database`` when they share another one.

A gateway subject is an id in a tenant, and ``tenant`` erases one tenant's; memory has no tenants (its rows are
per actor), so the actor's memory goes whatever the tenant: give each tenant its own memory database, or actor
ids that name the tenant, where two tenants' ids may meet.
"""

from __future__ import annotations

from pydantic import BaseModel

from agentcore.gateway.erasure import ForgetReport as GatewayForgetReport
from agentcore.gateway.erasure import forget_subject
from agentcore.gateway.identity import ANY_TENANT, TenantFilter, tenant_filter
from agentcore.memory.models import ForgetReport as MemoryForgetReport


class ErasureReport(BaseModel):
    memory: MemoryForgetReport
    gateway: GatewayForgetReport


def forget(subject: str, *, database: str | None = None, tenant: TenantFilter = ANY_TENANT) -> ErasureReport:
    """Erase ``subject`` (a user / actor / principal id) from memory and the gateway in ``database``; in the
    gateway only in ``tenant`` when given (``None``: what was done without a tenant), memory's actor always."""
    from agentcore.gateway.db import Database, resolve_url
    from agentcore.memory import MemoryStore

    if not isinstance(subject, str) or not subject:
        raise ValueError("forget needs a non-empty subject id")
    tenant = tenant_filter(tenant)  # before memory is erased: a wrong tenant erases nothing
    url = resolve_url(database)
    with MemoryStore(None if database is None else url) as store:
        memory = store.forget(subject)
    db = Database(url)
    try:
        gateway = forget_subject(db, subject, tenant=tenant)
    finally:
        db.close()
    return ErasureReport(memory=memory, gateway=gateway)
