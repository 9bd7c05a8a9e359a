"""Engine semantics: combining, fail-closed, stateful rules, obligations, monitor mode, canonicalisation."""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from agentcore import Decision, Effect, PolicyCheckError, PolicyEngine, Request
from agentcore.policies import AgentInfo, InMemoryContext, Principal, RequestContext, Scope
from agentcore.policies import engine as engine_module

NOON = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)  # a Monday


def req(
    action: str,
    args: dict[str, object] | None = None,
    roles: tuple[str, ...] = (),
    *,
    user: str = "u1",
    agent: str = "bot",
    at: datetime = NOON,
    session: str | None = "s1",
    tenant: str | None = "acme",
    **claims: object,
) -> Request:
    return Request(
        principal=Principal(id=user, roles=frozenset(roles), attributes=claims),
        agent=AgentInfo(id=agent),
        action=action,
        args=args or {},
        context=RequestContext(time=at, session_id=session, tenant=tenant),
    )


def decide(policy: str, request: Request, context: InMemoryContext | None = None) -> Decision:
    return PolicyEngine.from_text(policy, "t.policy").decide(request, context)


REFUNDS = """
policy "refunds"
allow refunds.issue for users with role "support" when amount is at most 500.
require approval from role "manager" for refunds.issue when amount is more than 500.
deny refunds.issue when customer.status is present and customer.status is "flagged".
"""


def test_default_deny_and_configurable_default() -> None:
    d = decide("allow a.", req("b"))
    assert d.effect is Effect.DENY and d.reasons[0].rule_id == "default" and "no rule allowed" in d.reasons[0].note
    assert decide("default allow.\ndeny a.", req("b")).effect is Effect.ALLOW
    assert PolicyEngine.from_text("deny a.", default=Effect.ALLOW).decide(req("b")).effect is Effect.ALLOW
    with pytest.raises(PolicyCheckError, match="different defaults"):
        PolicyEngine.from_sources({"a.policy": "default allow.", "b.policy": "default deny."})


def test_deny_beats_approval_beats_allow() -> None:
    engine = PolicyEngine.from_text(REFUNDS, "refunds.policy")
    allowed = engine.decide(req("refunds.issue", {"amount": 100}, ("support",)))
    assert (
        allowed.effect is Effect.ALLOW and allowed.reasons[0].line == 3 and allowed.reasons[0].file == "refunds.policy"
    )
    approval = engine.decide(req("refunds.issue", {"amount": 900}, ("support",)))
    assert approval.effect is Effect.NEEDS_APPROVAL and approval.obligations.approver_roles == ("manager",)
    flagged = engine.decide(req("refunds.issue", {"amount": 900, "customer": {"status": "flagged"}}, ("support",)))
    assert flagged.effect is Effect.DENY and flagged.reasons[0].line == 5
    assert engine.decide(req("refunds.issue", {"amount": 100})).effect is Effect.DENY  # not support
    assert allowed.bundle_hash == engine.bundle_hash and len(engine.bundle_hash) == 64


def test_fail_closed_on_missing_and_wrong_types() -> None:
    engine = PolicyEngine.from_text(
        'allow pay when amount is at most 5.\ndeny mail unless to ends with "@x.com".\nallow mail.'
    )
    missing = engine.decide(req("pay"))
    assert missing.effect is Effect.DENY and "argument `amount` is missing" in missing.errors[0].note
    assert any("amount" in r.note for r in missing.reasons)  # the reasons say why the allow did not apply
    assert engine.decide(req("pay", {"amount": "3"})).effect is Effect.DENY  # strings are not numbers
    assert engine.decide(req("pay", {"amount": True})).effect is Effect.DENY
    assert engine.decide(req("pay", {"amount": math.nan})).effect is Effect.DENY
    assert engine.decide(req("pay", {"amount": 4.99})).effect is Effect.ALLOW
    no_to = engine.decide(req("mail"))
    assert no_to.effect is Effect.DENY and "failed closed" in no_to.reasons[0].note
    assert engine.decide(req("mail", {"to": "a@x.com"})).effect is Effect.ALLOW


def test_kleene_logic_decides_when_it_can() -> None:
    engine = PolicyEngine.from_text("allow a when x is 1 or y is 2.\ndeny b when x is 1 and y is 2.\nallow b.")
    assert engine.decide(req("a", {"y": 2})).effect is Effect.ALLOW  # x missing, but y decides
    assert engine.decide(req("b", {"x": 3})).effect is Effect.ALLOW  # y missing, but x=3 makes the and false
    assert engine.decide(req("b", {"x": 1})).effect is Effect.DENY  # unknown and true: fail closed


def test_resolver_detector_and_missing_context_fail_closed() -> None:
    policy = (
        'deny cancel when order(order_id).status is not "pending".\nallow cancel.\n'
        'deny send when "pii" score of arguments is at least 0.8.\nallow send.'
    )
    orders = {"o1": {"status": "pending"}, "o2": {"status": "delivered"}}
    ctx = InMemoryContext(resolvers={"order": orders.get}, detectors={"pii": lambda text: 0.9 if "@" in text else 0.1})
    engine = PolicyEngine.from_text(policy)
    assert engine.decide(req("cancel", {"order_id": "o1"}), ctx).effect is Effect.ALLOW
    assert engine.decide(req("cancel", {"order_id": "o2"}), ctx).effect is Effect.DENY
    unknown = engine.decide(req("cancel", {"order_id": "o9"}), ctx)
    assert unknown.effect is Effect.DENY and "not found" in unknown.reasons[0].note
    assert engine.decide(req("send", {"body": "hi"}), ctx).effect is Effect.ALLOW
    assert engine.decide(req("send", {"body": "a@b.c"}), ctx).effect is Effect.DENY
    no_context = engine.decide(req("send", {"body": "hi"}))
    assert no_context.effect is Effect.DENY and "no DecisionContext" in no_context.reasons[0].note
    broken = InMemoryContext(resolvers={"order": lambda key: 1 / 0})
    assert (
        "ZeroDivisionError" in engine.decide(req("cancel", {"order_id": "o1"}), broken).reasons[0].note
        or "division" in engine.decide(req("cancel", {"order_id": "o1"}), broken).reasons[0].note
    )


def test_rate_limit_counts_only_recorded_calls_and_exposes_reservation() -> None:
    engine = PolicyEngine.from_text("allow pay.\nlimit pay to 2 calls per hour per user.")
    ctx = InMemoryContext()
    first = engine.decide(req("pay", at=NOON), ctx)
    assert first.effect is Effect.ALLOW
    (limit,) = first.obligations.rate_limits
    assert (limit.scope, limit.key, limit.window_seconds, limit.limit, limit.actions) == (
        "user",
        "u1",
        3600,
        2,
        ("pay",),
    )
    engine.decide(req("pay", at=NOON), ctx)  # decided but never executed: not counted
    ctx.record(req("pay", at=NOON - timedelta(minutes=50)))
    ctx.record(req("pay", at=NOON - timedelta(minutes=10)))
    denied = engine.decide(req("pay", at=NOON), ctx)
    assert denied.effect is Effect.DENY and "limit reached: 2 calls" in denied.reasons[0].note
    assert engine.decide(req("pay", at=NOON, user="u2"), ctx).effect is Effect.ALLOW  # per user
    assert engine.decide(req("pay", at=NOON + timedelta(minutes=51)), ctx).effect is Effect.ALLOW  # window slid


def test_sliding_sum_and_sequence_rules() -> None:
    policy = (
        "allow refund, crm.export, slack.post.\n"
        "deny refund when sum of amount over refund in the last 24 hours per user plus amount exceeds 100.\n"
        "deny slack.post after crm.export in the same session within 1 hour."
    )
    engine, ctx = PolicyEngine.from_text(policy), InMemoryContext()
    ctx.record(req("refund", {"amount": 60}, at=NOON - timedelta(hours=2)))
    ctx.record(req("refund", {"amount": 60}, at=NOON - timedelta(hours=30)))  # outside the window
    assert engine.decide(req("refund", {"amount": 40}), ctx).effect is Effect.ALLOW
    assert engine.decide(req("refund", {"amount": 41}), ctx).effect is Effect.DENY
    assert engine.decide(req("slack.post"), ctx).effect is Effect.ALLOW
    ctx.record(req("crm.export", at=NOON - timedelta(minutes=30)))
    assert engine.decide(req("slack.post"), ctx).effect is Effect.DENY
    assert engine.decide(req("slack.post", session="s2"), ctx).effect is Effect.ALLOW
    assert engine.decide(req("slack.post", session=None), ctx).effect is Effect.DENY  # no session: fail closed


def test_time_windows_in_time_zones_and_spend() -> None:
    policy = (
        'allow any tool.\ndeny any tool for agent "night-bot" outside 09:00-18:00 on weekdays in "Europe/Madrid".\n'
        "deny any tool when accelerator spend of user today exceeds 5.00 USD."
    )
    engine, ctx = PolicyEngine.from_text(policy), InMemoryContext()
    monday_noon = datetime(2026, 11, 30, 11, 0, tzinfo=UTC)  # 12:00 in Madrid
    assert engine.decide(req("x", agent="night-bot", at=monday_noon), ctx).effect is Effect.ALLOW
    assert (
        engine.decide(req("x", agent="night-bot", at=monday_noon.replace(hour=17, minute=30)), ctx).effect
        is Effect.DENY
    )
    assert engine.decide(req("x", agent="night-bot", at=monday_noon - timedelta(days=2)), ctx).effect is Effect.DENY
    assert engine.decide(req("x", agent="day-bot", at=monday_noon - timedelta(days=2)), ctx).effect is Effect.ALLOW
    ctx.add_spend(Scope.USER, "u1", 4.0, monday_noon - timedelta(hours=1), tenant="acme")
    ctx.add_spend(Scope.USER, "u1", 4.0, monday_noon - timedelta(days=1), tenant="acme")  # yesterday
    assert engine.decide(req("x", at=monday_noon), ctx).effect is Effect.ALLOW
    ctx.add_spend(Scope.USER, "u1", 1.5, monday_noon - timedelta(minutes=5), tenant="acme")
    assert engine.decide(req("x", at=monday_noon), ctx).effect is Effect.DENY
    for name in ("Mars/Olympus", "Europe", "zone.tab"):  # a folder or a data file of the zone database is no zone
        with pytest.raises(PolicyCheckError, match="unknown time zone"):
            PolicyEngine.from_text(f'deny x outside 09:00-17:00 in "{name}".')
    with pytest.raises(PolicyCheckError, match="invalid regular expression"):
        PolicyEngine.from_text('deny x when a matches "(".')


def test_one_user_id_in_two_tenants_has_two_histories_and_two_budgets() -> None:
    """Ids are often unique within a tenant only: globex's u1 neither uses up acme's u1's limit, sum and budget
    nor satisfies an ``after`` for him (nor for a u1 without a tenant)."""
    policy = (
        "allow pay, refund, crm.lookup, crm.export.\n"
        "limit pay to 2 calls per hour per user.\n"
        "deny crm.export unless after crm.lookup for the same user within 1 hour.\n"
        "deny refund when sum of amount over refund in the last 24 hours per user plus amount exceeds 100.\n"
        "deny crm.lookup when accelerator spend of user today exceeds 5.00 USD."
    )
    engine, ctx = PolicyEngine.from_text(policy), InMemoryContext()
    for minutes in (10, 20):
        ctx.record(req("pay", at=NOON - timedelta(minutes=minutes), tenant="globex"))
    ctx.record(req("crm.lookup", at=NOON - timedelta(minutes=5), tenant="globex"))
    ctx.record(req("refund", {"amount": 90}, at=NOON - timedelta(hours=1), tenant="globex"))
    ctx.add_spend(Scope.USER, "u1", 9.0, NOON - timedelta(hours=1), tenant="globex")

    def effects(tenant: str | None) -> list[Effect]:
        calls = [("pay", {}), ("crm.export", {}), ("refund", {"amount": 20}), ("crm.lookup", {})]
        return [engine.decide(req(tool, args, tenant=tenant), ctx).effect for tool, args in calls]

    assert effects("globex") == [Effect.DENY, Effect.ALLOW, Effect.DENY, Effect.DENY]  # globex's u1's own history
    assert effects("acme") == [Effect.ALLOW, Effect.DENY, Effect.ALLOW, Effect.ALLOW]
    assert effects(None) == [Effect.ALLOW, Effect.DENY, Effect.ALLOW, Effect.ALLOW]
    assert engine.decide(req("pay", tenant="globex", user="u2"), ctx).effect is Effect.ALLOW  # per user still


def test_obligations_and_monitor_mode() -> None:
    policy = (
        'allow crm.lookup, files.delete.\nredact email addresses and fields "ssn" in results of crm.*.\n'
        'suppress output of crm.lookup when user has role "intern".\nmonitor deny files.delete.'
    )
    engine = PolicyEngine.from_text(policy)
    d = engine.decide(req("crm.lookup", roles=("intern",)))
    assert d.effect is Effect.ALLOW and d.obligations.suppress_output and d.obligations.redact_fields == ("ssn",)
    assert [p.name for p in d.obligations.redact_patterns] == ["email"]
    monitored = engine.decide(req("files.delete"))
    assert monitored.effect is Effect.ALLOW and monitored.would_effect is Effect.DENY
    assert monitored.monitored[0].text == "monitor deny files.delete."
    assert engine.decide(req("crm.lookup")).would_effect is None


def test_canonicalisation_nfkc_and_numbers() -> None:
    engine = PolicyEngine.from_text('deny a when name is "admin".\ndeny a when n is 1.\nallow a.')
    assert engine.decide(req("a", {"name": "ａｄｍｉｎ", "n": 0})).effect is Effect.DENY  # fullwidth look-alikes
    assert engine.decide(req("a", {"name": "x", "n": 1.0})).effect is Effect.DENY
    assert engine.decide(req("a", {"name": "x", "n": "1"})).effect is Effect.ALLOW
    assert engine.decide(req("a", {"name": "x", "n": True})).effect is Effect.ALLOW
    assert decide('allow a for users with role "admin".', req("a", roles=("ａｄｍｉｎ",))).effect is Effect.ALLOW


def test_deterministic_thread_safe_and_batch() -> None:
    engine = PolicyEngine.from_paths([Path(__file__).parent / "data"])
    ctx = InMemoryContext(
        resolvers={"order": lambda k: {"status": "pending"}}, detectors={"sensitive information": lambda text: 0.1}
    )
    requests = [
        req(
            a,
            {"amount": n * 97 % 1200, "order_id": "o", "recipient": "z@example.com", "customer": {"status": "ok"}},
            ("support",) * (n % 2),
        )
        for n in range(60)
        for a in ("refunds.issue", "cancel_order", "email.send", "crm.x", "files.delete")
    ]
    expected = engine.decide_many(requests, ctx)
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda r: engine.decide(r, ctx), requests * 4))
    assert results == expected * 4
    assert {d.effect for d in expected} >= {Effect.DENY, Effect.ALLOW}


def test_explain_traces_every_condition() -> None:
    engine = PolicyEngine.from_text(REFUNDS, "refunds.policy")
    decision, trace = engine.explain(req("refunds.issue", {"amount": 100}, ("support",)))
    assert decision.effect is Effect.ALLOW
    assert ("amount is at most 500", True) in trace and ("amount is more than 500", False) in trace
    assert ("customer.status is present", False) in trace


def test_could_allow_reads_subjects_permissively_and_unconditional_denies_surely() -> None:
    engine = PolicyEngine.from_text(
        """policy "listing"
allow crm.lookup for users with role "support" when amount is at most 10.
require approval from role "manager" for refunds.issue for users with role "support".
allow admin.reset for user "root".
allow tenant.report for tenant "acme".
deny crm.lookup for users with role "intern".
deny admin.reset for tenant "acme".
monitor deny refunds.issue.
""",
        "l.policy",
    )
    bot = AgentInfo(id="bot")

    def tools(user: str, *roles: str) -> list[str]:
        who = Principal(id=user, roles=frozenset(roles))
        names = ("crm.lookup", "refunds.issue", "admin.reset", "tenant.report", "other.tool")
        return [name for name in names if engine.could_allow(who, bot, name)]

    # conditions on arguments may hold; an approval still counts; the tenant is unknown until the call
    assert tools("ann", "support") == ["crm.lookup", "refunds.issue", "tenant.report"]
    assert tools("ian", "support", "intern") == ["refunds.issue", "tenant.report"]  # surely denied: unconditional
    assert tools("root") == ["admin.reset", "tenant.report"]  # a tenant deny is not sure, a monitor deny not enforced
    assert PolicyEngine.from_text('policy "open"\ndefault allow.\ndeny x.y.\n').could_allow(
        Principal(id="anyone"), bot, "other.tool"
    )


@pytest.mark.parametrize(
    ("left", "right"),
    [
        ({"id": "H1", "date": "d"}, {"date": "d", "id": "H1"}),
        ({"a": {"x": 1, "y": [1, {"p": 2, "q": 3}]}, "b": 2}, {"b": 2.0, "a": {"y": [1.0, {"q": 3, "p": 2}], "x": 1}}),
        ([1, 2], [1.0, 2.0]),
    ],
)
def test_equality_and_membership_are_structural(left: object, right: object) -> None:
    """Reordering an object's keys (at any depth) or writing 1 as 1.0 must not evade a deny."""
    engine = PolicyEngine.from_text("deny a when x is y.\ndeny b when xs contains y.\nallow any tool.")
    assert engine.decide(req("a", {"x": left, "y": right})).effect is Effect.DENY
    assert engine.decide(req("b", {"xs": ["other", left], "y": right})).effect is Effect.DENY
    assert engine.decide(req("a", {"x": left, "y": {"other": right}})).effect is Effect.ALLOW


def test_equality_keeps_types_apart() -> None:
    engine = PolicyEngine.from_text("deny a when x is y.\nallow a.")
    for left, right in [({"n": 1}, {"n": True}), ({"n": 1}, {"n": "1"}), ([None], [0]), ([1, 2], [2, 1])]:
        assert engine.decide(req("a", {"x": left, "y": right})).effect is Effect.ALLOW, (left, right)


def test_decide_and_explain_agree_on_every_matching_deny() -> None:
    engine = PolicyEngine.from_text(
        "deny a when n is more than 1.\ndeny a when n is more than 2.\nlimit a to 5 calls per hour per user.\n"
        "deny a when n is more than 3.\nallow a.\nallow a when n is 0.\nrequire approval for b when n is 1.\n"
        "require approval for b when n is at least 1.\nallow b.\n",
        "t.policy",
    )
    context = InMemoryContext()
    cases = [("a", 0, []), ("a", 2, [1]), ("a", 5, [1, 2, 4]), ("a", None, [1, 2, 4]), ("b", 1, [7, 8])]
    for action, n, lines in cases:
        request = req(action, {} if n is None else {"n": n})
        decision = engine.decide(request, context)
        assert engine.explain(request, context)[0] == decision
        if lines:
            assert [r.line for r in decision.reasons] == lines
    assert [r.line for r in engine.decide(req("a", {"n": 0}), context).reasons] == [5]  # the first allow suffices
    assert engine.decide(req("a", {"n": 0}), context).obligations.rate_limits
    assert not engine.decide(req("a", {"n": 5}), context).obligations.rate_limits  # a deny never reserves


@pytest.mark.parametrize("limit", ["", "limit a to 1 calls per hour per user.\n"])
def test_a_denial_by_several_clean_rules_is_the_one_the_general_path_builds(
    limit: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Clean deny rules alone take a shortcut past ``_Run`` and ``_finish``; its decision is theirs, reasons in
    rule order, also when a rule that fails closed (``m`` missing) or a limit sits among them."""
    text = f"deny a when n is more than 1.\ndeny a when n is more than 2.\ndeny a when m is more than 1.\n{limit}"
    text += "deny a when n is more than 3.\nallow a.\n"
    fast, general = PolicyEngine.from_text(text, "t.policy"), PolicyEngine.from_text(text, "t.policy")

    def finished(bundle: Any, rules: list[Any]) -> Decision:
        run = engine_module._Run(rules)
        return general._finish(bundle, bundle.plan("a"), None, Effect.DENY, run, True)  # type: ignore[arg-type]

    monkeypatch.setattr(general, "_denial", finished)
    context = InMemoryContext()
    context.record(req("a"))
    for args in ({"n": 5, "m": 0}, {"n": 5}, {"n": 3, "m": 2}, {"n": 2, "m": 0}, {"n": 0, "m": 0}, {"n": 9, "m": 9}):
        for facts in (None, context):
            assert fast.decide(req("a", args), facts) == general.decide(req("a", args), facts), (args, facts)
    denial = fast.decide(req("a", {"n": 5, "m": 0}), context)
    assert [r.line for r in denial.reasons] == ([1, 2, 4, 5] if limit else [1, 2, 4])
    assert (denial is fast.decide(req("a", {"n": 5, "m": 0}), context)) is (not limit)  # a limit note: not cached


@pytest.mark.parametrize("default", ["", "default allow.\n"])
def test_a_request_no_rule_decides_is_the_default_the_general_path_builds(
    default: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When no rule matches and there is nothing else to report (no monitors, no obligations), the default
    decision is a cached one built without ``_Run`` or ``_finish``; it is the one they build."""
    engine = PolicyEngine.from_text(default + "deny a when n is more than 1.\nallow a when n is 0.\n", "t.policy")
    bundle = engine.bundle
    run = engine_module._Run()
    run.reasons.append(bundle.default_reason)
    built = engine._finish(bundle, bundle.plan("a"), None, bundle.default, run, False)  # type: ignore[arg-type]
    monkeypatch.setattr(engine_module, "_Run", None)  # the shortcut never gets to allocate one
    decision = engine.decide(req("a", {"n": 1}))
    assert decision == built and decision.effect is bundle.default
    assert decision is engine.decide(req("a", {"n": -1}))
    assert engine.decide(req("a", {"n": 0})).effect is Effect.ALLOW
    assert engine.decide(req("a", {"n": 2})).effect is Effect.DENY


@pytest.mark.parametrize(
    "rule",
    [
        'deny t when today is "{today}".',
        'deny t when today is one of "2020-01-01", "{today}".',
        "deny t when days contains today.",
        'deny t when now is one of "{now}".',
    ],
)
def test_membership_compares_dates_as_is_does(rule: str) -> None:
    """``is one of`` and ``contains`` are ``is`` with each element: a date equals its ISO text there too, so a rule
    that denies ``today is "..."`` is not walked around by listing the day (listed, it allowed)."""
    policy = "default allow.\n" + rule.format(today=NOON.date().isoformat(), now=NOON.isoformat())
    days = {"days": ["2020-01-01", NOON.date().isoformat()]}
    assert decide(policy, req("t", days)).effect is Effect.DENY
    assert decide(policy, req("t", days, at=NOON + timedelta(days=3))).effect is Effect.ALLOW
