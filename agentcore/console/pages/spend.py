"""Spend: simulated accelerator cost by tenant, agent, user and profile, per day, and Trn2 vs Trn3 on the same work.

Every figure is simulated (accel's cost models over the ledger's receipts). The device comparison replays the
recorded calls (:func:`agentcore.accel.replay.replay`: encoder and head batches, LLM tokens with their model) on
each device, so Trn2 and Trn3 are priced for identical work however the calls were actually served.

A viewer with a tenant sees that tenant's receipts only; one without sees every tenant's: spend made without a
tenant is the gateway's ``NO_TENANT`` or, charged by an ``Accelerator`` that names none, the tenant
``"default"``, so "no tenant" is not one set of receipts (as the gateway's budget rules say of it).
"""

from __future__ import annotations

import datetime

from sqlalchemy import select

from agentcore.accel.ledger import Ledger, ReceiptRow, SpendRow
from agentcore.accel.replay import DEFAULT_DEVICES, Replay, onnx_resolver, replay
from agentcore.evaluations.models import HEADS_DIR

GROUPS = ("tenant", "agent", "user", "profile")


def by_group(ledger: Ledger, group: str, tenant: str | None) -> list[SpendRow]:
    """``tenant``'s spend (None: every tenant's) by ``group``, the largest first."""
    return sorted(ledger.report(by=(group,), tenant=tenant), key=lambda row: -row.usd)  # type: ignore[arg-type]


def same_work(ledger: Ledger, tenant: str | None) -> Replay:
    """``tenant``'s calls (None: all) replayed on Trn2 and Trn3; the evaluations' task heads are found by name."""
    return replay(ledger, DEFAULT_DEVICES, onnx_resolver([HEADS_DIR]), tenant=tenant)


def daily(ledger: Ledger, tenant: str | None, group: str = "tenant") -> dict[str, list[tuple[float, float]]]:
    """group value -> [(day start, simulated USD that day)], of ``tenant``'s receipts (None: every tenant's)."""
    ledger.flush()
    column = getattr(ReceiptRow, group)
    query = select(ReceiptRow.at, column, ReceiptRow.usd)  # type: ignore[call-overload]
    if tenant is not None:
        query = query.where(ReceiptRow.tenant == tenant)
    with ledger.engine.connect() as connection:
        rows = connection.execute(query).all()
    totals: dict[str, dict[float, float]] = {}
    for at, key, usd in rows:
        moment = at if at.tzinfo else at.replace(tzinfo=datetime.UTC)
        start = datetime.datetime(moment.year, moment.month, moment.day, tzinfo=datetime.UTC).timestamp()
        per_day = totals.setdefault(str(key or "-"), {})
        per_day[start] = per_day.get(start, 0.0) + float(usd)
    return {key: sorted(days.items()) for key, days in totals.items()}
