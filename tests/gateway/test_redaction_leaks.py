"""A failing tool's error text is tool output: it reaches neither the caller, a model, the logs nor the audit
unredacted (issue 14, "tool 'pay.charge' failed: ... card 4000000000000002 for jane@corp.example")."""

from __future__ import annotations

import asyncio
import json
import logging
import traceback
from pathlib import Path

import pytest

from agentcore.gateway import Gateway, ToolExecutionError
from agentcore.gateway.adapters import run_anthropic_tool_uses, run_openai_tool_calls
from agentcore.gateway.errors import ApprovalRequired
from agentcore.policies import parse
from agentcore.policies.ast import structure
from agentcore.policies.formatter import format_file

from .conftest import write_policy

SECRETS = ("4000000000000002", "jane@corp.example")
POLICY = """policy "payments"
allow pay.charge.
allow pay.refund.
require approval from role "manager" for pay.refund.
redact card numbers and email addresses in results of pay.charge, pay.refund.
"""


def _gateway(tmp_path: Path) -> Gateway:
    gw = Gateway(write_policy(tmp_path / "policies", POLICY), database=str(tmp_path / "gw.db"))

    @gw.tool(name="pay.charge")
    def charge(order: str) -> str:
        raise ValueError("card 4000000000000002 for jane@corp.example was declined")

    @gw.tool(name="pay.refund")
    def refund(order: str) -> str:
        raise ValueError("card 4000 0000 0000 0002 for jane@corp.example cannot be refunded")

    return gw


def _raw_database(tmp_path: Path) -> bytes:
    """Every byte SQLite holds (the audit, the approvals), whatever the columns are called."""
    return b"".join(path.read_bytes() for path in tmp_path.glob("gw.db*"))


def _assert_clean(text: str) -> None:
    for secret in SECRETS:
        assert secret not in text, text


def test_error_text_is_redacted_for_the_caller_the_logs_and_the_audit(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    gw = _gateway(tmp_path)
    with caplog.at_level(logging.DEBUG), pytest.raises(ToolExecutionError) as caught:
        gw.call("pay.charge", {"order": "o1"}, principal="alice")
    message = str(caught.value)
    assert message == "tool 'pay.charge' failed: ValueError: card [REDACTED:card] for [REDACTED:email] was declined"
    _assert_clean("".join(traceback.format_exception(caught.value)))  # no chained original in a traceback
    _assert_clean(caplog.text)
    _, record = [json.loads(line) for line in gw.audit.export_jsonl()]  # the decision, then the outcome
    assert record["outcome"] == "error" and record["detail"]["redacted"] == {"card": 1, "email": 1}
    gw.close()
    for secret in SECRETS:
        assert secret.encode() not in _raw_database(tmp_path)


def test_error_text_is_redacted_for_a_model(tmp_path: Path) -> None:
    gw = _gateway(tmp_path)
    call = {"id": "c1", "type": "function", "function": {"name": "pay_charge", "arguments": '{"order": "o1"}'}}
    (openai,) = run_openai_tool_calls(gw, [call], principal="alice")
    block = {"type": "tool_use", "id": "t1", "name": "pay_charge", "input": {"order": "o1"}}
    anthropic = run_anthropic_tool_uses(gw, [block], principal="alice")
    assert "[REDACTED:card]" in openai["content"] and "[REDACTED:email]" in openai["content"]
    _assert_clean(str(openai))
    _assert_clean(str(anthropic))
    gw.close()


def test_async_and_approved_calls_redact_error_text_too(tmp_path: Path) -> None:
    gw = _gateway(tmp_path)
    with pytest.raises(ToolExecutionError) as caught:
        asyncio.run(gw.acall("pay.charge", {"order": "o1"}, principal="alice"))
    _assert_clean(str(caught.value))
    with pytest.raises(ApprovalRequired) as pending:
        gw.call("pay.refund", {"order": "o1"}, principal="alice")
    with pytest.raises(ToolExecutionError) as refused:
        gw.approvals.approve(pending.value.approval_id, by={"id": "mona", "roles": ["manager"]})
    _assert_clean(str(refused.value))
    _assert_clean(str(gw.approvals.store.get(pending.value.approval_id)))  # the stored outcome of the approval
    gw.close()
    for secret in SECRETS:
        assert secret.encode() not in _raw_database(tmp_path)


def test_without_a_redaction_obligation_the_error_text_is_kept(tmp_path: Path) -> None:
    gw = Gateway(write_policy(tmp_path / "policies", 'policy "p"\nallow t.fail.\n'), database=str(tmp_path / "gw.db"))

    @gw.tool(name="t.fail")
    def fail() -> None:
        raise RuntimeError("order 4000000000000002 not found")

    with pytest.raises(ToolExecutionError, match="order 4000000000000002 not found") as caught:
        gw.call("t.fail", {}, principal="alice")
    assert isinstance(caught.value.__cause__, RuntimeError)  # the developer keeps the original
    gw.close()


def test_policies_name_ibans_and_secrets(tmp_path: Path) -> None:
    text = 'policy "p"\nallow vault.read.\nredact IBANs and secrets in results of vault.read.\n'
    gw = Gateway(write_policy(tmp_path / "policies", text), database=str(tmp_path / "gw.db"))

    @gw.tool(name="vault.read")
    def read() -> dict[str, str]:
        return {"iban": "gb82 west 1234 5698 7654 32", "key": "akiaiosfodnn7example"}

    assert gw.call("vault.read", {}, principal="alice") == {"iban": "[REDACTED:iban]", "key": "[REDACTED:secret]"}
    gw.close()
    assert "redact IBANs and secrets in results of vault.read." in format_file(parse(text))
    named = parse('policy "p"\nallow secrets.read when secrets is at most 3.\n')  # still names elsewhere
    assert structure(parse(format_file(named))) == structure(named)
