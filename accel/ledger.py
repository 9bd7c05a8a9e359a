"""The cost ledger: every accelerator receipt persisted, and spend queries for budgets and reports.

Receipts go to ``accel_receipts`` (one row per call) and ``accel_receipt_devices`` (one row per
simulated NeuronCore the call used, with that core's share of time, dollars and joules), so spend can
be cut by tenant, agent, user, model, profile or device over any time window. The policy engine's
budget rules read :meth:`Ledger.spend` through the gateway. All dollars and joules are simulated.
"""

from __future__ import annotations

import atexit
import csv
import json
import logging
import threading
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict
from sqlalchemy import Engine, create_engine, event, func, insert, inspect, literal, select, text
from sqlalchemy.engine import make_url
from sqlmodel import Field, SQLModel

from agentcore.accel.sim.device import DeviceShare
from agentcore.config import as_url, database_url
from agentcore.errors import ConfigError
from agentcore.text import canonical_text

if TYPE_CHECKING:
    from agentcore.accel.runtime import Receipt

log = logging.getLogger(__name__)
GROUP_KEYS = ("tenant", "agent", "user", "model", "variant", "profile", "device", "kind")
GroupKey = Literal["tenant", "agent", "user", "model", "variant", "profile", "device", "kind"]
# Columns added after the first release, with the value existing rows get (ALTER TABLE ... ADD COLUMN).
_ADDED_COLUMNS = {
    "kind": ("VARCHAR", "'embedding'"),
    "input_tokens": ("INTEGER", "0"),
    "output_tokens": ("INTEGER", "0"),
}


class ReceiptRow(SQLModel, table=True):
    """One accelerator call: who, what, and its measured CPU and simulated device cost."""

    __tablename__ = "accel_receipts"

    id: int | None = Field(default=None, primary_key=True)
    at: datetime = Field(index=True)
    tenant: str = Field(index=True)
    agent: str | None = Field(default=None, index=True)
    user: str | None = Field(default=None, index=True)
    model: str = Field(index=True)
    variant: str
    kind: str = "embedding"  # embedding, llm, ... (a column added in place to older ledgers)
    profile: str | None = None
    items: int
    batches: int
    tokens: int
    input_tokens: int = 0  # LLM calls: prompt and completion tokens priced by the serving model
    output_tokens: int = 0
    cpu_seconds: float
    queue_seconds: float
    device_seconds: float
    latency_seconds: float = 0.0
    usd: float
    joules: float
    rejected: bool = False


class ReceiptDeviceRow(SQLModel, table=True):
    """One simulated NeuronCore's part of a call."""

    __tablename__ = "accel_receipt_devices"

    id: int | None = Field(default=None, primary_key=True)
    receipt_id: int = Field(foreign_key="accel_receipts.id", index=True)
    at: datetime = Field(index=True)
    device: str = Field(index=True)
    device_seconds: float
    usd: float
    joules: float


class Spend(BaseModel):
    """Simulated spend of one group in one window."""

    model_config = ConfigDict(frozen=True)

    usd: float = 0.0
    joules: float = 0.0
    device_seconds: float = 0.0
    calls: int = 0
    items: int = 0


class SpendRow(Spend):
    group: dict[str, str | None]


def _engine(url: str) -> Engine:
    """An engine for ``url``; SQLite files get their folder created and WAL mode (readers never block writers)."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite" and parsed.database not in (None, "", ":memory:"):
        Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(url)
    if parsed.get_backend_name() == "sqlite":

        @event.listens_for(engine, "connect")
        def _pragmas(connection: Any, _record: Any) -> None:
            cursor = connection.cursor()
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA synchronous=NORMAL")
            cursor.execute("PRAGMA busy_timeout=30000")
            cursor.close()

    return engine


def _migrate(engine: Engine) -> None:
    """Add the columns a ledger written by an older version lacks, in place (existing rows keep their data)."""
    present = {column["name"] for column in inspect(engine).get_columns(ReceiptRow.__tablename__)}
    missing = {name: spec for name, spec in _ADDED_COLUMNS.items() if name not in present}
    if not missing:
        return
    with engine.begin() as connection:
        for name, (sql_type, default) in missing.items():
            connection.execute(
                text(f"ALTER TABLE {ReceiptRow.__tablename__} ADD COLUMN {name} {sql_type} NOT NULL DEFAULT {default}")
            )
    log.info("ledger schema: added columns %s to %s", ", ".join(missing), ReceiptRow.__tablename__)


# Ledgers holding unwritten receipts, held strongly so a temporary Accelerator's receipts outlive it.
_UNFLUSHED: set[Ledger] = set()
_UNFLUSHED_LOCK = threading.Lock()


@atexit.register
def _flush_at_exit() -> None:
    """Write what every ledger still buffers when the process ends; a vanished database is logged, not raised."""
    with _UNFLUSHED_LOCK:
        ledgers = list(_UNFLUSHED)
    for ledger in ledgers:
        try:
            ledger.flush()
        except Exception as error:  # SQLAlchemy and DBAPI errors alike; the process is ending anyway
            log.warning("could not flush %d buffered receipts at exit: %s", len(ledger._pending), error)


_OWNER = ("tenant", "agent", "user")
# The tenant of spend made without one (``Gateway.record_llm_usage(tenant=None)``). Its fullwidth parentheses are
# not canonical text, and every other tenant is filed and selected in canonical form, so no tenant (not even one
# named "default" or "(no tenant)") shares its receipts or its budget.
NO_TENANT = "\uff08no tenant\uff09"


def _canonical_owner(fields: dict[str, Any]) -> dict[str, Any]:
    """``fields`` with its tenant, agent and user in canonical text, as the gateway's budget rules name them: a
    receipt filed under ``ａｃｍｅ`` or ``bob\\u200b`` is acme's and bob's spend, not a budget's blind spot."""
    return {
        key: canonical_text(v) if key in _OWNER and isinstance(v, str) and v != NO_TENANT else v
        for key, v in fields.items()
    }


class Ledger:
    """Receipts in a SQL database (default: :func:`agentcore.config.database_url`)."""

    def __init__(
        self,
        url: str | None = None,
        *,
        engine: Engine | None = None,
        buffer: int = 64,
        flush_interval_s: float = 1.0,
    ) -> None:
        if engine is None:
            engine = _engine(as_url(url, Path.cwd()) if url else database_url())
        self.engine = engine
        SQLModel.metadata.create_all(engine, tables=[ReceiptRow.__table__, ReceiptDeviceRow.__table__])  # type: ignore[attr-defined]
        _migrate(engine)
        self.buffer = max(1, buffer)
        if flush_interval_s <= 0:
            raise ConfigError(f"flush_interval_s must be positive, got {flush_interval_s}")
        self.flush_interval_s = flush_interval_s
        self._pending: list[tuple[dict[str, Any], Sequence[DeviceShare]]] = []
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None

    def record(self, receipt: Receipt, shares: Sequence[DeviceShare] = (), *, at: datetime | None = None) -> None:
        """Queue one receipt and each device's share of it; written in one transaction per ``buffer`` receipts.

        A queued receipt is written within ``flush_interval_s`` (a timer), at the next read (:meth:`spend`,
        :meth:`report`, :meth:`export` flush first, so a budget check always sees every receipt recorded
        before it), or at process exit, whichever comes first, even if the ledger object itself is dropped.
        """
        row = _canonical_owner(receipt.model_dump(include=set(ReceiptRow.model_fields) - {"id", "at"}))
        row["at"] = at or datetime.now(UTC)
        with self._lock:
            self._pending.append((row, shares))
            full = len(self._pending) >= self.buffer
            if not full and self._timer is None:
                with _UNFLUSHED_LOCK:
                    _UNFLUSHED.add(self)
                self._timer = threading.Timer(self.flush_interval_s, self._flush_on_timer)
                self._timer.daemon = True
                self._timer.start()
        if full:
            self.flush()

    def _flush_on_timer(self) -> None:
        try:
            self.flush()
        except Exception as error:  # the receipts stay queued for the next record, read or exit
            log.warning("could not flush %d buffered receipts: %s", len(self._pending), error)
            with self._lock:
                self._timer = None

    def flush(self) -> None:
        """Write queued receipts now, in one transaction; on failure they stay queued and the error propagates."""
        with self._lock:
            if not self._pending:
                return
            with self.engine.begin() as connection:
                for row, shares in self._pending:
                    receipt_id = connection.execute(insert(ReceiptRow).values(**row)).inserted_primary_key[0]  # type: ignore[index]
                    if shares:
                        connection.execute(
                            insert(ReceiptDeviceRow),
                            [
                                {"receipt_id": receipt_id, "at": row["at"], "device": device,
                                 "device_seconds": seconds, "usd": usd, "joules": joules}
                                for device, seconds, usd, joules in shares
                            ],
                        )  # fmt: skip
            self._pending = []
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            with _UNFLUSHED_LOCK:
                _UNFLUSHED.discard(self)

    def _filters(self, table: Any, window: timedelta | None, now: datetime | None, **keys: str | None) -> list[Any]:
        clauses = [
            getattr(ReceiptRow, key) == value for key, value in _canonical_owner(keys).items() if value is not None
        ]
        if window is not None:
            if window <= timedelta(0):
                raise ConfigError(f"spend window must be positive, got {window}")
            clauses.append(table.at >= (now or datetime.now(UTC)) - window)
        return clauses

    def spend(
        self,
        *,
        tenant: str | None = None,
        agent: str | None = None,
        user: str | None = None,
        model: str | None = None,
        device: str | None = None,
        kind: str | None = None,
        window: timedelta | None = None,
        now: datetime | None = None,
    ) -> Spend:
        """Dollars, joules and device-seconds charged to the matching receipts in the last ``window``."""
        rows = self.report(
            by=(), tenant=tenant, agent=agent, user=user, model=model, device=device, kind=kind, window=window, now=now
        )
        return Spend(**rows[0].model_dump(exclude={"group"})) if rows else Spend()

    def report(
        self,
        by: Sequence[GroupKey] = ("tenant",),
        *,
        tenant: str | None = None,
        agent: str | None = None,
        user: str | None = None,
        model: str | None = None,
        device: str | None = None,
        kind: str | None = None,
        window: timedelta | None = None,
        now: datetime | None = None,
    ) -> list[SpendRow]:
        """Spend grouped by any of :data:`GROUP_KEYS`; grouping or filtering by device uses per-core shares."""
        unknown = [key for key in by if key not in GROUP_KEYS]
        if unknown:
            raise ConfigError(f"cannot group spend by {unknown}; choose from {', '.join(GROUP_KEYS)}")
        per_device = "device" in by or device is not None
        source: Any = ReceiptDeviceRow if per_device else ReceiptRow
        columns: list[Any] = [
            (ReceiptDeviceRow.device if key == "device" else getattr(ReceiptRow, key)).label(key)  # type: ignore[union-attr]
            for key in by
        ]
        clauses = self._filters(source, window, now, tenant=tenant, agent=agent, user=user, model=model, kind=kind)
        if device is not None:
            clauses.append(ReceiptDeviceRow.device == device)
        query = select(
            *columns,
            func.coalesce(func.sum(source.usd), 0.0),
            func.coalesce(func.sum(source.joules), 0.0),
            func.coalesce(func.sum(source.device_seconds), 0.0),
            func.count(func.distinct(ReceiptRow.id)),
            literal(0) if per_device else func.coalesce(func.sum(ReceiptRow.items), 0),
        )
        if per_device:
            query = query.select_from(ReceiptDeviceRow).join(ReceiptRow, ReceiptRow.id == ReceiptDeviceRow.receipt_id)  # type: ignore[arg-type]
        query = query.where(*clauses).group_by(*columns)
        self.flush()
        with self.engine.connect() as connection:
            result = connection.execute(query).all()
        n = len(by)
        return [
            SpendRow(
                group=dict(zip(by, row[:n], strict=True)),
                usd=row[n],
                joules=row[n + 1],
                device_seconds=row[n + 2],
                calls=row[n + 3],
                items=row[n + 4],
            )
            for row in result
            if row[n + 3]
        ]

    def export(self, path: Path, *, window: timedelta | None = None, now: datetime | None = None) -> int:
        """Write the receipts (``.csv`` or ``.json`` by suffix) and return how many."""
        if path.suffix not in {".csv", ".json"}:
            raise ConfigError(f"export path {path} must end in .csv or .json")
        query = select(ReceiptRow).where(*self._filters(ReceiptRow, window, now)).order_by(ReceiptRow.at)  # type: ignore[arg-type]
        self.flush()
        with self.engine.connect() as connection:
            rows = [dict(row._mapping) for row in connection.execute(query)]
        for row in rows:
            row["at"] = row["at"].isoformat()
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.suffix == ".json":
            path.write_text(json.dumps(rows, indent=1))
        else:
            with path.open("w", newline="") as handle:
                writer = csv.DictWriter(handle, fieldnames=list(ReceiptRow.model_fields))
                writer.writeheader()
                writer.writerows(rows)
        log.info("exported %d receipts to %s", len(rows), path)
        return len(rows)
