"""`agentcore accel llm-cost`, `capacity --sessions-per-s` and `validate`: JSON, tables, exit codes."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from agentcore.cli import app

runner = CliRunner()


def test_llm_cost_prices_trainium_against_gpus() -> None:
    result = runner.invoke(app, ["accel", "llm-cost", "--model", "llama-3.1-8b", "--device", "trn3", "--device",
                                 "h100", "--input-tokens", "1000", "--output-tokens", "200", "--json"])  # fmt: skip
    assert result.exit_code == 0, result.output
    cards = json.loads(result.output)["cards"]
    assert set(cards) == {"trn3", "h100"} and all(card["simulated"] for card in cards.values())
    assert cards["trn3"]["usd_per_million_output"] > 0 and cards["trn3"]["shape"] == [1000, 200]
    assert cards["trn3"]["model"] == "llama-3.1-8b"  # the model and the token counts assumed are stated
    assert not cards["trn3"]["projected"]
    table = runner.invoke(
        app, ["accel", "llm-cost", "--model", "gpt-oss-120b", "--device", "trn3", "--precision", "fp4"]
    )
    assert table.exit_code == 0 and "fp4" in table.output
    trn4 = runner.invoke(app, ["accel", "llm-cost", "--device", "trn4", "--json"])
    assert trn4.exit_code == 0 and json.loads(trn4.output)["cards"]["trn4"]["projected"]
    no_fp4 = runner.invoke(app, ["accel", "llm-cost", "--device", "trn2", "--precision", "fp4"])
    assert no_fp4.exit_code == 2 and "it supports fp32, bf16, fp8" in no_fp4.output


def test_capacity_for_llm_sessions() -> None:
    result = runner.invoke(
        app, ["accel", "capacity", "--model", "llama-3.1-8b", "--sessions-per-s", "20", "--turns", "2",
              "--input-tokens", "800", "--output-tokens", "100", "--ttft-p99-ms", "1000", "--tpot-p99-ms", "30",
              "--unit", "trn3", "--json"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    plan = json.loads(result.output)
    best = plan["best"]
    assert plan["simulated"] and best["ttft_p99_ms"] <= 1000 and best["tpot_p99_ms"] <= 30
    assert best["replicas"] * best["per_replica_rps"] >= 40
    impossible = runner.invoke(app, ["accel", "capacity", "--model", "llama-3.1-8b", "--sessions-per-s", "1",
                                     "--tpot-p99-ms", "0.1", "--unit", "trn2"])  # fmt: skip
    assert impossible.exit_code == 1 and "no layout" in impossible.output
    neither = runner.invoke(app, ["accel", "capacity", "--model", "minilm"])
    assert neither.exit_code == 2 and "--sessions-per-s" in neither.output


def test_validate_shows_the_energy_check_is_circular_unless_the_power_is_set() -> None:
    result = runner.invoke(app, ["accel", "validate", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    claims = {claim["key"]: claim for claim in data["trn3_vs_trn2"]}
    assert data["simulated"] and len(data["published"]) >= 5
    assert claims["energy"]["by_construction"] and claims["energy-at-press-hint"]["trn3_watts"] == 1000
    table = runner.invoke(app, ["accel", "validate", "--set", "trn3.power_watts=900"])
    assert table.exit_code == 0 and "by construction" not in table.output and "900" in table.output
    bad = runner.invoke(app, ["accel", "validate", "--set", "trn3.power_watts"])
    assert bad.exit_code == 2 and "expected CHIP.FIELD=NUMBER" in bad.output
