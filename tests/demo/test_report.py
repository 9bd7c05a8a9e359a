"""The demo's ``index.html`` explains itself: charts with real ticks and whole labels (measured in headless
Chromium), readable amounts, each conversation linked to its transcript, and one customer per session everywhere."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agentcore.demo.app import DemoReport


def test_report_in_chromium_has_readable_charts_and_links_to_transcripts(
    demo_run: tuple[DemoReport, Path], chromium: Any, artifacts: Path, readable_charts: Callable[..., Any]
) -> None:
    report, out = demo_run
    page = chromium.new_page(viewport={"width": 1280, "height": 900})
    page.goto((out / "index.html").as_uri())
    charts = readable_charts(page, at_least=6)
    names = {c["chart"] for c in charts}
    assert {"Gateway decisions by tool", "Simulated latency, trn3-ultraserver-gen2"} <= names
    assert any(name.startswith("Simulated LLM cost per conversation") for name in names)
    page.screenshot(path=str(artifacts / "demo-report.png"), full_page=True)
    for css in ("decisions", "llm-cost", "latency"):  # the charts alone, small enough for the docs
        page.locator(f"svg.chart.{css}").first.screenshot(path=str(artifacts / f"demo-{css}.png"))
    first = report.sessions[1]
    page.click(f"a.transcript[href='transcripts.html#{first.session_id}']")
    page.wait_for_url(f"**/transcripts.html#{first.session_id}")
    section = page.locator(f"section[id='{first.session_id}']")
    assert section.locator("code.customer").inner_text() == first.customer
    assert section.locator("p.decision").count() == first.calls
    page.screenshot(path=str(artifacts / "demo-transcript.png"))
    denied = page.locator("p.decision", has_text="DENIED").first
    assert "by rule" in denied.inner_text(), "a denial names its rule in the transcript"
    approved = page.locator("p.decision", has_text="approved by").first
    assert "supervisor.dana" in approved.inner_text()
    page.goto((out / "evaluation.html").as_uri())
    readable_charts(page, at_least=len(report.evaluation.evaluators) + 1)
    page.screenshot(path=str(artifacts / "demo-evaluation.png"), full_page=True)
    page.close()


def test_transcripts_and_report_agree_on_each_customer(demo_run: tuple[DemoReport, Path]) -> None:
    report, out = demo_run
    markdown = (out / "transcripts.md").read_text(encoding="utf-8")
    said = dict(re.findall(r"^## (\S+): .*\n\nCustomer `([^`]+)`", markdown, flags=re.MULTILINE))
    html = (out / "transcripts.html").read_text(encoding="utf-8")
    shown = dict(re.findall(r'<section id="([^"]+)">.*?<code class="customer">([^<]+)</code>', html))
    assert len(said) == len(shown) == len(report.sessions)
    for session in report.sessions:
        expected = session.customer or said[session.session_id]
        assert said[session.session_id] == shown[session.session_id] == expected, session.session_id
    assert any(s.customer is None for s in report.sessions), "a guest session: 'not identified' in every view"


def test_report_explains_its_terms_and_prints_readable_amounts(demo_run: tuple[DemoReport, Path]) -> None:
    report, out = demo_run
    index = (out / "index.html").read_text(encoding="utf-8")
    text = re.sub(r"<[^>]+>", " ", index)
    for term in ("as scripted", "$ fleet held", "simulated", "measured", "reported only", "Refusal"):
        assert f"<dt>{term}" in index or term in text, term
    assert not re.search(r"\d(\.\d+)?e-\d", text), "no exponent notation in the report"
    assert "µ$" in text and "$ per 1,000 conversations" in text
    assert report.llm_costs is not None and report.llm_costs.cost.model in text and "input tokens" in text
    for item in report.memory.carried_over:  # the remembered value itself, not only its kind
        assert str(item["value"]).replace('"', "&quot;") in index
    links = re.findall(r'href="transcripts\.html#([^"]+)"', index)
    assert links == [s.session_id for s in report.sessions]
