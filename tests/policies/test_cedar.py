"""Cedar export: a differential test against cedarpy (the Rust Cedar engine) on >= 10,000 random requests."""

from __future__ import annotations

import json
import random

import cedarpy
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentcore import Effect, PolicyEngine, Request
from agentcore.policies import AgentInfo, Principal, RequestContext
from agentcore.policies.cedar import cedar_request, export

TOOLS = ["refunds.issue", "refunds.void", "crm.lookup", "crm.export", "email.send", "files.delete", "search"]
BUNDLES = {
    "refunds": """
        allow refunds.issue for users with role "support" when amount is at most 500 and amount is at least 0.
        require approval from role "manager" for refunds.issue when amount is more than 500.
        deny refunds.issue when customer.status is "flagged" or customer.tier is one of "blocked", "fraud".
        allow refunds.void when user.dept is "finance" and not (amount is between 100 and 200).
        deny any tool in crm.* unless user has role "crm-reader".
        allow crm.* for agent "crm-bot".
        deny email.send unless recipient ends with "@example.com" and recipient does not contain "+".
        allow email.send when subject starts with "[ticket]" or priority is missing.
        """,
    "default-allow": """
        default allow.
        deny files.delete unless user has role "admin" and force is true.
        deny search when query contains "*" or limit exceeds 50.
        require approval for refunds.* when amount is not one of 1, 2, 3.
        deny any tool for tenant "suspended".
        deny any tool for user "mallory".
        allow search when limit is present.
        """,
    "nested-logic": """
        allow any tool when (amount is less than 10 or customer.status is not "flagged") and not customer.tier is "x".
        deny crm.lookup when customer.tier is "gold" and (amount > 5 or amount < -5).
        require approval for crm.export unless user does not have role "intern" or amount is at most 0.
        deny refunds.void when customer.status = "flagged" and customer.status != "flagged".
        """,
}

USERS = {
    "alice": (["support"], {"dept": "finance"}),
    "bob": (["support", "crm-reader", "manager"], {"dept": "sales"}),
    "carol": (["admin", "intern"], {}),
    "mallory": (["crm-reader"], {"dept": "finance"}),
    "dave": ([], {"dept": 7}),
}
ENGINES = {name: PolicyEngine.from_text(text, f"{name}.policy") for name, text in BUNDLES.items()}
EXPORTS = {name: export(engine.files, TOOLS) for name, engine in ENGINES.items()}
POLICY_SETS = {name: cedarpy.PolicySet.from_str(exported.text) for name, exported in EXPORTS.items()}
PRINCIPALS = [
    Request(principal=Principal(id=u, roles=frozenset(r), attributes=c), action="x") for u, (r, c) in USERS.items()
]
ENTITIES = cedarpy.Entities.from_json_str(json.dumps([cedar_request(request)[1] for request in PRINCIPALS]))

OPTIONAL_ARGS = {
    "amount": [*range(-20, 700, 7), 0, 1, 2, 3, 100, 200, 500, 501, -5, 5, 10],
    "customer": [{}, {"status": "flagged"}, {"status": "ok"}, {"status": "Flagged", "tier": "gold"},
                 {"tier": "blocked"}, {"tier": "x", "status": "flagged"}, {"tier": "fraud"}],
    "recipient": ["a@example.com", "a+b@example.com", "x@evil.com", "@example.com", "example.com"],
    "subject": ["[ticket] 1", "hello", "[ticket]"],
    "priority": ["high", "low"],
    "force": [True, False],
    "query": ["a*b", "ab", "*", ""],
    "limit": list(range(0, 101, 5)),
}  # fmt: skip


def random_request(rng: random.Random) -> Request:
    """A request over small value domains, so that every condition both holds and fails often."""
    user = rng.choice(sorted(USERS))
    arguments = {k: rng.choice(values) for k, values in OPTIONAL_ARGS.items() if rng.random() < 0.6}
    return Request(
        principal=Principal(id=user, roles=frozenset(USERS[user][0]), attributes=USERS[user][1]),
        agent=AgentInfo(id=rng.choice(["crm-bot", "other"])),
        action=rng.choice(TOOLS),
        args=arguments,
        context=RequestContext(session_id="s", tenant=rng.choice(["acme", "suspended"])),
    )


def test_bundles_export_completely() -> None:
    for exported in EXPORTS.values():
        assert exported.skipped == ()


def test_stateful_rules_are_reported_not_translatable() -> None:
    engine = PolicyEngine.from_text('limit a to 3 calls per hour per user.\ndeny b when x matches "y".\nallow c.')
    exported = export(engine.files)
    assert [s.rule_id for s in exported.skipped] == ["<policy>#1", "<policy>#2"]
    assert "regular expressions" in exported.skipped[1].why and len(exported.policies) == 1


@pytest.mark.parametrize("bundle", sorted(BUNDLES))
@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**32))
def test_decisions_equal_cedarpy(bundle: str, seed: int) -> None:
    """3 bundles x 10 examples x 400 requests = 12,000 requests, decided by both engines."""
    rng = random.Random(seed)
    batch = [random_request(rng) for _ in range(400)]
    ours = ENGINES[bundle].decide_many(batch)
    cedar = cedarpy.is_authorized_batch([cedar_request(r)[0] for r in batch], POLICY_SETS[bundle], ENTITIES)
    for request, decision, result in zip(batch, ours, cedar, strict=True):
        assert (decision.effect is Effect.ALLOW) == result.allowed, (request.model_dump(), decision.reasons, result)
