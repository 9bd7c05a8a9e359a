"""LLM usage in the ledger: kind and token columns (migrated in place), rate cards, budget rules' spend."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from agentcore.accel.errors import ProfileError
from agentcore.accel.ledger import Ledger
from agentcore.accel.serving.catalogue import load_llms
from agentcore.accel.serving.costmodel import ReplicaCost
from agentcore.accel.serving.pricing import card_for
from agentcore.accel.serving.simulation import Requests, simulate
from agentcore.accel.serving.usage import record_llm_usage
from agentcore.accel.sim.profiles import load_catalog
from agentcore.accel.sim.workload import BurstArrivals

_OLD_SCHEMA = """
CREATE TABLE accel_receipts (id INTEGER PRIMARY KEY, at DATETIME NOT NULL, tenant VARCHAR NOT NULL, agent VARCHAR,
  user VARCHAR, model VARCHAR NOT NULL, variant VARCHAR NOT NULL, profile VARCHAR, items INTEGER NOT NULL,
  batches INTEGER NOT NULL, tokens INTEGER NOT NULL, cpu_seconds FLOAT NOT NULL, queue_seconds FLOAT NOT NULL,
  device_seconds FLOAT NOT NULL, latency_seconds FLOAT NOT NULL, usd FLOAT NOT NULL, joules FLOAT NOT NULL,
  rejected BOOLEAN NOT NULL);
INSERT INTO accel_receipts VALUES (1, '2026-11-30 10:00:00', 'acme', NULL, 'ann', 'minilm', 'fp32', 'trn2', 4, 1, 40,
  0.01, 0, 0.001, 0.001, 0.25, 1.0, 0);
"""


def test_an_old_ledger_gains_kind_and_token_columns_in_place(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as connection:
        connection.executescript(_OLD_SCHEMA)
    ledger = Ledger(str(path))
    receipt = record_llm_usage(ledger, "llama-3.1-70b", 2000, 300, device="trn3", tenant="acme", user="ann")
    assert receipt.kind == "llm" and receipt.input_tokens == 2000 and receipt.usd > 0
    rows = {row.group["kind"]: row for row in ledger.report(by=("kind",))}
    assert rows["embedding"].usd == pytest.approx(0.25) and rows["llm"].usd == pytest.approx(receipt.usd)
    assert ledger.spend(user="ann").usd == pytest.approx(0.25 + receipt.usd)
    assert ledger.spend(kind="llm").calls == 1
    with sqlite3.connect(path) as connection:
        old = connection.execute("SELECT kind, input_tokens FROM accel_receipts WHERE id = 1").fetchone()
    assert old == ("embedding", 0)


def test_the_rate_card_prices_what_the_simulation_charges() -> None:
    profiles, llms = load_catalog(), load_llms()
    for device in ("trn2", "trn3", "h100"):
        card = card_for(llms, profiles.chips[device], "llama-3.1-70b", shape=(1000, 1000))
        cost = ReplicaCost(llms.model("llama-3.1-70b"), profiles.chips[device], llms.efficiency(device), card.layout)
        run = simulate(cost, Requests(arrivals=BurstArrivals(size=1500), input_tokens=1000, output_tokens=1000))
        assert card.price(1000, 1000).usd == pytest.approx(run.usd / run.requests, rel=0.05)
    with pytest.raises(ProfileError, match="at least one input and one output token"):
        card_for(llms, profiles.chips["trn3"], "llama-3.1-8b", shape=(0, 10))
    with pytest.raises(ProfileError, match="unknown chip 'tpu'"):
        record_llm_usage(Ledger(":memory:"), "llama-3.1-8b", 1, 1, device="tpu")
