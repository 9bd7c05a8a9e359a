"""Cedar export: a differential test against cedarpy (the Rust Cedar engine) on >= 10,000 random requests, and
the export never being more permissive than the bundle (refusing rather than leaving a deny rule out)."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import cedarpy
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentcore import Effect, PolicyEngine, Request
from agentcore.policies import AgentInfo, InMemoryContext, Principal, RequestContext, ast
from agentcore.policies.cedar import CedarExportError, cedar_request, export, nodes
from agentcore.policies.compiler import compile_bundle
from agentcore.policies.values import is_number

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


# ---- no false allow: what the engine cannot evaluate, Cedar must not allow ----------------------------------------
def cedar_allows(policies: str, request: Request) -> bool:
    cedar, entity = cedar_request(request)
    entities = cedarpy.Entities.from_json_str(json.dumps([entity]))
    return cedarpy.is_authorized(cedar, cedarpy.PolicySet.from_str(policies), entities).allowed


HOSTILE_VALUES = ["1000", True, False, 5000, 0, [1000], [], ["evil", "x"], {"a": 1}, {"status": "bad"}, "evil x", 7.5]
TYPED_DENIES = """
allow any tool.
deny t when amount is more than 500.
deny t when note starts with "x" or note ends with "y".
deny t when c.status is "bad".
deny t when labels contains 5.
deny t when tags contains "evil".
deny t unless every tag in roster has tag is one of "a", "b".
deny t when low is between 1 and 2 or low is at most limit.
deny t when d.e is more than 3 if present.
require approval for t when q is not one of "ok", 1.
"""


@pytest.mark.parametrize("arg", ["amount", "note", "c", "labels", "tags", "roster", "low", "limit", "d", "q"])
def test_an_argument_of_another_type_is_denied_by_cedar_as_by_the_engine(arg: str) -> None:
    """Cedar ignores a policy whose evaluation errors, so a forbid whose test met a value of another type
    (`"1000" > 500`, `5 like "x*"`, `"str"["status"]`) did not apply: a false allow of every deny in the bundle.
    The engine finds such a test unevaluable and denies; the export now checks each value's type first."""
    engine = PolicyEngine.from_text(TYPED_DENIES, "typed.policy")
    policies = export(engine.files).text
    base = {"amount": 1, "note": "m", "c": {"status": "ok"}, "labels": [1], "tags": ["a"], "roster": ["a"],
            "low": 3, "limit": 0, "q": "ok"}  # fmt: skip
    request = Request(principal=Principal(id="u"), action="t", args=base)
    assert engine.decide(request).effect is Effect.ALLOW and cedar_allows(policies, request)
    for value in [*HOSTILE_VALUES, {"e": "4"}, {"e": 4}]:
        hostile = request.model_copy(update={"args": {**base, arg: value}})
        ours = engine.decide(hostile).effect is Effect.ALLOW
        assert cedar_allows(policies, hostile) == ours, (arg, value, engine.decide(hostile).reasons)


def test_string_literals_are_exported_canonical() -> None:
    """Requests reach Cedar canonical, so a literal written with look-alikes (`"ｅvil"`, a zero-width space) must
    be exported canonical too: raw, `note is "ｅvil"` never matched the request's "evil" and the deny never applied."""
    engine = PolicyEngine.from_text(
        'allow any tool.\ndeny t when note is "ｅvil\u200b" or note is one of "ｂad", "x".\n'
        'deny t when tags contains "ｅvil" or every tag in roster has tag is not "ｂad".\n',
        "canon.policy",
    )
    policies = export(engine.files).text
    fine = {"note": "ok", "tags": ["ok"], "roster": ["bad"]}
    request = Request(principal=Principal(id="u"), action="t", args=fine)
    assert cedar_allows(policies, request) and engine.decide(request).effect is Effect.ALLOW
    for args in [{"note": "evil"}, {"note": "bad"}, {"tags": ["evil"]}, {"tags": "an evil"}, {"roster": ["x"]}]:
        request = Request(principal=Principal(id="u"), action="t", args={**fine, **args})
        assert engine.decide(request).effect is Effect.DENY
        assert not cedar_allows(policies, request), args


def test_user_roles_are_the_callers_roles_not_a_claim_named_roles() -> None:
    """`user.roles` is the caller's roles to the engine; it was exported as the claim `roles`, which the caller's
    identity provider may set: `{"roles": ["admin"]}` in the claims passed `deny ... unless user.roles contains`."""
    engine = PolicyEngine.from_text('allow any tool.\ndeny t unless user.roles contains "admin".\n', "roles.policy")
    policies = export(engine.files).text
    forged = Request(principal=Principal(id="u", attributes={"roles": ["admin"]}), action="t")
    assert engine.decide(forged).effect is Effect.DENY and not cedar_allows(policies, forged)
    admin = Request(principal=Principal(id="u", roles=frozenset({"admin"})), action="t")
    assert engine.decide(admin).effect is Effect.ALLOW and cedar_allows(policies, admin)


def test_a_request_without_the_type_record_is_denied() -> None:
    """The type record is part of the request mapping; a request built without it must not pass the forbids."""
    engine = PolicyEngine.from_text("allow any tool.\ndeny t when amount is more than 500.\n", "types.policy")
    cedar, entity = cedar_request(Request(principal=Principal(id="u"), action="t", args={"amount": 5}))
    policies = cedarpy.PolicySet.from_str(export(engine.files).text)
    entities = cedarpy.Entities.from_json_str(json.dumps([entity]))
    assert cedarpy.is_authorized(cedar, policies, entities).allowed
    context = cedar["context"]
    assert isinstance(context, dict)
    del context["types"]
    assert not cedarpy.is_authorized(cedar, policies, entities).allowed


@pytest.mark.parametrize("escape", ["__extn", "__entity", "__expr"])
def test_a_record_cedar_json_would_read_as_another_value_is_refused(escape: str) -> None:
    """`{"__extn": {"fn": "decimal", "arg": "5.0"}}` is a record to the engine and the decimal 5 to Cedar's JSON:
    `allow t when amount is 5` allowed it in Cedar only. The mapping refuses such a record (ValueError)."""
    forged = {"__extn": {"fn": "decimal", "arg": "5.0"}} if escape == "__extn" else {escape: {"type": "A", "id": "x"}}
    request = Request(principal=Principal(id="u"), action="t", args={"amount": {"nested": forged}})
    with pytest.raises(ValueError, match=escape):
        cedar_request(request)
    with pytest.raises(ValueError, match=escape):
        cedar_request(Request(principal=Principal(id="u", attributes={"a": [forged]}), action="t"))


def test_a_deny_on_a_glob_covers_tools_missing_from_the_tool_list() -> None:
    """A deny on `crm.*` was exported as a forbid of the tools `--tools` listed, so a tool added later (or left out
    of the list) was allowed by Cedar's `permit` and denied by the bundle. The forbid now matches the pattern
    itself (`context.tool like "crm.*"`), with or without the tool list; allow rules permit only listed tools."""
    bundle = "default allow.\ndeny crm.*.\nrequire approval for files.*el*te, pay*x.\nallow search.\n"
    engine = PolicyEngine.from_text(bundle, "globs.policy")
    for tools in (["crm.lookup", "files.delete"], None):
        policies = export(engine.files, tools).text
        for action, allowed in [("crm.new", False), ("crm.lookup", False), ("crm", True), ("files.delete", False),
                                ("files.elte", False), ("files.xdelete.x", True), ("payx", False), ("pay", True),
                                ("search", True)]:  # fmt: skip
            request = Request(principal=Principal(id="u"), action=action)
            assert (engine.decide(request).effect is Effect.ALLOW) == allowed, action
            assert cedar_allows(policies, request) == allowed, (tools, action)


# ---- the shipped bundles: what exports decides as the engine does, on values of every type -----------------------
SHIPPED = ["tests/policies/data/features.policy", "tests/policies/data/v2.policy", "examples/expenses/policies",
           "agentcore/starter"]  # fmt: skip
ROOT = Path(__file__).resolve().parents[2]


def exportable_part(path: str) -> tuple[PolicyEngine, str, list[ast.Rule]]:
    """The bundle less the rules Cedar cannot express, as an engine and its Cedar text (every shipped bundle has
    deny-side rules with no Cedar form, so the whole bundle refuses; this tests the translation of the rest)."""
    files = PolicyEngine.from_paths([ROOT / path]).files
    left_out = {s.rule_id for s in export(files).skipped}
    part = [f.model_copy(update={"rules": tuple(r for r in f.rules if r.id not in left_out)}) for f in files]
    exported = export(part)
    assert not exported.skipped
    return PolicyEngine(compile_bundle(part, {})), exported.text, [r for f in part for r in f.rules]


def request_domain(rules: list[ast.Rule]) -> tuple[list[str], dict[tuple[str, ...], list[Any]], list[str]]:
    """(tools, candidate values per path read, roles) from the rules: their literals, values near the numbers,
    and values of every other type."""
    tools, roles, literals, paths = ["other"], ["other"], [], set()
    for rule in rules:
        tools.extend(name.replace("*", "x") for name in rule.targets.names)
        roles.extend(s.value for s in rule.subjects if s.kind == "role")
        for node in (n for clause in rule.clauses for n in nodes(clause.cond)):
            if isinstance(node, ast.Lit) and node.value is not None:
                literals.append(node.value)
                if is_number(node.value) and not isinstance(node.value, bool):
                    literals.extend([node.value + 1, node.value - 0.5])
            elif isinstance(node, ast.Compare) and node.op in ("has_role", "not_has_role"):
                roles.extend(str(lit.value) for lit in node.right if isinstance(lit, ast.Lit))
            elif isinstance(node, ast.Path) and node.root in ("args", "user", "agent"):
                paths.add((node.root, *node.parts))
    hostile = ["1000", "x", True, 0, 7.5, [], ["x"], [1, "a"], {"a": 1}]
    values = {path: [*literals, *hostile, [literal for literal in literals if isinstance(literal, str)][:3]]
              for path in sorted(paths)}  # fmt: skip
    return sorted(set(tools)), values, sorted(set(roles))


def nested(paths: dict[tuple[str, ...], Any], root: str) -> dict[str, Any]:
    tree: dict[str, Any] = {}
    for path, value in paths.items():
        if path[0] != root or len(path) < 2:
            continue
        node = tree
        for part in path[1:-1]:
            node = node.setdefault(part, {}) if isinstance(node.get(part, {}), dict) else {}
        node[path[-1]] = value
    return tree


@pytest.mark.parametrize("path", SHIPPED)
def test_the_exportable_part_of_each_shipped_bundle_decides_as_the_engine(path: str) -> None:
    engine, text, rules = exportable_part(path)
    policies = cedarpy.PolicySet.from_str(text)
    tools, values, roles = request_domain(rules)
    rng = random.Random(path)
    batch, entities = [], []
    for n in range(1500):
        chosen = {p: rng.choice(options) for p, options in values.items() if rng.random() < 0.7}
        request = Request(
            principal=Principal(id=f"u{n}", roles=frozenset(rng.sample(roles, min(2, len(roles)))),
                                attributes=nested(chosen, "user")),
            agent=AgentInfo(id="agent", attributes=nested(chosen, "agent")),
            action=rng.choice(tools),
            args=nested(chosen, "args"),
        )  # fmt: skip
        try:
            cedar, entity = cedar_request(request)
        except ValueError:  # a number Cedar's decimal cannot hold
            continue
        batch.append((request, cedar))
        entities.append(entity)
    results = cedarpy.is_authorized_batch(
        [c for _, c in batch], policies, cedarpy.Entities.from_json_str(json.dumps(entities))
    )
    decisions = engine.decide_many([r for r, _ in batch])
    for (request, _), decision, result in zip(batch, decisions, results, strict=True):
        assert (decision.effect is Effect.ALLOW) == result.allowed, (request.model_dump(), decision.reasons)
    allowed = sum(result.allowed for result in results)
    assert len(batch) > 1000 and (allowed > 20 or not any(r.kind == "allow" for r in rules)), allowed
