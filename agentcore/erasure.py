"""One call that erases a person everywhere agentcore keeps them: memory and the gateway alike.

Memory rows are deleted; gateway audit records stay in the chain, unreadable once the subject's keys are gone
(crypto-shredding); call history and approval requests are deleted. Both default to the same database
(:func:`agentcore.config.database_url`); pass ``database`` when they share another one, and ``state`` when the
gateway keeps the history of stateful rules elsewhere (its ``state`` setting: ``redis://...``).

A subject is an id in a tenant, in the gateway and in memory alike (``MemoryStore(tenant=...)``), and ``tenant``
erases one tenant's: the same id in another tenant is another person and keeps everything. Without a tenant (the
default) the id is erased in every tenant; ``None`` erases what the gateway recorded without a tenant, and the
memory of the default tenant (``"default"``, where a store opened without a tenant keeps its rows).
"""

from __future__ import annotations

from pydantic import BaseModel

from agentcore.gateway.erasure import ForgetReport as GatewayForgetReport
from agentcore.gateway.erasure import forget_subject
from agentcore.gateway.identity import ANY_TENANT, TenantFilter, erasure_subject
from agentcore.memory.models import ForgetReport as MemoryForgetReport
from agentcore.memory.validation import check_tenant


class ErasureReport(BaseModel):
    memory: MemoryForgetReport
    gateway: GatewayForgetReport


def forget(
    subject: str, *, database: str | None = None, tenant: TenantFilter = ANY_TENANT, state: str | None = None
) -> ErasureReport:
    """Erase ``subject`` (a user / actor / principal id) from memory and the gateway in ``database``, and from the
    gateway's state store at ``state`` when it has one of its own (the URL its ``state`` setting names); only in
    ``tenant`` when given (``None``: what the gateway did without a tenant, and the default tenant's memory)."""
    from agentcore.gateway.db import Database, resolve_url
    from agentcore.gateway.state import open_store
    from agentcore.memory import MemoryStore

    _, tenant = erasure_subject(subject, tenant)  # before memory is erased: a wrong one erases nothing
    every_tenant = tenant is ANY_TENANT
    memory_tenant = check_tenant("default" if tenant is None or every_tenant else tenant)
    url = resolve_url(database)
    db = Database(url)
    try:
        store = None if state is None else open_store(state, db)  # before memory is erased, like the tenant
        try:
            with MemoryStore(None if database is None else url, tenant=memory_tenant) as memories:
                memory = memories.forget(subject, every_tenant=every_tenant)
            gateway = forget_subject(db, subject, tenant=tenant, state=store)
        finally:
            if store is not None:
                store.close()
    finally:
        db.close()
    return ErasureReport(memory=memory, gateway=gateway)
