"""``Gateway.decide``: the decision and its reasons without executing, reserving, requesting approval or auditing."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from agentcore import Gateway, ToolArgumentError, UnknownToolError
from agentcore.policies.model import Effect

Factory = Callable[..., tuple[Gateway, dict[str, int]]]
SUPPORT = {"id": "alice", "roles": ["support"]}


def test_decide_is_a_dry_run(make_gateway: Factory) -> None:
    gw, runs = make_gateway()
    allowed = gw.decide("refunds.issue", {"order_id": "o1", "amount": 20}, principal=SUPPORT)
    assert allowed.effect is Effect.ALLOW and allowed.reasons
    pending = gw.decide("refunds.issue", {"order_id": "o1", "amount": 900}, principal=SUPPORT)
    assert pending.effect is Effect.NEEDS_APPROVAL and pending.obligations.approver_roles == ("manager",)
    denied = gw.decide("refunds.issue", {"order_id": "o1", "amount": 9000}, principal=SUPPORT)
    assert denied.effect is Effect.DENY and "5000" in denied.reasons[0].text
    assert gw.decide("orders.cancel", {"order_id": "o2"}, principal=SUPPORT).effect is Effect.DENY  # resolver read
    for _ in range(5):  # a limit of 3 calls a minute: dry runs reserve nothing
        assert gw.decide("notes.add", {"text": "x"}, principal=SUPPORT).obligations.rate_limits
    assert gw.call("notes.add", {"text": "x"}, principal=SUPPORT) == "x"
    assert runs == {"notes.add": 1} and gw.approvals.list() == []
    assert [row["tool"] for row in gw.audit.rows()] == ["notes.add"] * 2  # only the real call (decision, outcome)


def test_decide_rejects_what_call_rejects(make_gateway: Factory) -> None:
    gw, _ = make_gateway()
    with pytest.raises(UnknownToolError, match=r"did you mean 'crm\.lookup'"):
        gw.decide("crm.lookpu", {}, principal=SUPPORT)
    with pytest.raises(ToolArgumentError, match="customer_id"):
        gw.decide("crm.lookup", {}, principal=SUPPORT)
    assert list(gw.audit.rows()) == []
