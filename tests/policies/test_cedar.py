"""Cedar export: a differential test against cedarpy (the Rust Cedar engine) on >= 10,000 random requests, and
the export never being more permissive than the bundle (refusing rather than leaving a deny rule out)."""

from __future__ import annotations

import json
import random

import cedarpy
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentcore import Effect, PolicyEngine, Request
from agentcore.policies import AgentInfo, InMemoryContext, Principal, RequestContext
from agentcore.policies.cedar import CedarExportError, cedar_request, export

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
    "decimals-and-sets": """
        default allow.
        deny refunds.issue when amount is more than 250.75 or amount is between 0.5 and 0.75.
        deny refunds.issue when labels contains "vip" and user.level is at most 2.5.
        deny crm.lookup unless labels does not contain "blocked" or user has role "admin".
        deny crm.export when scores contains 5 or scores contains 7.4999.
        require approval for refunds.void when amount is one of 1, 2.5, 10.
        deny email.send when context.resource is "prod" and customer.limits.daily is at least 99.5.
        deny search when labels is "x" or labels is not "x" and amount is less than 0.
        deny files.delete when customer.limits.daily is at most amount.
        """,
    "decimal-permits": """
        allow refunds.issue when amount is at most 99.99 and labels does not contain "vip".
        allow crm.* when scores contains 5.0 or user.level is more than 2.
        allow search unless labels contains "blocked" and labels contains "x".
        deny crm.export when amount is between 0.5 and 2.5.
        allow email.send for users with role "support" when context.resource is one of "prod", "dev".
        allow files.delete when customer.limits.daily is less than amount.
        """,
}

USERS = {
    "alice": (["support"], {"dept": "finance", "level": 2.5}),
    "bob": (["support", "crm-reader", "manager"], {"dept": "sales", "level": 3}),
    "carol": (["admin", "intern"], {"level": 1.0}),
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
    "amount": [*range(-20, 700, 7), 0, 1, 2, 3, 100, 200, 500, 501, -5, 5, 10,
               0.5, 0.75, 0.7501, 2.5, 10.0, 99.99, 99.5, 250.75, 250.7501, -0.25, 1.0],
    "customer": [{}, {"status": "flagged"}, {"status": "ok"}, {"status": "Flagged", "tier": "gold"},
                 {"tier": "blocked"}, {"tier": "x", "status": "flagged"}, {"tier": "fraud"},
                 {"limits": {"daily": 99.5}}, {"limits": {"daily": 100}}, {"limits": {}}, {"limits": {"daily": 0.5}}],
    "labels": [["vip"], ["vip-new"], "vip-new", "blocked", ["blocked", "x"], [], "x", ["x"], "blocked x", "VIP"],
    "scores": [[5.0], [7.4999, 1], [], [5], [7.5], [2, 5.00]],
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
        resource=rng.choice([None, "prod", "dev"]),
        context=RequestContext(session_id="s", tenant=rng.choice(["acme", "suspended"])),
    )


def test_look_alike_subjects_export_in_canonical_form() -> None:
    """Requests reach Cedar canonical (as they reach the engine), so a subject written with look-alikes must be
    exported canonical: a raw "ｍａｌｌｏｒｙ" in a forbid would never match and the export would allow more."""
    engine = PolicyEngine.from_text(
        'allow search when note is not "café\tnoté".\n'
        'deny search for user "ｍａｌｌｏｒｙ".\n'
        'deny search for users with role "ａｄｍｉｎ\u200b" when note starts with "ｈｉ \\"*".'
    )
    policies = cedarpy.PolicySet.from_str(export(engine.files, TOOLS).text)
    callers = [("mallory", (), "x"), ("bob", ("admin",), 'hi "* there'), ("bob", ("admin",), "x"), ("carol", (), "x")]
    for user, roles, note in callers:
        request = Request(principal=Principal(id=user, roles=frozenset(roles)), action="search", args={"note": note})
        cedar, entity = cedar_request(request)
        allowed = cedarpy.is_authorized(cedar, policies, cedarpy.Entities.from_json_str(json.dumps([entity]))).allowed
        assert (engine.decide(request).effect is Effect.ALLOW) == allowed == (user != "mallory" and "*" not in note)


def test_bundles_export_completely() -> None:
    for exported in EXPORTS.values():
        assert exported.skipped == ()


def test_rules_cedar_cannot_express_are_refused_unless_leaving_them_out_allows_less() -> None:
    engine = PolicyEngine.from_text(
        'limit a to 3 calls per hour per user.\ndeny b when x matches "y".\nallow c.\n'
        "require approval for d when order(id).total is more than 5.\nredact email addresses in results of e.\n"
        "suppress output of f.\ndeny g when length of items is more than 2.\ndeny h when a is b.\n"
        'deny i when amount is more than 0.00001.\ndeny j when amount is more than "5".\n'
        'allow k when x matches "y".\nmonitor deny l when x matches "y".\ndeny m during 09:00-17:00.\n',
        "t.policy",
    )
    exported = export(engine.files)
    refused = {s.line: s.why for s in exported.refused}
    assert sorted(refused) == [1, 2, 4, 5, 6, 7, 8, 9, 10, 13]
    assert "4 decimal places" in refused[9] and "non-number" in refused[10] and "unordered" in refused[8]
    assert [(s.line, s.safe) for s in exported.skipped if s.safe] == [(11, True), (12, True)]
    with pytest.raises(CedarExportError) as caught:
        exported.text  # noqa: B018
    assert [(p.file, p.line, p.column) for p in caught.value.problems] == [("t.policy", n, 1) for n in sorted(refused)]
    assert "cannot export rule `t.policy#2` to Cedar: Cedar has no regular expressions" in str(caught.value)
    safe = export(PolicyEngine.from_text('allow c.\nallow k when x matches "y".\nmonitor deny l.').files)
    assert [s.line for s in safe.skipped] == [2, 3] and safe.text.count("permit(") == 1


UNTRANSLATABLE_ALLOWS = """
allow refunds.issue when order(order_id).status is "ok".
allow refunds.issue, crm.lookup when amount is at most 300.
allow crm.lookup when query matches "^a".
allow search when length of query is less than 2.
allow search when limit plus amount is less than 100.
deny refunds.issue when labels contains "vip".
"""


@settings(max_examples=5, deadline=None)
@given(seed=st.integers(0, 2**32))
def test_leaving_allow_rules_out_only_ever_allows_less(seed: int) -> None:
    engine = PolicyEngine.from_text(UNTRANSLATABLE_ALLOWS, "allows.policy")
    exported = export(engine.files, TOOLS)
    assert len(exported.skipped) == 4 and not exported.refused
    rng = random.Random(seed)
    batch = [random_request(rng) for _ in range(400)]
    for request in batch[::3]:
        request.args.setdefault("order_id", "o1")
    context = InMemoryContext(resolvers={"order": lambda key: {"status": "ok"}})
    ours = engine.decide_many(batch, context)
    policies = cedarpy.PolicySet.from_str(exported.text)
    cedar = cedarpy.is_authorized_batch([cedar_request(r)[0] for r in batch], policies, ENTITIES)
    allowed = [(d.effect is Effect.ALLOW, c.allowed) for d, c in zip(ours, cedar, strict=True)]
    assert all(mine for mine, theirs in allowed if theirs)  # Cedar allows a subset of what the bundle allows
    assert any(mine and not theirs for mine, theirs in allowed)  # and strictly less: the left-out rules mattered


def test_request_mapping_writes_numbers_as_decimals_at_every_depth() -> None:
    request = Request(
        principal=Principal(id="u", attributes={"level": 2}),
        action="a",
        args={"n": 1, "x": [0.5, {"y": -3}], "ok": True},
        resource="prod",
    )
    cedar, entity = cedar_request(request)
    context = cedar["context"]
    assert isinstance(context, dict) and context["resource"] == "prod"
    assert context["args"] == {
        "n": {"__extn": {"fn": "decimal", "arg": "1.0"}},
        "x": [{"__extn": {"fn": "decimal", "arg": "0.5"}}, {"y": {"__extn": {"fn": "decimal", "arg": "-3.0"}}}],
        "ok": True,
    }
    assert entity["attrs"] == {"roles": [], "claims": {"level": {"__extn": {"fn": "decimal", "arg": "2.0"}}}}
    with pytest.raises(ValueError, match="4 decimal places"):
        cedar_request(request.model_copy(update={"args": {"n": 0.123456}}))


@pytest.mark.parametrize("bundle", sorted(BUNDLES))
@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**32))
def test_decisions_equal_cedarpy(bundle: str, seed: int) -> None:
    """5 bundles x 10 examples x 240 requests = 12,000 requests, decided by both engines."""
    rng = random.Random(seed)
    batch = [random_request(rng) for _ in range(240)]
    ours = ENGINES[bundle].decide_many(batch)
    cedar = cedarpy.is_authorized_batch([cedar_request(r)[0] for r in batch], POLICY_SETS[bundle], ENTITIES)
    for request, decision, result in zip(batch, ours, cedar, strict=True):
        assert (decision.effect is Effect.ALLOW) == result.allowed, (request.model_dump(), decision.reasons, result)


# ---- language v2 constructs Cedar can express ---------------------------------------------------------------------
V2_BUNDLES = {
    "v2-quantifiers": """
        default allow.
        deny refunds.issue unless every tag in tags has tag is one of "a", "b", "vip".
        deny crm.lookup when any tag in tags has tag is "blocked" or tag is "x".
        deny crm.export when no tag in tags has tag is not "a".
        deny search when (any tag in tags has not tag is one of "a", "b") and user does not have role "admin".
        require approval from role "manager" for refunds.void when every tag in tags has tag is not "vip".
        deny email.send when (no tag in tags has tag is "ok" and tag is not "a" or tag is "x") or amount > 2.5.
        """,
    "v2-named-and-presence": """
        define "big" as amount is more than 100 times 2.5.
        define "flagged" as customer.status is "flagged" if present.
        define "risky" as "big" or "flagged".
        allow refunds.issue when not "risky" and amount is at least 0.
        allow crm.* when customer.tier is "gold" if present.
        deny crm.export when "flagged".
        require approval for refunds.void when "big" and user does not have role "manager".
        allow refunds.void, search when amount is at most 0.1 plus 0.2 or customer.tier is one of "gold", "x".
        deny search when customer.limits.daily is at most 99.5 if present.
        """,
    "v2-arithmetic-and-bounds": """
        allow refunds.issue when amount is more than 0 and at most 500 divided by 4.
        allow crm.lookup when amount is at least min(2, 3) and less than max(10, abs(-20)).
        deny crm.lookup when amount is between 2 times 3 and 7.5 and not "exempt".
        define "exempt" as user has role "admin" or labels contains "vip".
        allow email.send, search when amount > -5 and < 5 and every tag in tags has tag is one of "a", "b".
        deny email.send when amount is 0.1 plus 0.2.
        """,
    "v2-permits": """
        allow refunds.issue when any tag in tags has tag is one of "vip", "b".
        allow crm.* unless any tag in tags has tag is "blocked".
        allow search when (no tag in tags has tag is "x") and customer.status is not "flagged" if present.
        allow email.send when "small" and every tag in tags has (tag is "a" or not tag is not "b") and tag is not "x".
        define "small" as amount is less than 1000 minus 990.5.
        deny crm.export when user does not have role "support" and every tag in tags has tag is not "a".
        """,
}
V2_ENGINES = {name: PolicyEngine.from_text(text, f"{name}.policy") for name, text in V2_BUNDLES.items()}
V2_EXPORTS = {name: export(engine.files, TOOLS) for name, engine in V2_ENGINES.items()}
V2_POLICY_SETS = {name: cedarpy.PolicySet.from_str(exported.text) for name, exported in V2_EXPORTS.items()}
TAG_VALUES = ["a", "b", "vip", "blocked", "x", "ok", "A"]
BOUNDARY_AMOUNTS = [0, 0.3, 0.3001, 1, 2, 2.5, 3, 6, 7.5, 7.4999, 9.5, 10, 19.9999, 20, 125, 125.0001, 250, -4.5]


def random_v2_request(rng: random.Random) -> Request:
    """A request whose ``tags`` is a list of strings (often empty or repeating) or absent, and whose amount is
    often at a bound of the bundles."""
    request = random_request(rng)
    if rng.random() < 0.5:
        request.args["amount"] = rng.choice(BOUNDARY_AMOUNTS)
    if rng.random() < 0.85:
        request.args["tags"] = [rng.choice(TAG_VALUES) for _ in range(rng.choice([0, 1, 1, 2, 2, 3, 5]))]
    return request


def test_v2_bundles_export_completely() -> None:
    for name, exported in V2_EXPORTS.items():
        assert exported.skipped == (), name
        assert "containsAll" in exported.text or "containsAny" in exported.text or name == "v2-named-and-presence"


def v2_agreement(bundle: str, batch: list[Request]) -> tuple[int, int]:
    """(agreements, allowed by both) of our decisions and cedarpy's over a batch."""
    ours = V2_ENGINES[bundle].decide_many(batch)
    cedar = cedarpy.is_authorized_batch([cedar_request(r)[0] for r in batch], V2_POLICY_SETS[bundle], ENTITIES)
    for request, decision, result in zip(batch, ours, cedar, strict=True):
        assert (decision.effect is Effect.ALLOW) == result.allowed, (request.model_dump(), decision.reasons, result)
    return len(batch), sum(result.allowed for result in cedar)


@pytest.mark.parametrize("bundle", sorted(V2_BUNDLES))
def test_v2_decisions_equal_cedarpy(bundle: str) -> None:
    """4 bundles x 3,000 requests = 12,000 requests over quantifiers, named conditions, `if present` and literal
    arithmetic, decided by both engines; both outcomes must be common, so agreement is not trivial."""
    rng = random.Random(f"v2-{bundle}")
    agreed, allowed = v2_agreement(bundle, [random_v2_request(rng) for _ in range(3000)])
    assert agreed == 3000 and 0.05 < allowed / agreed < 0.95, allowed


V2_REFUSED = """
deny a when any item in items has item.qty is more than 2.
deny b when amount plus fee is more than 2.
deny c when sum of p.amount for p in payments is more than 5.
deny d when start_date is after today.
deny e when count of t in tags where t is "x" is more than 1.
deny f when any tag in tags has tag starts with "x".
deny g when amount is more than 5 divided by 0.
allow h when any item in items has item.qty is more than 2.
deny i when any x in 5 has x is 1.
"""


def test_v2_constructs_cedar_cannot_express_are_refused_with_their_locations() -> None:
    exported = export(PolicyEngine.from_text(V2_REFUSED, "r.policy").files)
    assert [(s.line, s.safe) for s in exported.skipped] == [(n, n == 9) for n in range(2, 11)]
    whys = {s.line: s.why for s in exported.skipped}
    assert "inside the items" in whys[2] and "no arithmetic" in whys[3] and "divides by zero" in whys[8]
    with pytest.raises(CedarExportError, match=r"r\.policy:2:1"):
        exported.text  # noqa: B018
