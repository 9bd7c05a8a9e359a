"""End to end: ``agentcore demo`` plays every scenario once and writes a verifiable report folder."""

from __future__ import annotations

import json
import re
import shlex
import sqlite3
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentcore.cli import app
from agentcore.demo.app import INSPECT, DemoReport
from agentcore.demo.scenarios import templates
from agentcore.gateway.audit import AuditLog
from agentcore.gateway.db import Database

VIOLATIONS = {
    "authenticate-first", "other-orders", "one-customer-per-conversation", "refund-to-original-or-gift-card",
    "pending-orders-only", "gift-card-covers-total", "cancellations-per-day",
}  # fmt: skip


def test_every_conversation_goes_as_scripted(demo_run: tuple[DemoReport, Path]) -> None:
    report, _ = demo_run
    assert report.passed and len(report.sessions) == len(templates()) == report.settings.sessions
    assert [s.session_id for s in report.sessions if not s.as_scripted] == []


def test_violations_are_denied_and_one_refund_is_approved(demo_run: tuple[DemoReport, Path]) -> None:
    report, out = demo_run
    denied = dict(report.decisions.top_denials)
    assert set(denied) == VIOLATIONS and report.decisions.denied == len(VIOLATIONS)
    assert report.decisions.needed_approval == 1 and report.decisions.approved == 1
    records = [json.loads(line) for line in (out / "audit.jsonl").read_text().splitlines()]
    approval = next(r for r in records if r["kind"] == "approval")
    assert approval["effect"] == "approved" and approval["detail"]["by"] == "supervisor.dana"
    executed = [r for r in records if r["kind"] == "execution" and r["call_id"] != approval["call_id"]]
    assert any(r["tool"] == "cancel_pending_order" and r["outcome"] == "ok" for r in executed)
    assert report.decisions.allowed == len(executed) > 0  # every executed call was allowed, and counted so
    store = sqlite3.connect(out / "retail.db")
    statuses = dict(store.execute("SELECT order_id, status FROM orders"))
    for r in records:  # a denied write never reached the store
        if r["kind"] == "decision" and r["effect"] == "deny" and r["tool"] == "cancel_pending_order":
            assert statuses[r["detail"]["args"]["order_id"]] != "cancelled"


def test_memory_carries_the_payment_preference_into_a_later_session(demo_run: tuple[DemoReport, Path]) -> None:
    report, out = demo_run
    carried = {item["kind"]: item for item in report.memory.carried_over}
    assert set(carried) == {"payment_method", "address"} and len(report.memory.carried_over) == 2
    assert carried["payment_method"]["remembered_in"].endswith("return-to-gift-card")
    assert carried["address"]["remembered_in"].endswith("default-address")
    moved = json.loads(carried["address"]["value"])
    store = sqlite3.connect(out / "retail.db")
    shipped = [json.loads(a) for (a,) in store.execute("SELECT address FROM orders")]
    assert moved in shipped  # a pending order now ships to the address remembered from the earlier session
    traces = [json.loads(line) for line in (out / "traces.jsonl").read_text().splitlines()]
    exchange = next(t for t in traces if t["id"].endswith("exchange-usual-payment"))
    said = " ".join(turn["input"] for turn in exchange["traces"])
    calls = [c for turn in exchange["traces"] for c in turn["spans"] if c["name"] == "exchange_delivered_order_items"]
    card = carried["payment_method"]["value"]
    assert card not in said  # the customer never named the card in this session
    assert calls[0]["arguments"]["payment_method_id"] == card and calls[0]["decision"] == "allow"
    assert report.memory.preferences >= 3 and report.memory.events > 2 * len(report.sessions)
    identified = [s for s in report.sessions if s.customer is not None]
    assert report.memory.summaries == len(identified)


def test_reports_are_written_and_readable(demo_run: tuple[DemoReport, Path]) -> None:
    report, out = demo_run
    written = ("evaluation.html", "evaluation-junit.xml", "evaluation.json", "traces.jsonl", "suite.toml")
    written += (
        "audit.jsonl",
        "audit-verify.json",
        "transcripts.md",
        "summary.json",
        "accel-receipts.json",
        "index.html",
    )
    for name in written:
        assert (out / name).stat().st_size > 0, name
    junit = ET.parse(out / "evaluation-junit.xml").getroot()
    suites = {suite.get("name"): suite for suite in junit.findall("testsuite")}
    assert len(suites) == len(report.evaluation.evaluators)
    gates = [case for case in junit.iter("testcase") if str(case.get("classname")).endswith(".gates")]
    assert len(gates) == 4 and not [case for case in gates if case.find("failure") is not None]
    assert suites["Builtin.GoalSuccessRate"].get("failures") == "0"
    assert "<html" in (out / "evaluation.html").read_text()
    index = (out / "index.html").read_text()
    linked = re.findall(r'(?:href|src)="([^"]+)"', index)
    assert len(linked) >= 10 and all((out / name.split("#")[0]).is_file() for name in linked)
    lines = {line.evaluator: line for line in report.evaluation.evaluators}
    assert lines["Builtin.GoalSuccessRate"].pass_rate == 1.0 and lines["Builtin.ToolSelectionAccuracy"].passed
    assert DemoReport.model_validate_json((out / "summary.json").read_text()).sessions == report.sessions
    assert report.costs is not None, report.costs_error
    assert [f.profile for f in report.costs.fleets] == ["trn2-ultraserver", "trn3-ultraserver-gen2"]
    assert report.costs.cpu_seconds > 0 and all(f.busy_usd > 0 and f.p99_ms > 0 for f in report.costs.fleets)
    assert list(out.glob("accel-latency-*.svg"))


def test_the_report_prices_each_conversation_as_llm_calls(demo_run: tuple[DemoReport, Path]) -> None:
    report, out = demo_run
    assert report.llm_costs is not None and "characters per token" in report.llm_costs.assumptions
    cost = report.llm_costs.cost
    assert len(cost.sessions) == len(report.sessions) and cost.input_tokens > cost.output_tokens > 0
    assert all(cost.per_session(device) > 0 for device in ("trn2", "trn3", "h100"))
    html = (out / "index.html").read_text()
    assert "LLM cost per conversation" in html and "llama-3.1-70b" in html  # the model and token counts assumed
    assert f"{cost.input_tokens:,} input and {cost.output_tokens:,} output tokens" in html
    assert "by construction" in html  # the 1.4x energy claim is not evidence: Trn3's power is derived from it
    priced = CliRunner().invoke(app, ["accel", "price-traces", str(out / "llm-traces.jsonl"), "--device", "trn3",
                                      "--json"])  # fmt: skip
    assert priced.exit_code == 0 and json.loads(priced.output)["totals"]["trn3"] == pytest.approx(cost.totals["trn3"])


def test_audit_chain_verifies_and_detects_tampering(demo_run: tuple[DemoReport, Path], tmp_path: Path) -> None:
    report, out = demo_run
    assert report.audit["ok"] and report.audit["records"] == len((out / "audit.jsonl").read_text().splitlines())
    copy = tmp_path / "agentcore.db"
    source = sqlite3.connect(out / "agentcore.db")
    target = sqlite3.connect(copy)
    source.backup(target)
    target.execute("UPDATE gateway_audit SET effect = 'allow' WHERE effect = 'deny'")
    target.commit()
    target.close()
    verdict = AuditLog(Database(str(copy))).verify()
    assert not verdict.ok and verdict.problem == "content was modified"


def test_cli_runs_a_small_demo_and_rejects_bad_input(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runner = CliRunner()
    result = runner.invoke(app, ["demo", "--sessions", "2", "--out", str(tmp_path / "small")])
    assert result.exit_code == 0, result.output
    assert "Gateway decisions" in result.output and "demo passed" in result.output
    assert "demo: session" in result.stderr  # not a terminal: progress as plain lines, not nothing
    tables = result.output.split("Evaluation suite", 1)[1].split("Audit log", 1)[0]
    assert "…" not in tables and "trn3-ultraserver-gen2" in tables  # ids and amounts whole at 80 columns
    assert "ToolParameterAccuracy" in tables and "e-0" not in tables
    # The printed commands, run where they say, inspect the demo's own database (its agentcore.toml names it).
    assert f"cd {tmp_path / 'small'}" in result.output and all(command in result.output for command in INSPECT)
    monkeypatch.chdir(tmp_path / "small")
    for command in INSPECT:
        inspected = runner.invoke(app, shlex.split(command)[1:])
        assert inspected.exit_code == 0, (command, inspected.output)
    assert "audit chain intact" in runner.invoke(app, ["gateway", "audit", "verify"]).output
    monkeypatch.chdir(tmp_path)
    assert runner.invoke(app, ["demo", "--sessions", "0"]).exit_code == 2
    (tmp_path / "file").write_text("x")
    bad = runner.invoke(app, ["demo", "--sessions", "1", "--out", str(tmp_path / "file")])
    assert bad.exit_code == 1 and "is a file" in bad.output


def test_demo_plays_your_own_agent_from_a_module_reference(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(Path(__file__).parent))
    runner = CliRunner()
    own = ["demo", "--sessions", "2", "--agent", "own_agent:make", "--out", str(tmp_path / "own")]
    result = runner.invoke(app, own)
    assert result.exit_code == 0, result.output
    import own_agent  # type: ignore[import-not-found]

    assert len(set(own_agent.TURNS)) == 2  # both conversations went through the user's agent
    for bad in ("own_agent:missing", "own_agent:NOT_AN_AGENT", "no-colon"):
        refused = runner.invoke(app, ["demo", "--sessions", "1", "--agent", bad, "--out", str(tmp_path / "bad")])
        assert refused.exit_code == 2 and "--agent" in refused.stderr, (bad, refused.output)
        assert not (tmp_path / "bad").exists()  # refused before any work
