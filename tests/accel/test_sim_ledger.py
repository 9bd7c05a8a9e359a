"""The ledger: receipts persisted, spend by any key and window, per-device shares, CSV/JSON export."""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from agentcore.accel.ledger import Ledger
from agentcore.accel.runtime import Receipt
from agentcore.accel.sim.device import DeviceShare
from agentcore.errors import ConfigError

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


def _receipt(tenant: str, usd: float, *, user: str | None = None, agent: str | None = None) -> Receipt:
    return Receipt(
        model="all-MiniLM-L6-v2", variant="fp32", tenant=tenant, user=user, agent=agent, items=4, batches=1,
        cpu_seconds=0.01, device_seconds=usd * 100, usd=usd, joules=usd * 1000, profile="trn2",
        devices=("trn2/chip0/core0",),
    )  # fmt: skip


@pytest.fixture
def ledger(tmp_path: Path) -> Ledger:
    ledger = Ledger(f"sqlite:///{tmp_path / 'agentcore.db'}", buffer=3)
    ledger.record(_receipt("acme", 1.0, user="ann", agent="triage"), at=NOW - timedelta(minutes=5))
    ledger.record(_receipt("acme", 2.0, user="bob", agent="triage"), at=NOW - timedelta(hours=2))
    ledger.record(_receipt("acme", 4.0, user="ann", agent="billing"), at=NOW - timedelta(days=2))
    ledger.record(_receipt("globex", 8.0, user="cy"), at=NOW - timedelta(minutes=1))
    return ledger


def test_spend_by_key_and_window_sums_dollars_joules_and_device_seconds(ledger: Ledger) -> None:
    hour = ledger.spend(tenant="acme", window=timedelta(hours=1), now=NOW)
    assert (hour.usd, hour.joules, hour.device_seconds, hour.calls, hour.items) == (1.0, 1000.0, 100.0, 1, 4)
    assert ledger.spend(tenant="acme", window=timedelta(days=1), now=NOW).usd == 3.0
    assert ledger.spend(tenant="acme", now=NOW).usd == 7.0
    assert ledger.spend(tenant="acme", user="ann", now=NOW).usd == 5.0
    assert ledger.spend(agent="triage", now=NOW).usd == 3.0
    assert ledger.spend(tenant="nobody").calls == 0


def test_reports_group_by_any_key(ledger: Ledger) -> None:
    by_tenant = {row.group["tenant"]: row.usd for row in ledger.report(by=["tenant"])}
    assert by_tenant == {"acme": 7.0, "globex": 8.0}
    by_user = {(row.group["tenant"], row.group["user"]): row.calls for row in ledger.report(by=["tenant", "user"])}
    assert by_user == {("acme", "ann"): 2, ("acme", "bob"): 1, ("globex", "cy"): 1}


def test_owners_are_kept_in_canonical_form(tmp_path: Path) -> None:
    """Budget rules ask for the canonical ids the gateway decides on: a receipt filed under a fullwidth or
    zero-width spelling was nobody's spend, and a budget of acme's bob never saw it."""
    ledger = Ledger(f"sqlite:///{tmp_path / 'agentcore.db'}")
    ledger.record(_receipt("ａｃｍｅ", 1.0, user="bob\u200b", agent="ｔｒｉａｇｅ"), at=NOW)
    ledger.record(_receipt("acme", 2.0, user="bob", agent="triage"), at=NOW)
    for asked in ({"tenant": "acme", "user": "bob"}, {"tenant": "ａｃｍｅ", "user": "ｂｏｂ"}, {"agent": "triage"}):
        assert ledger.spend(**asked).usd == pytest.approx(3.0), asked
    assert [(row.group, row.usd) for row in ledger.report(by=("tenant", "user"))] == [
        ({"tenant": "acme", "user": "bob"}, 3.0)
    ]


def test_device_shares_are_reported_per_core(tmp_path: Path) -> None:
    ledger = Ledger(f"sqlite:///{tmp_path / 'd.db'}")
    shares = [DeviceShare("trn2/chip0/core0", 0.3, 0.03, 30.0), DeviceShare("trn2/chip0/core1", 0.1, 0.01, 10.0)]
    ledger.record(_receipt("acme", 0.04), shares)
    rows = {row.group["device"]: row for row in ledger.report(by=["device"])}
    assert rows["trn2/chip0/core0"].device_seconds == pytest.approx(0.3)
    assert rows["trn2/chip0/core1"].usd == pytest.approx(0.01)
    assert ledger.spend(device="trn2/chip0/core1").joules == pytest.approx(10.0)


def test_export_writes_every_receipt_as_csv_and_json(ledger: Ledger, tmp_path: Path) -> None:
    assert ledger.export(tmp_path / "out.csv") == 4
    with (tmp_path / "out.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert sorted(float(row["usd"]) for row in rows) == [1.0, 2.0, 4.0, 8.0]
    assert ledger.export(tmp_path / "out.json", window=timedelta(hours=1), now=NOW) == 2
    assert {row["tenant"] for row in json.loads((tmp_path / "out.json").read_text())} == {"acme", "globex"}


def test_receipts_survive_a_new_ledger_on_the_same_database(ledger: Ledger, tmp_path: Path) -> None:
    ledger.flush()
    again = Ledger(f"sqlite:///{tmp_path / 'agentcore.db'}")
    assert again.spend(tenant="globex").usd == 8.0


def test_bad_report_requests_are_clear_errors(ledger: Ledger, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="choose from tenant"):
        ledger.report(by=["colour"])  # type: ignore[list-item]
    with pytest.raises(ConfigError, match="must be positive"):
        ledger.spend(window=timedelta(0))
    with pytest.raises(ConfigError, match=r"\.csv or \.json"):
        ledger.export(tmp_path / "out.xlsx")


# A process that embeds through a temporary Accelerator with the default ledger ($AGENTCORE_DATABASE_URL),
# prints its receipt, then exits at once or waits to be killed.
_TEMPORARY_ACCELERATOR = """
import sys, time
from agentcore import Accelerator
print(Accelerator().embed(["hello"], tenant="t1").receipt.usd, flush=True)
if sys.argv[1] == "wait":
    time.sleep(60)
"""


def _spawn(tmp_path: Path, then: str) -> subprocess.Popen[str]:
    environment = {**os.environ, "AGENTCORE_DATABASE_URL": f"sqlite:///{tmp_path / 'agentcore.db'}"}
    return subprocess.Popen(
        [sys.executable, "-c", _TEMPORARY_ACCELERATOR, then], stdout=subprocess.PIPE, text=True, env=environment
    )


@pytest.mark.slow
def test_a_temporary_accelerators_receipt_reaches_the_ledger_when_the_process_exits(tmp_path: Path) -> None:
    process = _spawn(tmp_path, "exit")
    out, _ = process.communicate(timeout=120)
    assert process.returncode == 0
    assert Ledger(f"sqlite:///{tmp_path / 'agentcore.db'}").spend(tenant="t1").calls == 1
    assert float(out) > 0


@pytest.mark.slow
def test_an_acknowledged_receipt_survives_sigkill_after_the_flush_interval(tmp_path: Path) -> None:
    process = _spawn(tmp_path, "wait")
    try:
        assert process.stdout is not None
        float(process.stdout.readline())  # the receipt was handed to the caller
        ledger = Ledger(f"sqlite:///{tmp_path / 'agentcore.db'}")
        deadline = time.monotonic() + 30  # the default flush interval is 1 s
        while ledger.spend(tenant="t1").calls == 0 and time.monotonic() < deadline:
            time.sleep(0.1)
        os.kill(process.pid, signal.SIGKILL)
    finally:
        process.kill()
        process.wait()
    assert Ledger(f"sqlite:///{tmp_path / 'agentcore.db'}").spend(tenant="t1").calls == 1


def test_buffered_receipts_are_written_within_the_flush_interval(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'agentcore.db'}"
    Ledger(url, flush_interval_s=0.05).record(_receipt("acme", 1.0))  # the object is dropped at once
    reader = Ledger(url)
    deadline = time.monotonic() + 10
    while reader.spend(tenant="acme").calls == 0 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert reader.spend(tenant="acme").calls == 1


def test_the_flush_interval_must_be_positive(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="flush_interval_s must be positive"):
        Ledger(f"sqlite:///{tmp_path / 'agentcore.db'}", flush_interval_s=0)
