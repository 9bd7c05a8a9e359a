"""Spend: simulated accelerator cost by tenant, agent and user, per day, and per device profile.

Every figure is simulated (accel's cost model over the ledger's receipts). Profiles are compared per item
served, so Trn2 and Trn3 stand side by side for the same unit of work even when they served different volumes.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass

from sqlalchemy import select

from agentcore.accel.ledger import Ledger, ReceiptRow, SpendRow

GROUPS = ("tenant", "agent", "user")


@dataclass(frozen=True)
class ProfileCost:
    profile: str
    items: int
    usd: float
    device_seconds: float

    @property
    def usd_per_1k_items(self) -> float:
        return 1000 * self.usd / self.items if self.items else 0.0

    @property
    def device_ms_per_item(self) -> float:
        return 1000 * self.device_seconds / self.items if self.items else 0.0


def by_group(ledger: Ledger, group: str) -> list[SpendRow]:
    return sorted(ledger.report(by=(group,)), key=lambda row: -row.usd)  # type: ignore[arg-type]


def by_profile(ledger: Ledger) -> list[ProfileCost]:
    rows = ledger.report(by=("profile",))
    return [ProfileCost(str(r.group["profile"] or "?"), r.items, r.usd, r.device_seconds) for r in rows]


def daily(ledger: Ledger, group: str = "tenant") -> dict[str, list[tuple[float, float]]]:
    """group value -> [(day start, simulated USD that day)]."""
    ledger.flush()
    column = getattr(ReceiptRow, group)
    with ledger.engine.connect() as connection:
        rows = connection.execute(select(ReceiptRow.at, column, ReceiptRow.usd)).all()  # type: ignore[call-overload]
    totals: dict[str, dict[float, float]] = {}
    for at, key, usd in rows:
        moment = at if at.tzinfo else at.replace(tzinfo=datetime.UTC)
        start = datetime.datetime(moment.year, moment.month, moment.day, tzinfo=datetime.UTC).timestamp()
        per_day = totals.setdefault(str(key or "-"), {})
        per_day[start] = per_day.get(start, 0.0) + float(usd)
    return {key: sorted(days.items()) for key, days in totals.items()}
