"""``agentcore accel``: every command's --json output and its errors."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from agentcore.accel.ledger import Ledger
from agentcore.accel.runtime import Receipt
from agentcore.cli import app

runner = CliRunner()


def _json(*args: str) -> dict:  # type: ignore[type-arg]
    result = runner.invoke(app, ["accel", *args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_profiles_lists_systems_and_cites_figures() -> None:
    listed = _json("profiles")
    assert listed["trn3-ultraserver-gen2"]["cores"] == 1152 and listed["trn4"]["projected"] is True
    cited = _json("profiles", "--cite", "trn3", "--set", "trn3.usd_per_chip_hour=4.1")
    assert cited["figures"]["usd_per_chip_hour"]["value"] == 4.1
    assert cited["figures"]["hbm_tbps"]["url"].startswith("https://awsdocs-neuron")


def test_compare_reports_the_throughput_ratio() -> None:
    compared = _json("compare", "trn2-ultraserver", "trn3-ultraserver-gen2", "--workload", "memory-bound")
    assert 3.4 < compared["throughput_ratio"] < 4.2
    assert compared["a"]["simulated"] is True


def test_simulate_writes_a_report_and_two_charts(tmp_path: Path) -> None:
    report = _json("simulate", "--profile", "trn2", "--workload", "memory-bound", "--out", str(tmp_path))
    assert report["completed"] == 4608
    written = sorted(path.name for path in tmp_path.iterdir())
    assert written == [
        "trn2-memory-bound-latency-cdf.svg",
        "trn2-memory-bound-utilisation.svg",
        "trn2-memory-bound.json",
    ]
    assert (tmp_path / "trn2-memory-bound-utilisation.svg").read_text().startswith("<svg")


def test_capacity_answers_with_a_chip_count() -> None:
    plan = _json("capacity", "--model", "mlp-1024x4", "--rps", "1e9", "--p99-ms", "5", "--unit", "trn3")
    assert plan["chips"] >= 1 and plan["per_unit_p99_ms"] <= 5


def test_ledger_reports_spend_from_the_database(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'agentcore.db'}"
    ledger = Ledger(url)
    receipt = Receipt(model="m", variant="fp32", tenant="acme", items=2, batches=1, cpu_seconds=0.1, usd=0.5)
    ledger.record(receipt)
    ledger.flush()
    out = _json("ledger", "--database", url, "--by", "tenant", "--window", "1h", "--export", str(tmp_path / "r.csv"))
    assert out["rows"][0]["group"] == {"tenant": "acme"} and out["rows"][0]["usd"] == 0.5
    assert out["exported"] == 1
    for hostile in ("x[/]", "[bold red]root", "\x1b[2Jbob"):  # ids the report printed as markup or raw escapes
        ledger.record(receipt.model_copy(update={"user": hostile}))
    ledger.flush()
    table = runner.invoke(app, ["accel", "ledger", "--database", url, "--by", "user"])
    assert table.exit_code == 0, table.output
    assert "x[/]" in table.output and "[bold red]root" in table.output and "\\x1b[2Jbob" in table.output
    assert "\x1b" not in table.output


def test_errors_are_one_line_and_actionable() -> None:
    unknown = runner.invoke(app, ["accel", "simulate", "--profile", "trn9", "--json"])
    assert unknown.exit_code == 2 and "known profiles: " in unknown.output and "trn1.32xlarge" in unknown.output
    bad_window = runner.invoke(app, ["accel", "ledger", "--window", "soon"])
    assert bad_window.exit_code == 2 and "expected a number and a unit" in bad_window.output
    bad_set = runner.invoke(app, ["accel", "profiles", "--set", "trn3.usd_per_chip_hour"])
    assert bad_set.exit_code == 2 and "CHIP.FIELD=NUMBER" in bad_set.output
