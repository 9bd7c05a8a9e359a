"""Persisted gateway status, so `agentcore gateway status` in another process can show the active bundle
and the last reload error of each running gateway."""

from __future__ import annotations

import json
import os
import time

from pydantic import BaseModel
from sqlmodel import Field, SQLModel

from agentcore.gateway import canonical
from agentcore.gateway.db import Database
from agentcore.gateway.policy_source import PolicyStatus


class StatusRow(SQLModel, table=True):
    __tablename__ = "gateway_status"

    name: str = Field(primary_key=True)
    pid: int
    mode: str
    paths: str
    bundle_hash: str
    loaded_at: float
    last_error: str | None = None
    last_error_at: float | None = None
    updated: float


class GatewayStatus(BaseModel):
    """One gateway's last reported status."""

    name: str
    pid: int
    mode: str
    paths: list[str]
    bundle_hash: str
    loaded_at: float
    last_error: str | None
    last_error_at: float | None
    updated: float


_COLS = ("name", "pid", "mode", "paths", "bundle_hash", "loaded_at", "last_error", "last_error_at", "updated")


class StatusBoard:
    """Writes this gateway's status row; reads everyone's."""

    def __init__(self, db: Database) -> None:
        self.db = db
        db.create([StatusRow])
        self._insert = db.sql(f"INSERT INTO gateway_status ({', '.join(_COLS)}) VALUES ({', '.join('?' * len(_COLS))})")

    def publish(self, name: str, mode: str, status: PolicyStatus) -> None:
        row = (
            name, os.getpid(), mode, canonical.dumps(status.paths), status.bundle_hash, status.loaded_at,
            status.last_error, status.last_error_at, time.time(),
        )  # fmt: skip
        with self.db.write("gateway_status") as cur:
            cur.execute(self.db.sql("DELETE FROM gateway_status WHERE name = ?"), (name,))
            cur.execute(self._insert, row)

    def read(self) -> list[GatewayStatus]:
        with self.db.read() as cur:
            cur.execute(f"SELECT {', '.join(_COLS)} FROM gateway_status ORDER BY name")
            rows = cur.fetchall()
        statuses = []
        for row in rows:
            values = dict(zip(_COLS, row, strict=True))
            values["paths"] = json.loads(values["paths"])
            statuses.append(GatewayStatus(**values))
        return statuses
