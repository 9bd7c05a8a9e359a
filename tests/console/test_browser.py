"""End to end in real headless Chromium (Debian's, driven by Playwright): sign in, approve a pending call and see
it executed once, find a denied call in the audit, see a tampered chain flagged, open an evaluation run, spend.

Each test saves screenshots (see conftest: ``AGENTCORE_SCREENSHOTS=docs/img`` copies them for the docs).
"""

from __future__ import annotations

import sqlite3
import time
from typing import Any

from .conftest import World, token


def _sign_in(page: Any, base: str, sub: str, roles: list[str]) -> None:
    page.goto(f"{base}/approvals")
    assert "/login" in page.url, "an anonymous visitor is sent to sign in"
    page.fill("textarea[name=token]", token(sub, roles))
    page.click("button[type=submit]")
    page.wait_for_selector("#who")
    assert page.inner_text("#who") == sub


def test_sign_in_and_approve_a_pending_call_executed_once(
    world: World, served: str, browser_page: Any, screenshot: Any
) -> None:
    pending = world.call_waiting_for_approval()
    page = browser_page
    page.goto(f"{served}/login")
    screenshot(page, "console-login")
    _sign_in(page, served, "mona", ["manager"])
    row = page.locator(f"tr[data-approval='{pending['approval_id']}']")
    assert "refunds.issue" in row.inner_text() and "alice" in row.inner_text()
    assert "support.policy:" in row.inner_text(), "the rule that asked for approval, with its file:line"
    screenshot(page, "console-approvals")
    row.locator("a").click()
    page.fill("input[name=note]", "refund confirmed with the customer")
    page.click("#approve")
    page.wait_for_selector("text=approved: the gateway runs the call")
    deadline = time.monotonic() + 20
    while "executed" not in page.inner_text("#status"):
        assert time.monotonic() < deadline, "the gateway did not execute the approved call"
        time.sleep(0.2)
        page.reload()
    assert '"refunded": 900.0' in page.inner_text("#result")
    screenshot(page, "console-approval-executed")
    page.go_back()  # a second submission of the same decision is refused, and nothing runs again
    page.reload()
    assert page.locator("#approve").count() == 0
    assert world.runs["refunds.issue"] == 1
    page.goto(f"{served}/approvals")
    history = page.inner_text("#history")
    assert "executed" in history and "refund confirmed with the customer" in history


def test_find_a_denied_call_in_the_audit(world: World, served: str, browser_page: Any, screenshot: Any) -> None:
    from playwright.sync_api import expect

    page = browser_page
    refused: list[str] = []  # the console's CSP must not block its own htmx (its indicator <style>, its eval)
    page.on("console", lambda message: refused.append(message.text) if "Content Security" in message.text else None)
    _sign_in(page, served, "aud", ["auditor"])
    page.goto(f"{served}/audit")
    assert "Chain intact" in page.inner_text("#chain")
    page.select_option("select[name=effect]", "deny")  # htmx refreshes the table on change
    rows = page.locator("#records tr")
    expect(rows).to_have_count(2)  # not wait_for_function: the console's CSP refuses a string evaluated as code
    assert "effect=deny" in page.url
    assert "vault.read" in rows.nth(1).inner_text() and "deny" in rows.nth(1).inner_text()
    screenshot(page, "console-audit-denied")
    rows.nth(1).locator("a").click()
    page.wait_for_selector("#record")
    assert "root-password" in page.inner_text("#record") and "support.policy" in page.inner_text("#record")
    screenshot(page, "console-audit-record")
    assert not refused, refused


def test_a_tampered_chain_is_flagged(world: World, served: str, browser_page: Any, screenshot: Any) -> None:
    with sqlite3.connect(world.root / "gw.db") as db:
        db.execute("UPDATE gateway_audit SET outcome = 'forged' WHERE seq = 2")
    page = browser_page
    _sign_in(page, served, "aud", ["auditor"])
    page.goto(f"{served}/audit")
    assert "Chain BROKEN at record 2" in page.inner_text("#chain")
    assert page.get_attribute("#rec-2", "class") == "broken"
    colour = page.eval_on_selector("#rec-2 td", "cell => getComputedStyle(cell).backgroundColor")
    assert colour == "rgb(255, 235, 233)", "the first broken record is highlighted"
    screenshot(page, "console-audit-tampered")
    page.click("#first-bad")
    assert "the first broken one" in page.inner_text("#record-untrusted")


def test_open_an_evaluation_run_and_the_spend(
    world: World, served: str, browser_page: Any, screenshot: Any, readable_charts: Any
) -> None:
    from agentcore import Accelerator
    from agentcore.accel.ledger import Ledger
    from agentcore.accel.serving.usage import record_llm_usage

    ledger = Ledger(f"sqlite:///{world.root / 'gw.db'}")
    for profile in ("trn2.48xlarge", "trn3-ultraserver-gen1"):
        Accelerator(device=profile, ledger=ledger).embed(["order status"] * 8, tenant="acme", agent="helpdesk-bot")
    for tenant, served_on in (("acme", "trn3"), ("globex", "trn2")):  # the agents' LLM tokens, served on each chip
        record_llm_usage(ledger, "llama-3.1-70b", 2400, 350, device=served_on, tenant=tenant, agent="helpdesk-bot")
    ledger.flush()
    page = browser_page
    _sign_in(page, served, "dev", ["developer"])
    page.goto(f"{served}/evals")
    chart = page.locator("svg.chart").first
    assert chart.is_visible() and chart.locator("text.tick").count() >= 4
    readable_charts(page, 1)
    screenshot(page, "console-evals")
    page.click("text=2026-12-01.json")
    page.wait_for_selector("#summaries")
    assert page.inner_text("#verdict") in ("passed", "FAILED")
    assert "Builtin.ToolSelectionAccuracy" in page.inner_text("#summaries")
    screenshot(page, "console-eval-run")
    page.goto(f"{served}/spend")
    assert "trn3-ultraserver-gen1" in page.inner_text("#by-profile") and "acme" in page.inner_text("#by-tenant")
    assert "globex" in page.inner_text("#same-work") and "of which llm" in page.inner_text("#same-work")
    assert page.locator("svg.chart rect.bar").count() == 2
    readable_charts(page, 2)
    screenshot(page, "console-spend")
