"""Gateway test fixtures: a support-desk gateway with real policies, a private PostgreSQL schema, a Redis prefix."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, text

from agentcore.gateway import Gateway


@pytest.fixture
def pg_url(postgres_url: str) -> Iterator[str]:
    """A PostgreSQL URL whose search_path is a fresh schema, dropped afterwards (runs never collide)."""
    schema = f"gw_{uuid.uuid4().hex[:12]}"
    admin = create_engine(postgres_url)
    with admin.begin() as conn:
        conn.execute(text(f"CREATE SCHEMA {schema}"))
    try:
        yield f"{postgres_url}?options=-csearch_path%3D{schema}"
    finally:
        with admin.begin() as conn:
            conn.execute(text(f"DROP SCHEMA {schema} CASCADE"))
        admin.dispose()


@pytest.fixture
def redis_prefix(redis_url: str) -> Iterator[str]:
    """A unique key prefix in the test Redis; its keys are deleted afterwards."""
    import redis

    prefix = f"agentcore-test:{uuid.uuid4().hex[:12]}"
    yield prefix
    client = redis.Redis.from_url(redis_url)
    keys = list(client.scan_iter(f"{prefix}:*"))
    if keys:
        client.delete(*keys)
    client.close()


POLICY = """policy "support" version 1 owner "platform-team"

allow crm.lookup for users with role "support".
redact email addresses and card numbers in results of crm.lookup.
allow refunds.issue for users with role "support" when amount is at most 500.
require approval from role "manager" for refunds.issue when amount is more than 500.
deny refunds.issue when amount is more than 5000.
allow orders.cancel for users with role "support".
deny orders.cancel when order(order_id).status is not "pending".
allow notes.add.
limit notes.add to 3 calls per minute per user.
allow email.send.
deny email.send unless recipient ends with "@example.com".
allow files.delete for users with role "admin".
monitor deny files.delete.
suppress output of vault.read.
allow vault.read for users with role "admin".
"""

SUPPORT = {"id": "alice", "roles": ["support"]}
MANAGER = {"id": "mona", "roles": ["manager"]}


def write_policy(folder: Path, text: str = POLICY) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "support.policy").write_text(text, encoding="utf-8")
    return folder


def build_support_gateway(tmp_path: Path, policy: str = POLICY, **options: Any) -> tuple[Gateway, dict[str, int]]:
    """A gateway with the support tools registered; ``runs`` counts executions per tool."""
    options.setdefault("database", str(tmp_path / "gw.db"))
    gw = Gateway(write_policy(tmp_path / "policies", policy), **options)
    runs: dict[str, int] = {}

    def ran(name: str) -> None:
        runs[name] = runs.get(name, 0) + 1

    @gw.tool(name="crm.lookup")
    def lookup(customer_id: str) -> dict[str, Any]:
        """Look up a customer."""
        ran("crm.lookup")
        return {"id": customer_id, "email": "jane@corp.example", "card": "4111 1111 1111 1111", "tier": "gold"}

    @gw.tool(name="refunds.issue")
    def refund(order_id: str, amount: float) -> dict[str, Any]:
        ran("refunds.issue")
        return {"order_id": order_id, "refunded": amount}

    orders = {"o1": {"status": "pending"}, "o2": {"status": "delivered"}}

    @gw.resolver("order")
    def load_order(order_id: Any) -> dict[str, Any] | None:
        return orders.get(order_id)

    @gw.tool(name="orders.cancel")
    def cancel(order_id: str) -> str:
        ran("orders.cancel")
        return f"cancelled {order_id}"

    @gw.tool(name="notes.add")
    async def add_note(text: str) -> str:
        await asyncio.sleep(0.001)  # a real await: concurrent calls interleave between admission and history
        ran("notes.add")
        return text

    @gw.tool(
        name="email.send",
        schema={
            "type": "object",
            "properties": {"recipient": {"type": "string"}, "body": {"type": "string"}},
            "required": ["recipient"],
        },
    )
    def send(recipient: str, body: str = "") -> str:
        ran("email.send")
        return "sent"

    @gw.tool(name="files.delete")
    def delete(path: str) -> bool:
        ran("files.delete")
        return True

    @gw.tool(name="vault.read")
    def vault(key: str) -> str:
        ran("vault.read")
        return "s3cr3t"

    return gw, runs


@pytest.fixture
def killed_after() -> Callable[[list[str], int], int]:
    """``killed_after(args, n)``: run ``python args...``, which prints a rising count after each write it made
    durable; kill -9 it once it has printed ``n``, and return the last count it printed."""

    def run(args: list[str], stop_at: int) -> int:
        proc = subprocess.Popen([sys.executable, *args], stdout=subprocess.PIPE, text=True)
        assert proc.stdout is not None
        printed = -1
        for line in proc.stdout:
            printed = int(line)
            if printed >= stop_at:
                break
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        return printed

    return run


@pytest.fixture
def make_gateway(tmp_path: Path) -> Iterator[Callable[..., tuple[Gateway, dict[str, int]]]]:
    """Factory: ``make_gateway(**Gateway options)`` -> (support gateway, executions per tool); closed afterwards."""
    made: list[Gateway] = []

    def make(**options: Any) -> tuple[Gateway, dict[str, int]]:
        gw, runs = build_support_gateway(tmp_path, **options)
        made.append(gw)
        return gw, runs

    yield make
    for gw in made:
        gw.close()
