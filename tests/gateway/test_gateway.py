"""Gateway calls end to end with the real policy engine: allow, deny, fail closed, obligations, audit, modes."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agentcore import ApprovalRequired, Gateway, ToolDenied
from agentcore.cli import app
from agentcore.gateway import ToolArgumentError, ToolExecutionError, UnknownToolError
from agentcore.gateway.redaction import SUPPRESSED

Factory = Callable[..., tuple[Gateway, dict[str, int]]]
SUPPORT = {"id": "alice", "roles": ["support"]}
ADMIN = {"id": "root", "roles": ["admin"]}


def _records(gw: Gateway) -> list[dict[str, Any]]:
    return [json.loads(line) for line in gw.audit.export_jsonl()]


def test_allowed_call_executes_redacts_and_is_audited(make_gateway: Factory) -> None:
    gw, runs = make_gateway()
    result = gw.call("crm.lookup", {"customer_id": "c7"}, principal=SUPPORT, agent="helpdesk-bot", session="s1")
    assert result == {"id": "c7", "email": "[REDACTED:email]", "card": "[REDACTED:card]", "tier": "gold"}
    decision, outcome = _records(gw)  # the decision, committed before the tool ran, then the outcome
    assert (decision["kind"], decision["effect"], decision["outcome"], decision["principal"], decision["agent"]) == (
        "decision", "allow", "started", "alice", "helpdesk-bot",
    )  # fmt: skip
    assert (outcome["kind"], outcome["effect"], outcome["outcome"], outcome["call_id"]) == (
        "execution", None, "ok", decision["call_id"],
    )  # fmt: skip
    assert decision["bundle_hash"] == gw.policy.status.bundle_hash and len(decision["bundle_hash"]) == 64
    assert decision["detail"]["args"] == {"customer_id": "c7"}
    assert decision["detail"]["reasons"][0]["effect"] == "allow"
    assert outcome["detail"]["redacted"] == {"email": 1, "card": 1} and outcome["detail"]["duration_ms"] >= 0
    assert runs == {"crm.lookup": 1}
    assert gw.audit.verify().ok


def test_the_decision_is_committed_before_the_tool_runs(make_gateway: Factory) -> None:
    gw, _ = make_gateway(policy='policy "p"\nallow t.peek.\n')
    seen_while_running: list[tuple[str, str | None, str | None]] = []

    @gw.tool(name="t.peek")
    def peek() -> str:
        seen_while_running.extend((r["kind"], r["effect"], r["outcome"]) for r in _records(gw))
        return "done"

    assert gw.call("t.peek", {}, principal="alice") == "done"
    after = [(r["kind"], r["effect"], r["outcome"]) for r in _records(gw)]
    # a crash inside the tool still leaves the allowed decision on record: started, outcome unknown
    assert seen_while_running == [("decision", "allow", "started")]
    assert after == [("decision", "allow", "started"), ("execution", None, "ok")]
    assert gw.audit.verify().ok


def test_denied_call_raises_with_reasons_and_never_executes(make_gateway: Factory) -> None:
    gw, runs = make_gateway()
    with pytest.raises(ToolDenied) as info:
        gw.call("crm.lookup", {"customer_id": "c7"}, principal={"id": "eve", "roles": ["intern"]})
    assert "default deny" in info.value.agent_message and "Do not retry" in info.value.agent_message
    with pytest.raises(ToolDenied) as info:
        gw.call("refunds.issue", {"order_id": "o1", "amount": 9000}, principal=SUPPORT)
    assert "more than 5000" in str(info.value)
    assert runs == {}
    effects = [(r["kind"], r["effect"], r["outcome"]) for r in _records(gw)]
    assert effects == [("decision", "deny", "denied")] * 2


def test_unknown_tool_and_bad_arguments_fail_before_anything_runs(make_gateway: Factory) -> None:
    gw, runs = make_gateway()
    with pytest.raises(UnknownToolError, match=r"did you mean 'crm\.lookup'"):
        gw.call("crm.lookpu", {"customer_id": "c"}, principal=SUPPORT)
    with pytest.raises(ToolArgumentError, match="amount"):
        gw.call("refunds.issue", {"order_id": "o1", "amount": "lots"}, principal=SUPPORT)
    with pytest.raises(ToolArgumentError, match="NUL byte"):
        gw.call("crm.lookup", {"customer_id": "c\x00; DROP TABLE"}, principal=SUPPORT)
    with pytest.raises(ToolArgumentError, match="exceeds the limit"):
        gw.call("crm.lookup", {"customer_id": "x" * 1_000_000}, principal=SUPPORT)
    assert runs == {}
    records = _records(gw)
    assert [(r["effect"], r["outcome"]) for r in records] == [("deny", "invalid")] * 4
    assert all(len(json.dumps(r)) < 5000 for r in records)  # the 1 MB string is not copied into the audit


def test_a_tool_the_caller_could_never_call_keeps_its_schema_to_itself(make_gateway: Factory) -> None:
    """Invalid arguments of a hidden tool are denied as valid ones are: "invalid arguments for 'vault.read': 'key'
    is a required property" told a support user the admin tool's argument names."""
    gw, runs = make_gateway()
    for args in ({}, {"key": 5}, {"nope": 1}):
        with pytest.raises(ToolDenied) as info:
            gw.call("vault.read", args, principal=SUPPORT)
        assert "key" not in str(info.value) and "key" not in info.value.agent_message
    with pytest.raises(ToolDenied):
        gw.call("vault.read", {"key": "k"}, principal=SUPPORT)  # the same answer with valid arguments
    with pytest.raises(ToolArgumentError, match="key"):
        gw.call("vault.read", {}, principal=ADMIN)  # one who may call it learns what it wants
    assert runs == {}
    assert [r["effect"] for r in _records(gw)] == ["deny"] * 5


def test_unicode_look_alike_of_an_allowed_value_is_denied(make_gateway: Factory) -> None:
    gw, runs = make_gateway()
    assert gw.call("email.send", {"recipient": "bob@example.com"}, principal=SUPPORT) == "sent"
    with pytest.raises(ToolDenied):  # Cyrillic "е" in "exаmple"
        gw.call("email.send", {"recipient": "bob@ex\u0430mple.com"}, principal=SUPPORT)
    assert runs == {"email.send": 1}


def test_resolver_conditions_and_fail_closed(make_gateway: Factory) -> None:
    gw, runs = make_gateway()
    assert gw.call("orders.cancel", {"order_id": "o1"}, principal=SUPPORT) == "cancelled o1"
    with pytest.raises(ToolDenied):
        gw.call("orders.cancel", {"order_id": "o2"}, principal=SUPPORT)  # delivered
    with pytest.raises(ToolDenied, match=r"failed closed|could not"):
        gw.call("orders.cancel", {"order_id": "missing"}, principal=SUPPORT)  # resolver knows nothing

    @gw.resolver("order")
    def broken(order_id: Any) -> dict[str, Any]:
        raise ConnectionError("orders database is down")

    with pytest.raises(ToolDenied):
        gw.call("orders.cancel", {"order_id": "o1"}, principal=SUPPORT)
    assert runs == {"orders.cancel": 1}


def test_a_developer_mistake_raises_to_the_python_caller_and_is_audited(make_gateway: Factory) -> None:
    """An int principal or one without an id is a TypeError/ValueError at the call site, not a policy decision."""
    gw, runs = make_gateway()
    with pytest.raises(TypeError, match="principal must be a Principal, a user id or a mapping"):
        gw.call("crm.lookup", {"customer_id": "c"}, principal=12345)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"invalid caller identity: principal\.id: Field required") as error:
        gw.call("crm.lookup", {"customer_id": "c"}, principal={"roles": ["support"]})
    assert not isinstance(error.value, ToolDenied)
    with pytest.raises(ValueError, match=r"context\.session_id"):
        gw.call("crm.lookup", {"customer_id": "c"}, principal="alice", session=7)  # type: ignore[arg-type]
    records = _records(gw)[-3:]
    assert [(r["effect"], r["outcome"]) for r in records] == [("deny", "invalid")] * 3
    assert "principal must be" in records[0]["detail"]["error"] and "Field required" in records[1]["detail"]["error"]
    assert runs == {}


def test_internal_errors_deny_without_telling_the_model_python_details(
    make_gateway: Factory, monkeypatch: pytest.MonkeyPatch
) -> None:
    gw, runs = make_gateway()

    def broken() -> None:
        raise RuntimeError("bundle cache is corrupt at 0x7f00")

    monkeypatch.setattr(gw.policy, "current", broken)
    with pytest.raises(ToolDenied, match="internal error while deciding: RuntimeError") as error:  # for developers
        gw.call("crm.lookup", {"customer_id": "c"}, principal=SUPPORT)
    assert "RuntimeError" not in error.value.agent_message and "0x7f00" not in error.value.agent_message
    record = _records(gw)[-1]
    assert (record["effect"], record["outcome"]) == ("deny", "error") and "RuntimeError" in record["detail"]["error"]
    assert runs == {}


def test_empty_policy_folder_and_no_policies_deny_everything(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    for policies in (tmp_path / "empty", None):
        gw = Gateway(policies, database=str(tmp_path / "d.db"))
        gw.tool(_echo, name="t.echo")
        with pytest.raises(ToolDenied, match="default deny"):
            gw.call("t.echo", {"text": "hi"}, principal="anyone")
        gw.close()


def _echo(text: str) -> str:
    return text


def test_rate_limit_reserves_atomically(make_gateway: Factory) -> None:
    gw, runs = make_gateway()
    results = []
    for i in range(5):
        try:
            results.append(gw.call("notes.add", {"text": str(i)}, principal="bob"))
        except ToolDenied as denied:
            results.append(f"denied: {denied.reasons[0]}")
    assert results[:3] == ["0", "1", "2"] and all(r.startswith("denied") for r in results[3:])
    assert gw.call("notes.add", {"text": "x"}, principal="carol") == "x"  # per user
    assert runs == {"notes.add": 4}


def test_tool_failure_and_timeout_are_recorded(make_gateway: Factory) -> None:
    gw, _ = make_gateway(policy='policy "p"\nallow notes.*.\n')

    @gw.tool(name="notes.boom")
    def boom(text: str) -> str:
        raise RuntimeError("disk full")

    @gw.tool(name="notes.slow", timeout=0.05)
    async def slow(text: str) -> str:
        await asyncio.sleep(5)
        return text

    with pytest.raises(ToolExecutionError, match="disk full"):
        gw.call("notes.boom", {"text": "a"}, principal="bob")
    with pytest.raises(ToolExecutionError, match="timed out"):
        gw.call("notes.slow", {"text": "a"}, principal="bob")
    outcomes = [r["outcome"] for r in _records(gw) if r["kind"] == "execution"]
    assert outcomes == ["error", "timeout"]


def test_suppressed_output(make_gateway: Factory) -> None:
    gw, runs = make_gateway()
    assert gw.call("vault.read", {"key": "db"}, principal=ADMIN) == SUPPRESSED
    assert runs == {"vault.read": 1}


def test_monitor_modes(make_gateway: Factory, tmp_path: Path) -> None:
    gw, _ = make_gateway()
    assert gw.call("files.delete", {"path": "/tmp/x"}, principal=ADMIN) is True  # per-rule monitor: logged only
    record = _records(gw)[0]
    assert record["effect"] == "allow" and record["detail"]["would_effect"] == "deny"
    assert record["detail"]["monitored"][0]["text"] == "monitor deny files.delete."
    monitor, runs2 = make_gateway(mode="monitor", database=str(tmp_path / "m.db"))
    assert monitor.call("refunds.issue", {"order_id": "o", "amount": 9000}, principal=SUPPORT)["refunded"] == 9000
    first = _records(monitor)[0]
    assert (first["effect"], first["mode"]) == ("would_deny", "monitor")
    assert runs2 == {"refunds.issue": 1}


def test_list_tools_is_per_principal(make_gateway: Factory, tmp_path: Path) -> None:
    gw, _ = make_gateway()
    names = lambda who: sorted(t.name for t in gw.list_tools(who))  # noqa: E731
    assert names(SUPPORT) == ["crm.lookup", "email.send", "notes.add", "orders.cancel", "refunds.issue"]
    # refunds over 500 go to approval for anyone, so refunds.issue is reachable by every principal
    assert names(ADMIN) == ["email.send", "files.delete", "notes.add", "refunds.issue", "vault.read"]
    assert names({"id": "mona", "roles": ["manager"]}) == ["email.send", "notes.add", "refunds.issue"]
    (tmp_path / "policies" / "support.policy").write_text(
        'policy "p"\ndefault allow.\ndeny crm.* for users with role "intern".\n'
    )
    gw.policy.check_now()
    assert "crm.lookup" not in names({"id": "i", "roles": ["intern"]})
    assert "crm.lookup" in names(SUPPORT)


def test_hot_reload_keeps_last_good_bundle_and_reports_errors(make_gateway: Factory, tmp_path: Path) -> None:
    gw, _ = make_gateway()
    first = gw.policy.status.bundle_hash
    policy_file = tmp_path / "policies" / "support.policy"
    policy_file.write_text(policy_file.read_text() + 'allow vault.read for users with role "support".\n')
    assert gw.policy.check_now()
    second = gw.policy.status.bundle_hash
    assert second != first
    assert gw.call("vault.read", {"key": "k"}, principal=SUPPORT) == SUPPRESSED
    (tmp_path / "policies" / "lookups.schema").write_text("resolver order(id: string) returns {status: string}.\n")
    assert gw.policy.check_now() and gw.policy.status.bundle_hash != second  # a schema file is part of the bundle
    second = gw.policy.status.bundle_hash
    policy_file.write_text('policy "broken"\nalow everything\n')
    assert not gw.policy.check_now()
    assert gw.policy.status.bundle_hash == second and "unexpected `alow`" in (gw.policy.status.last_error or "")
    assert gw.call("vault.read", {"key": "k"}, principal=SUPPORT) == SUPPRESSED  # still the last good bundle
    status = CliRunner().invoke(app, ["gateway", "status", "--database", gw.db.url.removeprefix("sqlite:///")])
    assert status.exit_code == 1 and second[:16] in status.output


def test_status_shows_policy_paths_and_reload_errors_escaped(tmp_path: Path, shown_safely: Callable[..., None]) -> None:
    """`gateway status` names each gateway's policy files and quotes its last reload error: a file in a folder
    named ``x[`` (its path spells ``x[/]``) stopped the command with a MarkupError, and the escape a broken policy
    file held reached the terminal inside the error."""
    (tmp_path / "x[").mkdir()
    policy = tmp_path / "x[" / "] \x1b[31m.policy"
    policy.write_text('policy "p"\nallow notes.add.\n')
    gw = Gateway(policy, database=str(tmp_path / "gw.db"))
    try:
        policy.write_text('policy "p"\nallow notes.add.\n\x1b]8;;http://evil\x07link\n')
        assert not gw.policy.check_now()
        database = ["--database", str(tmp_path / "gw.db")]
        status = CliRunner().invoke(app, ["gateway", "status", *database], env={"COLUMNS": "300"})
    finally:
        gw.close()
    assert status.exit_code == 1 and "last reload FAILED" in status.output, status.output
    shown_safely(status.output, str(policy))


def test_thousand_concurrent_async_calls_lose_nothing(make_gateway: Factory, tmp_path: Path) -> None:
    gw, runs = make_gateway(policy='policy "p"\nallow notes.add.\nlimit notes.add to 100 calls per minute per user.\n')

    async def burst() -> list[Any]:
        calls = (gw.acall("notes.add", {"text": str(i)}, principal="bob") for i in range(1000))
        return await asyncio.gather(*calls, return_exceptions=True)

    outcomes = asyncio.run(burst())
    allowed = [o for o in outcomes if isinstance(o, str)]
    denied = [o for o in outcomes if isinstance(o, ToolDenied)]
    assert (len(allowed), len(denied)) == (100, 900) and runs == {"notes.add": 100}
    records = _records(gw)
    assert len(records) == 1100 and gw.audit.verify().ok
    assert sum(r["kind"] == "decision" and r["effect"] == "allow" for r in records) == 100
    assert sum(r["kind"] == "execution" and r["outcome"] == "ok" for r in records) == 100


def test_needs_approval_raises_by_default(make_gateway: Factory) -> None:
    gw, runs = make_gateway()
    with pytest.raises(ApprovalRequired) as info:
        gw.call("refunds.issue", {"order_id": "o1", "amount": 800}, principal=SUPPORT)
    assert info.value.approver_role == "manager" and info.value.approval_id.startswith("apr_")
    assert runs == {}


def test_budget_rules_read_the_accel_ledger(tmp_path: Path) -> None:
    from agentcore.accel.ledger import Ledger
    from agentcore.accel.runtime import Receipt

    database = str(tmp_path / "shared.db")
    ledger = Ledger(database)
    receipt = Receipt(model="minilm", variant="fp32", tenant="acme", user="alice", items=1, batches=1,
                      cpu_seconds=0.01, usd=6.0)  # fmt: skip
    ledger.record(receipt)
    (tmp_path / "budget.policy").write_text(
        'policy "budget"\nallow t.echo.\ndeny any tool when accelerator spend of user today exceeds 5.00 USD.\n'
    )
    gw = Gateway(tmp_path / "budget.policy", database=database, ledger=ledger)
    gw.tool(_echo, name="t.echo")
    with pytest.raises(ToolDenied, match="spend"):
        gw.call("t.echo", {"text": "hi"}, principal="alice")
    assert gw.call("t.echo", {"text": "hi"}, principal="bob") == "hi"
    with pytest.raises(ToolDenied, match="spend"):
        gw.call("t.echo", {"text": "hi"}, principal="alice", tenant="acme")
    assert gw.call("t.echo", {"text": "hi"}, principal="alice", tenant="globex") == "hi"  # acme's alice spent it
    without = Gateway(tmp_path / "budget.policy", database=database)  # no ledger: budget rules fail closed
    without.tool(_echo, name="t.echo")
    with pytest.raises(ToolDenied, match="ledger"):
        without.call("t.echo", {"text": "hi"}, principal="bob")
    gw.close()
    without.close()


def test_unreachable_state_store_denies(make_gateway: Factory) -> None:
    gw, runs = make_gateway(state="redis://127.0.0.1:1/0")  # nothing listens on port 1
    with pytest.raises(ToolDenied):
        gw.call("notes.add", {"text": "x"}, principal="bob")
    assert runs == {}
    record = _records(gw)[-1]
    assert record["effect"] == "deny" and "Connection" in json.dumps(record["detail"])


def test_rate_limits_reserve_all_or_nothing(make_gateway: Factory) -> None:
    policy = (
        'policy "two limits"\nallow notes.add.\n'
        "limit notes.add to 5 calls per minute per user.\nlimit notes.add to 2 calls per minute per session.\n"
    )
    gw, runs = make_gateway(policy=policy)

    async def burst(session: str, n: int) -> int:
        calls = [gw.acall("notes.add", {"text": "x"}, principal="bob", session=session) for _ in range(n)]
        return sum(not isinstance(r, ToolDenied) for r in await asyncio.gather(*calls, return_exceptions=True))

    # concurrent calls pass the engine's history check together; the atomic reservations admit 2 per session,
    # and every call refused by the session limit gives back the user slot it had already taken
    assert asyncio.run(burst("s1", 20)) == 2
    assert asyncio.run(burst("s2", 20)) == 2
    assert asyncio.run(burst("s3", 20)) == 1  # the user's 5th and last slot
    assert runs == {"notes.add": 5}


def test_gateway_on_postgresql(make_gateway: Factory, pg_url: str) -> None:
    gw, runs = make_gateway(database=pg_url)
    assert gw.call("crm.lookup", {"customer_id": "c1"}, principal=SUPPORT)["email"] == "[REDACTED:email]"
    assert [gw.call("notes.add", {"text": str(i)}, principal="pg-user") for i in range(3)] == ["0", "1", "2"]
    with pytest.raises(ToolDenied):
        gw.call("notes.add", {"text": "4"}, principal="pg-user")
    with pytest.raises(ApprovalRequired) as pending:
        gw.call("refunds.issue", {"order_id": "o1", "amount": 900}, principal=SUPPORT)
    assert gw.approvals.approve(pending.value.approval_id, by={"id": "mona", "roles": ["manager"]})["refunded"] == 900
    assert runs == {"crm.lookup": 1, "notes.add": 3, "refunds.issue": 1}
    assert gw.audit.verify().ok and len(_records(gw)) == 2 + 6 + 1 + 4  # lookup, notes, limit deny, approval


def test_a_decisions_reason_records_are_dumped_once_per_reasons_tuple() -> None:
    """A cached decision hands out the same reasons tuple on every call: its records are looked up by identity
    (no pydantic hashing per call); an equal tuple of new objects gets equal records of its own."""
    from agentcore.gateway.gateway import _reasons
    from agentcore.policies.model import Reason

    def reason(rule: str) -> Reason:
        return Reason(rule_id=rule, file="p.policy", line=1, text="allow t.hit.", effect="allow")

    reasons = (reason("r1"), reason("r2"))
    first = _reasons(reasons)
    assert _reasons(reasons) is first
    assert [r["rule_id"] for r in first] == ["r1", "r2"] and first[0] == reasons[0].model_dump()
    again = _reasons((reason("r1"), reason("r2")))
    assert again == first and again is not first
