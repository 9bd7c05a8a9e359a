"""Policy test files: lookups stubbed by text keys (``entities``) and by object or several keys (``facts``)."""

from __future__ import annotations

from pathlib import Path

from agentcore import Effect, PolicyEngine
from agentcore.policies.testing import context_for, load_tests, run_tests

POLICY = """
deny hotels.book when hotel(stay).status is "closed".
deny orders.cancel when order(order_id).status is not "pending".
allow any tool.
"""

TESTS = """
[entities.order."7"]
status = "pending"

[entities.flight."LH2|2026-12-01"]
status = "cancelled"

[[facts]]
entity = "hotel"
key = { id = "H1", date = "2026-12-01" }
value = { status = "closed" }

[[facts]]
entity = "hotel"
key = { id = "H2", date = "2026-12-01" }
value = { status = "open" }

[[facts]]
entity = "flight"
key = ["LH1", "2026-12-01"]
value = { status = "on time" }

[[case]]
name = "closed hotel, keys in another order"
action = "hotels.book"
args = { stay = { date = "2026-12-01", id = "H1" } }
expect = "deny"

[[case]]
name = "open hotel"
action = "hotels.book"
args = { stay = { date = "2026-12-01", id = "H2" } }
expect = "allow"

[[case]]
name = "a case's own facts win over the file's"
action = "hotels.book"
args = { stay = { id = "H2", date = "2026-12-01" } }
expect = "deny"
facts = [{ entity = "hotel", key = { id = "H2", date = "2026-12-01" }, value = { status = "closed" } }]

[[case]]
name = "unknown hotel fails closed"
action = "hotels.book"
args = { stay = { id = "H3", date = "2026-12-01" } }
expect = "deny"

[[case]]
name = "text keys still work, a number argument included"
action = "orders.cancel"
args = { order_id = 7 }
expect = "allow"
"""


def test_facts_stub_lookups_keyed_by_objects(tmp_path: Path) -> None:
    (tmp_path / "t.tests.toml").write_text(TESTS)
    results = run_tests(PolicyEngine.from_text(POLICY, "t.policy"), [tmp_path / "t.tests.toml"])
    assert [(r.name, r.passed, r.message) for r in results if not r.passed] == []
    assert [r.decision.effect for r in results] == [Effect.DENY, Effect.ALLOW, Effect.DENY, Effect.DENY, Effect.ALLOW]


def test_facts_stub_lookups_keyed_by_several_values(tmp_path: Path) -> None:
    (tmp_path / "t.tests.toml").write_text(TESTS)
    tests = load_tests(tmp_path / "t.tests.toml")
    context = context_for(tests, tests.case[0])
    for key in (("LH1", "2026-12-01"), ["LH1", "2026-12-01"]):
        assert context.resolve("flight", key) == {"status": "on time"}
    loader = context.resolvers["flight"]  # a loader may also get one argument per key
    assert loader("LH1", "2026-12-01") == {"status": "on time"} and loader("LH2", "2026-12-01")["status"] == "cancelled"
    assert context.resolve("flight", ("LH2", "2026-12-01")) == {"status": "cancelled"}  # text keys joined by |
    assert context.resolve("flight", ("2026-12-01", "LH1")) is None  # several keys are positional
    assert context.resolve("hotel", {"date": "2026-12-01", "id": "H1"}) == {"status": "closed"}
    assert context.resolve("order", 7) == {"status": "pending"}
    assert context.resolve("order", ["7"]) is None  # a list is never read as a text key


def test_the_documented_facts_example_runs(tmp_path: Path) -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "policy-language.md").read_text()
    (example,) = [block for block in doc.split("```toml\n")[1:] if block.startswith("[[facts]]")]
    (tmp_path / "doc.tests.toml").write_text(example.split("```")[0])
    (result,) = run_tests(PolicyEngine.from_text(POLICY, "t.policy"), [tmp_path / "doc.tests.toml"])
    assert result.passed, result.message


def test_past_spend_belongs_to_the_scope_it_names(tmp_path: Path) -> None:
    """``spend = [{ scope = "agent", ... }]`` is the case's agent's spend (it was filed under the session id)."""
    (tmp_path / "s.tests.toml").write_text(
        '[[case]]\nname = "agent over budget"\naction = "crm.lookup"\nexpect = "deny"\n'
        'spend = [{ scope = "agent", usd = 6.0 }]\n'
        '[[case]]\nname = "tenant over budget"\naction = "crm.lookup"\nexpect = "deny"\n'
        'spend = [{ scope = "tenant", usd = 6.0 }]\n'
        '[[case]]\nname = "another scope\'s spend"\naction = "crm.lookup"\nexpect = "allow"\n'
        'spend = [{ scope = "user", usd = 6.0 }]\n'
    )
    policy = (
        "allow any tool.\ndeny any tool when accelerator spend of agent today exceeds 5.00 USD.\n"
        "deny any tool when accelerator spend of tenant today exceeds 5.00 USD."
    )
    results = run_tests(PolicyEngine.from_text(policy, "s.policy"), [tmp_path / "s.tests.toml"])
    assert [(r.name, r.passed) for r in results] == [
        ("agent over budget", True),
        ("tenant over budget", True),
        ("another scope's spend", True),
    ]
