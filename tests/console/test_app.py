"""The console over HTTP (Starlette's test client on the real app and database): sign-in, CSRF on every POST,
approver roles checked as the API checks them, exactly-once execution, audit filters, a tampered chain, reports."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import time
from collections.abc import Iterator
from typing import Any

import pytest
from starlette.routing import Route
from starlette.testclient import TestClient

from agentcore import ApprovalRequired
from agentcore.accel import units
from agentcore.accel.ledger import Ledger
from agentcore.console import create_app
from agentcore.console.pages import spend

from .conftest import SUPPORT, World, token


@pytest.fixture
def client(world: World) -> Iterator[TestClient]:
    with TestClient(create_app(world.settings), base_url="http://127.0.0.1") as test_client:
        yield test_client


def _sign_in(client: TestClient, sub: str, roles: list[str], tenant: str | None = None) -> str:
    """Sign in through the form; returns the CSRF token of the signed-in pages."""
    page = client.get("/login")
    login_csrf = re.search(r'name="csrf" value="([^"]+)"', page.text)
    assert login_csrf is not None
    signed = token(sub, roles, tenant=tenant)
    done = client.post("/login", data={"csrf": login_csrf.group(1), "token": signed, "next": "/approvals"})
    assert done.status_code == 200 and f'id="who">{sub}<' in done.text
    found = re.search(r'name="csrf" value="([^"]+)"', done.text)
    assert found is not None
    return found.group(1)


def test_pages_need_a_signed_in_approver(client: TestClient) -> None:
    for path in ("/approvals", "/audit", "/evals", "/spend", "/audit/1"):
        response = client.get(path, follow_redirects=False)
        assert response.status_code == 303 and response.headers["location"].startswith("/login")


def test_bad_tokens_are_refused_with_the_reason(client: TestClient) -> None:
    page = client.get("/login")
    csrf = re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)  # type: ignore[union-attr]
    expired = token("mona", ["manager"], ttl_s=-120)
    response = client.post("/login", data={"csrf": csrf, "token": expired})
    assert response.status_code == 401 and "expired" in response.text.lower()
    forged = client.post("/login", data={"csrf": csrf, "token": "not.a.jwt"})
    assert forged.status_code in (401, 403)
    assert client.get("/approvals", follow_redirects=False).status_code == 303


def test_every_post_checks_its_csrf_token(client: TestClient, world: World) -> None:
    _sign_in(client, "mona", ["manager"])
    pending = world.call_waiting_for_approval()
    posts = [r for r in client.app.routes if isinstance(r, Route) and "POST" in (r.methods or ())]  # type: ignore[attr-defined]
    assert {r.path for r in posts} == {"/login", "/logout", "/approvals/{approval_id}/{verb}"}
    for path in ("/login", "/logout", f"/approvals/{pending['approval_id']}/approve"):
        for form in ({}, {"csrf": "forged"}):
            assert client.post(path, data=form, follow_redirects=False).status_code == 403, (path, form)
    assert world.gateway.approvals.get(pending["approval_id"]).status == "pending"
    world.gateway.approvals.reject(pending["approval_id"], by={"id": "mona", "roles": ["manager"]})


def test_the_request_page_shows_the_arguments_that_will_run(client: TestClient, world: World) -> None:
    """The inbox previews arguments redacted; the page an approver decides on showed them redacted too, so a
    destination a detector matches (an IBAN, an email) was a placeholder and the approver approved it blind."""
    destination = "DE89 3704 0044 0532 0130 00"
    with pytest.raises(ApprovalRequired) as pending:
        world.gateway.call("refunds.issue", {"order_id": destination, "amount": 900}, principal=SUPPORT)
    _sign_in(client, "mona", ["manager"])
    assert destination not in client.get("/approvals").text and "REDACTED" in client.get("/approvals").text
    assert destination in client.get(f"/approvals/{pending.value.approval_id}").text
    world.gateway.approvals.reject(pending.value.approval_id, by={"id": "mona", "roles": ["manager"]})


def test_approval_roles_are_checked_as_the_api_checks_them(client: TestClient, world: World) -> None:
    pending = world.call_waiting_for_approval()
    aid = pending["approval_id"]
    csrf = _sign_in(client, "alice", ["support", "manager"])  # the requester, even holding the role
    own = client.post(f"/approvals/{aid}/approve", data={"csrf": csrf})
    assert own.status_code == 409 and "cannot decide its own approval" in own.text
    csrf = _sign_in(client, "sam", ["support"])
    wrong = client.post(f"/approvals/{aid}/approve", data={"csrf": csrf})
    assert wrong.status_code == 409 and "lacks the approver role" in wrong.text
    assert world.runs.get("refunds.issue") is None
    csrf = _sign_in(client, "mona", ["manager"])
    inbox = client.get("/approvals").text
    assert aid in inbox and "require approval from role" in inbox and "support.policy:" in inbox
    done = client.post(f"/approvals/{aid}/approve", data={"csrf": csrf, "note": "ok by phone"})
    assert done.status_code == 200 and "approved" in done.text
    _wait(lambda: world.gateway.approvals.get(aid).status == "executed")
    assert pending.get("result") == {"order_id": "o-77", "refunded": 900.0} or _wait(lambda: "result" in pending)
    replay = client.post(f"/approvals/{aid}/approve", data={"csrf": csrf})
    assert replay.status_code == 409 and "not pending" in replay.text
    assert world.runs["refunds.issue"] == 1, "approved once, executed once"
    page = client.get(f"/approvals/{aid}").text
    assert 'id="status" class="effect-executed">executed' in page and "refunded" in page
    history = client.get("/approvals").text
    assert "ok by phone" in history and "mona" in history


def test_an_approver_sees_and_decides_only_their_tenants_requests(client: TestClient, world: World) -> None:
    with pytest.raises(ApprovalRequired) as info:
        world.gateway.call("refunds.issue", {"order_id": "o-88", "amount": 900}, principal=SUPPORT, tenant="acme")
    aid = info.value.approval_id
    for tenant in ("globex", None):  # another tenant's manager, and one whose token names no tenant
        csrf = _sign_in(client, "mona", ["manager"], tenant)
        assert aid not in client.get("/approvals").text and client.get(f"/approvals/{aid}").status_code == 404
        for verb in ("approve", "reject"):
            refused = client.post(f"/approvals/{aid}/{verb}", data={"csrf": csrf})
            assert refused.status_code == 409 and "only an approver of" in refused.text
            assert "o-88" not in refused.text and "acme" not in refused.text
    assert world.gateway.approvals.get(aid).status == "pending" and world.runs.get("refunds.issue") is None
    csrf = _sign_in(client, "mona", ["manager"], "acme")
    assert aid in client.get("/approvals").text and 'id="tenant">acme<' in client.get("/approvals").text
    done = client.post(f"/approvals/{aid}/approve", data={"csrf": csrf})
    assert done.status_code == 200 and "approved" in done.text
    assert world.gateway.approvals.execute(aid) == {"order_id": "o-88", "refunded": 900.0}


def _wait(condition: Any, timeout: float = 20) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.05)
    return True


def test_audit_filters_and_a_calls_record(client: TestClient) -> None:
    _sign_in(client, "mona", ["auditor"])
    denied = client.get("/audit", params={"effect": "deny"}).text
    assert "1 matching record." in denied and "vault.read" in denied and "crm.lookup" not in denied
    assert "Chain intact" in denied and "keyed (HMAC-SHA-256)" in denied
    assert "0 matching records" in client.get("/audit", params={"user": "nobody"}).text
    assert "crm.lookup" in client.get("/audit", params={"agent": "helpdesk-bot", "tool": "crm.lookup"}).text
    assert "0 matching records" in client.get("/audit", params={"since": "2999-01-01"}).text
    assert "is not a date" in client.get("/audit", params={"until": "next tuesday"}).text
    seq = re.search(r'<tr id="rec-(\d+)"', denied).group(1)  # type: ignore[union-attr]
    record = client.get(f"/audit/{seq}").text
    assert "root-password" in record and "vault.read" in record
    partial = client.get("/audit", params={"effect": "deny"}, headers={"HX-Request": "true"}).text
    assert partial.lstrip().startswith("<div") and "<html" not in partial


def test_a_viewer_sees_only_their_tenants_audit_records(client: TestClient, world: World) -> None:
    from agentcore.gateway import ToolArgumentError, ToolDenied
    from agentcore.gateway.audit import AuditEvent

    gw = world.gateway
    gw.call("crm.lookup", {"customer_id": "acme-c7"}, principal=SUPPORT, agent="helpdesk-bot", tenant="acme")
    gw.call("crm.lookup", {"customer_id": "globex-c9"}, principal=SUPPORT, agent="globex-bot", tenant="globex")
    with pytest.raises(ToolDenied):
        gw.call("vault.read", {"key": "globex-root"}, principal=SUPPORT, agent="globex-bot", tenant="globex")
    with pytest.raises(ToolArgumentError):  # refused before validation: its labels are canonical all the same
        gw.call("crm.lookup", {"customer_id": "acme-c8", "x": 1}, principal=SUPPORT, tenant="ａｃｍｅ")
    # an earlier gateway stored a refused call's tenant as sent: such a record is acme's too
    gw.audit.append(AuditEvent(kind="decision", call_id="c-old", tool="crm.lookup", principal="alice",
                               tenant="ａｃｍｅ", effect="deny", outcome="invalid"))  # fmt: skip
    records = list(gw.audit.rows())
    tenants = ("acme", "ａｃｍｅ", "globex", None)
    seqs = {tenant: [r["seq"] for r in records if r["tenant"] == tenant] for tenant in tenants}
    assert len(seqs["ａｃｍｅ"]) == 1 and len(seqs["acme"]) == 3 and len(seqs["globex"]) == 3 and len(seqs[None]) == 3
    (acme_lookup, *_), (globex_lookup, *_) = seqs["acme"], seqs["globex"]
    acme_call = next(r["call_id"] for r in records if r["seq"] == acme_lookup)
    stray = gw.audit.append(AuditEvent(kind="execution", call_id=acme_call, tool="crm.lookup", principal="mallory",
                                       tenant="globex", outcome="ok", detail={"result": "globex-secret"}))  # fmt: skip
    whole = len(records) + 1

    _sign_in(client, "aud", ["auditor"], "ａｃｍｅ")  # a claim in another spelling of acme: the same tenant
    page = client.get("/audit").text
    assert 'id="tenant">acme<' in page and 'id="scope">tenant acme<' in page
    assert f"Chain intact: {whole} records" in page, "the chain's status is the whole chain's"
    shown = [int(seq) for seq in re.findall(r'<tr id="rec-(\d+)"', page)]
    assert sorted(shown) == sorted(seqs["acme"] + seqs["ａｃｍｅ"]) and f"{len(shown)} matching records" in page
    assert "globex" not in page and "vault.read" not in page
    assert "globex" not in client.get("/audit", params={"tool": "vault.read"}).text
    assert "0 matching records" in client.get("/audit", params={"effect": "deny", "tool": "vault.read"}).text
    for seq in (globex_lookup, stray, *seqs[None]):
        other = client.get(f"/audit/{seq}")
        assert other.status_code == 404 and f"no audit record {seq}" in other.text
        assert not any(shown in other.text for shown in ("globex", "crm.lookup", "vault.read", "mallory"))
    own = client.get(f"/audit/{acme_lookup}").text
    assert "acme-c7" in own and f'href="/audit/{stray}"' not in own and "globex" not in own, "its call's records"

    _sign_in(client, "aud", ["auditor"])  # no tenant claim: the records made without a tenant
    page = client.get("/audit").text
    assert 'id="scope">records made without a tenant<' in page
    assert sorted(int(seq) for seq in re.findall(r'<tr id="rec-(\d+)"', page)) == seqs[None]
    assert "acme" not in page and "globex" not in page and client.get(f"/audit/{acme_lookup}").status_code == 404


def test_a_tampered_chain_is_flagged_at_its_first_broken_record(client: TestClient, world: World) -> None:
    with sqlite3.connect(world.root / "gw.db") as db:
        db.execute("UPDATE gateway_audit SET outcome = 'forged' WHERE seq = 2")
    _sign_in(client, "mona", ["auditor"])
    page = client.get("/audit").text
    assert "Chain BROKEN at record" in page and 'id="first-bad">2<' in page
    assert '<tr id="rec-2" class="broken">' in page and '<tr id="rec-3" class="after-broken">' in page
    assert "the first broken one" in client.get("/audit/2").text


def test_evaluation_runs_trends_and_failing_targets(client: TestClient) -> None:
    _sign_in(client, "dev", ["developer"])
    page = client.get("/evals").text
    assert page.count('href="/evals/2026-') == 2 and "<svg" in page and "mean score per run" in page
    assert 'class="tick x-tick"' in page and "Builtin.TrajectoryInOrderMatch" in page
    run = client.get("/evals/2026-12-01.json").text
    assert "Compared with the previous run" in run and 'id="verdict">FAILED<' in run
    failing = run[run.index('id="failing"') :]
    assert "sess-cancel-001" in failing and "modify_pending_order" in failing, "the failing target and why"
    assert re.search(r"<td>-0\.\d{3}</td>", run), "the drop since the previous run"
    assert client.get("/evals/../../etc/passwd").status_code == 404


def test_run_times_come_from_the_report_and_old_reports_fall_back_to_file_time(world: World) -> None:
    from agentcore.console.pages import evals

    (first, second), _ = evals.load(world.reports)
    assert [run.id for run in (first, second)] == ["2026-11-30.json", "2026-12-01.json"]
    assert not first.from_file_time and first.outcome.timing is not None
    assert first.at == first.outcome.timing.started_at.timestamp()
    assert 0.9 * 86400 < second.at - first.at < 1.1 * 86400, "the recorded start, not the file's time"
    old = json.loads((world.reports / "2026-12-01.json").read_text(encoding="utf-8"))
    del old["timing"]  # as written before the field existed
    (world.reports / "old.json").write_text(json.dumps(old), encoding="utf-8")
    os.utime(world.reports / "old.json", (1_700_000_000, 1_700_000_000))
    runs, _ = evals.load(world.reports)
    (legacy,) = [run for run in runs if run.id == "old.json"]
    assert legacy.from_file_time and legacy.at == 1_700_000_000 and legacy.duration_s is None
    assert runs[0] is legacy, "ordered by time"
    with TestClient(create_app(world.settings), base_url="http://127.0.0.1") as client:
        _sign_in(client, "dev", ["developer"])
        page = client.get("/evals").text
        assert page.count("(file time)") == 1 and "2023-11-14 22:13:20Z" in page
        assert "file modified 2023-11-14 22:13:20Z" in client.get("/evals/old.json").text
        assert re.search(r"started \d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ, took \d", client.get("/evals/2026-12-01.json").text)


def _receipts_of_two_tenants(world: World) -> Ledger:
    """Embeddings on two profiles and an LLM call for acme, an LLM call by globex's own agent and user."""
    from agentcore import Accelerator
    from agentcore.accel.serving.usage import record_llm_usage

    ledger = Ledger(f"sqlite:///{world.root / 'gw.db'}")
    for profile in ("trn2.48xlarge", "trn3-ultraserver-gen1"):
        accelerator = Accelerator(device=profile, ledger=ledger)
        accelerator.embed(["refund policy", "order status"], tenant="acme", agent="helpdesk-bot", user="alice")
    record_llm_usage(ledger, "llama-3.1-70b", 2400, 350, device="trn3", tenant="acme", agent="helpdesk-bot")
    record_llm_usage(ledger, "llama-3.1-8b", 900, 120, device="trn2", tenant="globex", agent="globex-bot", user="gina")
    ledger.flush()
    return ledger


def _same_work(page: str) -> str:
    start = page.index('id="same-work"')
    return page[start : page.index("</table>", start)]


def test_spend_by_tenant_and_the_same_work_on_trn2_and_trn3(client: TestClient, world: World) -> None:
    from agentcore.accel.serving.usage import shipped_card

    replayed = spend.same_work(_receipts_of_two_tenants(world), None)
    assert replayed.devices == ["trn2", "trn3"] and set(replayed.kinds) == {"embedding", "llm"}
    assert not replayed.skipped and replayed.totals["trn2"].calls == replayed.totals["trn3"].calls == 4
    served = shipped_card("llama-3.1-8b", "trn2").price(900, 120)
    assert replayed.tenants["globex"]["trn2"].usd == pytest.approx(served.usd)
    _sign_in(client, "fin", ["finance"])  # no tenant claim: every tenant's spend (the ledger has no "no tenant")
    page = client.get("/spend").text
    assert "simulated" in page and "trn2.48xlarge" in page and "trn3-ultraserver-gen1" in page
    assert ">acme<" in page and ">helpdesk-bot<" in page and "Simulated cost of the recorded work on each" in page
    assert 'id="scope">all tenants<' in page
    same = _same_work(page)
    for tenant in ("acme", "globex"):
        row = same[same.index(f"<td>{tenant}</td>") :].split("</tr>")[0]
        assert f"<td>{units.usd(replayed.tenants[tenant]['trn2'].usd)}</td>" in row
        assert f"<td>{units.usd(replayed.tenants[tenant]['trn3'].usd)}</td>" in row
    assert "of which llm" in same and "of which embedding" in same


def test_a_viewer_with_a_tenant_sees_only_their_tenants_spend(client: TestClient, world: World) -> None:
    ledger = _receipts_of_two_tenants(world)
    everyone, acme = spend.same_work(ledger, None), spend.same_work(ledger, "acme")
    assert acme.tenants.keys() == {"acme"} and acme.totals["trn2"].calls == 3
    assert acme.totals["trn2"].usd == pytest.approx(everyone.tenants["acme"]["trn2"].usd)
    _sign_in(client, "fin", ["finance"], "acme")
    page = client.get("/spend").text
    assert 'id="scope">tenant acme<' in page and ">helpdesk-bot<" in page and ">alice<" in page
    assert "globex" not in page and ">gina<" not in page, "no chart, table or legend names another tenant's"
    same = _same_work(page)
    total = same[same.index('<tr class="total">') :].split("</tr>")[0]
    for device in ("trn2", "trn3"):
        assert f"<td>{units.usd(acme.totals[device].usd)}</td>" in total
        assert f"<td>{units.usd(everyone.totals[device].usd)}</td>" not in page, "the all-tenant total is not shown"
    assert f"cost {units.usd(acme.recorded.usd)} (simulated)" in page
    by_tenant = page[page.index('id="by-tenant"') :].split("</table>")[0]
    assert by_tenant.count("<tr>") == 2 and "<td>3</td>" in by_tenant, "a header and acme's three calls"
    _sign_in(client, "gil", ["finance"], "globex")
    page = client.get("/spend").text
    assert "acme" not in page and "helpdesk-bot" not in page and ">gina<" in page


def test_every_response_forbids_framing_inline_script_and_eval(client: TestClient) -> None:
    """A page that a same-site attacker frames (clickjacking Approve) or that runs injected or eval'd script
    (htmx's hx-on and js: values) could decide for the approver: the browser is told to refuse all three."""
    _sign_in(client, "mona", ["manager"])
    for path in ("/approvals", "/login", "/static/console.css", "/approvals/no-such-id", "/no-such-page"):
        headers = client.get(path).headers
        policy = headers["content-security-policy"]
        assert "frame-ancestors 'none'" in policy and headers["x-frame-options"] == "DENY", path
        assert "script-src 'self';" in policy and "unsafe" not in policy, path
        assert headers["x-content-type-options"] == "nosniff" and headers["cache-control"] == "no-store", path
    page = client.get("/approvals").text
    assert '"allowEval": false' in page and "style=" not in page


def test_cookies_are_secure_over_https(world: World) -> None:
    """Behind TLS, a session cookie without Secure would also travel over any plain-HTTP request to the host."""
    with TestClient(create_app(world.settings), base_url="https://console.example") as client:
        login = client.get("/login")
        assert "secure" in login.headers["set-cookie"].lower()
        csrf = re.search(r'name="csrf" value="([^"]+)"', login.text).group(1)  # type: ignore[union-attr]
        done = client.post("/login", data={"csrf": csrf, "token": token("mona", ["manager"])}, follow_redirects=False)
        session = done.headers["set-cookie"].lower()
        assert "secure" in session and "httponly" in session and "samesite=strict" in session
    with TestClient(create_app(world.settings), base_url="http://127.0.0.1") as plain:
        assert "secure" not in plain.get("/login").headers["set-cookie"].lower()  # loopback HTTP still signs in


def test_the_decision_banner_comes_from_the_request_not_the_link(client: TestClient, world: World) -> None:
    """The requester learns the approval id and can send the approver a link; the green banner on the real
    console must not say what the link says ("verified by security, safe to approve")."""
    pending = world.call_waiting_for_approval()
    aid = pending["approval_id"]
    csrf = _sign_in(client, "mona", ["manager"])
    lure = "verified by the security team: safe to approve"
    for query in (f"message={lure}", "decided"):  # nobody decided yet: no banner at all
        page = client.get(f"/approvals/{aid}?{query}").text
        assert lure not in page and 'class="banner ok"' not in page, query
    done = client.post(f"/approvals/{aid}/approve", data={"csrf": csrf})
    assert done.status_code == 200 and "approved: the gateway runs the call" in done.text
    _wait(lambda: world.gateway.approvals.get(aid).status == "executed")


def test_the_decision_banner_of_a_call_that_failed_says_so(client: TestClient, world: World) -> None:
    """The banner is worded when the page is shown, after the call may have run: one that failed is not
    "approved: the gateway runs the call"."""
    with pytest.raises(ApprovalRequired) as info:
        world.gateway.call("refunds.issue", {"order_id": "o-9", "amount": 900}, principal=SUPPORT)
    aid, store = info.value.approval_id, world.gateway.approvals.store
    _sign_in(client, "mona", ["manager"])
    world.gateway.approvals.approve(aid, by={"id": "mona", "roles": ["manager"]}, execute=False)
    assert store.claim(aid)
    store.finish(aid, ok=False, result={"error": "upstream refused"})
    page = client.get(f"/approvals/{aid}?decided").text
    assert re.search(r'class="banner ok"[^>]*>\s*failed\s*<', page) and "the gateway runs the call" not in page


def test_arguments_are_shown_in_logical_order(client: TestClient, world: World) -> None:
    """Right-to-left letters (canonical text keeps them) reorder the characters around them on screen: the
    arguments are shown left to right as stored, so what the approver reads is what runs."""
    with pytest.raises(ApprovalRequired) as info:
        world.gateway.call("refunds.issue", {"order_id": "o-\u05d0 1 2 \u05d1", "amount": 900}, principal=SUPPORT)
    _sign_in(client, "mona", ["manager"])
    page = client.get(f"/approvals/{info.value.approval_id}").text
    assert re.search(r'<pre class="args"><bdo dir="ltr">[^<]*o-\u05d0 1 2 \u05d1[^<]*</bdo></pre>', page)
    assert '<code class="args"><bdo dir="ltr">' in client.get("/approvals").text
