"""One call that erases a person everywhere agentcore keeps them: memory and the gateway alike.

Memory rows are deleted; gateway audit records stay in the chain, unreadable once the subject's keys are gone
(crypto-shredding); call history and approval requests are deleted. Both default to the same database
(:func:`agentcore.config.database_url`); pass ``database`` when they share another one, and ``state`` when the
gateway keeps the history of stateful rules elsewhere (its ``state`` setting: ``redis://...``).

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


def forget(
    subject: str, *, database: str | None = None, tenant: TenantFilter = ANY_TENANT, state: str | None = None
) -> ErasureReport:
    """Erase ``subject`` (a user / actor / principal id) from memory and the gateway in ``database``, and from the
    gateway's state store at ``state`` when it has one of its own (the URL its ``state`` setting names); in the
    gateway only in ``tenant`` when given (``None``: what was done without a tenant), memory's actor always."""
    from agentcore.gateway.db import Database, resolve_url
    from agentcore.gateway.state import open_store
    from agentcore.memory import MemoryStore

    if not isinstance(subject, str) or not subject:
        raise ValueError("forget needs a non-empty subject id")
    tenant = tenant_filter(tenant)  # before memory is erased: a wrong tenant erases nothing
    url = resolve_url(database)
    db = Database(url)
    try:
        store = None if state is None else open_store(state, db)  # before memory is erased, like the tenant
        try:
            with MemoryStore(None if database is None else url) as memories:
                memory = memories.forget(subject)
            gateway = forget_subject(db, subject, tenant=tenant, state=store)
        finally:
            if store is not None:
                store.close()
    finally:
        db.close()
    return ErasureReport(memory=memory, gateway=gateway)
