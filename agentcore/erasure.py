"""One call that erases a person everywhere agentcore keeps them: memory and the gateway alike.

Memory rows are deleted; gateway audit records stay in the chain, unreadable once the subject's keys are gone
(crypto-shredding); call history and approval requests are deleted. Both default to the same database
(:func:`agentcore.config.database_url`); pass ``database`` when they share another one.
"""

from __future__ import annotations

from pydantic import BaseModel

from agentcore.gateway.erasure import ForgetReport as GatewayForgetReport
from agentcore.gateway.erasure import forget_subject
from agentcore.memory.models import ForgetReport as MemoryForgetReport


class ErasureReport(BaseModel):
    memory: MemoryForgetReport
    gateway: GatewayForgetReport


def forget(subject: str, *, database: str | None = None) -> ErasureReport:
    """Erase ``subject`` (a user / actor / principal id) from memory and the gateway in ``database``."""
    from agentcore.gateway.db import Database, resolve_url
    from agentcore.memory import MemoryStore

    if not isinstance(subject, str) or not subject:
        raise ValueError("forget needs a non-empty subject id")
    url = resolve_url(database)
    with MemoryStore(None if database is None else url) as store:
        memory = store.forget(subject)
    db = Database(url)
    try:
        gateway = forget_subject(db, subject)
    finally:
        db.close()
    return ErasureReport(memory=memory, gateway=gateway)
