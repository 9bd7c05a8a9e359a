"""The expense-reimbursement example: its policy tests pass, and every rule has an allowed and a refused case."""

from __future__ import annotations

from pathlib import Path

from agentcore import Effect, PolicyEngine
from agentcore.policies.checker import check
from agentcore.policies.testing import load_tests, run_tests

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "expenses"
POLICIES = EXAMPLE / "policies"


def test_every_case_passes() -> None:
    engine = PolicyEngine.from_paths([POLICIES])
    results = run_tests(engine, sorted(POLICIES.glob("*.tests.toml")))
    assert results and [r.message for r in results if not r.passed] == []


def test_every_rule_has_an_allowed_and_a_refused_case() -> None:
    engine = PolicyEngine.from_paths([POLICIES])
    cases = load_tests(POLICIES / "expenses.tests.toml").case
    for rule in (r for f in engine.files for r in f.rules if r.explicit_id):
        mine = [case for case in cases if case.name.startswith(f"{rule.id}:")]
        assert any(c.expect is Effect.ALLOW for c in mine), rule.id
        assert any(c.expect is not Effect.ALLOW for c in mine), rule.id


def test_written_from_the_policy_document_and_checks_clean() -> None:
    engine = PolicyEngine.from_paths([POLICIES])
    document = (EXAMPLE / "POLICY.md").read_text()
    assert all(f"[`{r.id}`]" in document for f in engine.files for r in f.rules if r.explicit_id)
    assert check(engine.files) == []
