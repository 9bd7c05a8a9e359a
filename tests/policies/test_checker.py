"""Checker: schema findings with did-you-mean; exact interval/set reasoning for dead, shadowed, conflicting rules."""

from __future__ import annotations

import pytest

from agentcore.policies import parse
from agentcore.policies.checker import Finding, check
from agentcore.policies.regions import Constraint, contains, is_empty, rule_region, value_key
from agentcore.policies.schemas import load_tools

TOOLS = load_tools([
    {"type": "function", "function": {"name": "refunds.issue", "parameters": {"type": "object", "properties": {
        "amount": {"type": "number", "minimum": 0, "maximum": 10000},
        "reason": {"type": "string", "enum": ["damaged", "late"]},
        "customer": {"type": "object", "properties": {"status": {"type": "string"}}},
        "items": {"type": "array", "items": {"type": "string"}}}}}},
    {"name": "crm.lookup", "inputSchema": {"type": "object", "properties": {"email": {"type": "string"}}}},
    {"name": "crm.export", "parameters": {"type": "object", "properties": {}}},
])  # fmt: skip


def findings(text: str, tools: bool = True) -> list[Finding]:
    return check([parse(text, "t.policy")], TOOLS if tools else None)


def codes(text: str, tools: bool = True) -> list[str]:
    return [f.code for f in findings(text, tools)]


def test_clean_bundle_has_no_findings() -> None:
    assert findings('allow refunds.issue when amount is at most 500 and reason is "late".\nallow crm.*.') == []


@pytest.mark.parametrize(
    ("text", "code", "help"),
    [
        ("allow refunds.isue.", "unknown-tool", "did you mean `refunds.issue`?"),
        ("allow refunds.issue when amont is at most 5.", "unknown-argument", "did you mean `amount`?"),
        ('allow refunds.issue when customer.stat is "x".', "unknown-argument", "did you mean `status`?"),
        ("allow refunds.issue when items is more than 3.", "type-mismatch", ""),
        ('allow refunds.issue when amount is "500".', "type-mismatch", ""),
        ("allow crm.lookup when email starts with 5.", "type-mismatch", ""),
        ("allow billing.*.", "unmatched-pattern", ""),
        ('allow refunds.issue when reason is "lost".', "excluded-by-schema", ""),
        ("allow refunds.issue when amount is more than 20000.", "excluded-by-schema", ""),
    ],
)
def test_schema_findings(text: str, code: str, help: str) -> None:
    finding = next(f for f in findings(text) if f.code == code)
    assert help in finding.help and finding.line == 1


@pytest.mark.parametrize(
    "condition",
    [
        "amount is more than 10 and amount is less than 5",
        "amount is at least 5 and amount is less than 5",
        'reason is "late" and reason is "damaged"',
        'reason is one of "a", "b" and reason is not one of "a", "b"',
        "amount is between 1 and 3 and not amount is at most 3",
        "amount is 4 and amount is not 4",
    ],
)
def test_impossible_conditions(condition: str) -> None:
    assert codes(f"allow x when {condition}.", tools=False) == ["impossible-condition"]


def test_possible_edge_conditions_are_not_reported() -> None:
    for condition in ("amount is at least 5 and amount is at most 5", 'reason is "a" or reason is "b"',
                      "amount is more than 1 and amount is not 2", "amount matches \"x\" and amount is 3"):  # fmt: skip
        assert codes(f"allow x when {condition}.", tools=False) == []


def test_allow_and_deny_everything() -> None:
    assert codes("allow any tool.", tools=False) == ["allows-everything"]
    assert codes("deny any tool.", tools=False) == ["denies-everything"]
    assert codes("monitor deny any tool.", tools=False) == []


def test_shadowed_and_conflicting_rules() -> None:
    shadow = findings(
        "deny refunds.issue when amount is more than 100.\nallow refunds.issue when amount is at least 500."
    )
    assert [(f.code, f.line) for f in shadow] == [("shadowed", 2)] and "refunds.issue" not in shadow[0].message
    assert codes('deny crm.*.\nallow crm.lookup for users with role "a" when email ends with "@x".', tools=False) == [
        "shadowed"
    ]
    duplicate = findings('allow crm.lookup when email is "a".\nallow crm.lookup when email is one of "a", "b".')
    assert [(f.code, f.line) for f in duplicate] == [("shadowed", 1)]
    assert (
        codes("deny refunds.issue when amount is more than 100.\nallow refunds.issue when amount is at most 100.") == []
    )
    overlap = findings(
        "deny refunds.issue when amount is more than 100.\nallow refunds.issue when amount is at most 500."
    )
    assert [f.code for f in overlap] == ["conflict"]


def test_region_reasoning_is_exact() -> None:
    narrow = rule_region(parse('allow x when a is between 2 and 3 and b is "k".').rules[0])
    wide = rule_region(parse("allow x when a is at least 2 and a is less than 4.").rules[0])
    assert narrow is not None and wide is not None and contains(wide, narrow) and not contains(narrow, wide)
    assert rule_region(parse('allow x when a matches "y".').rules[0]) is None
    open_point = Constraint(numeric=True, lo=1, lo_open=True, hi=1)
    assert open_point.empty() and not Constraint(numeric=True, lo=1, hi=1).empty()
    assert is_empty({("args", "a"): Constraint(allowed=frozenset({value_key("x")}), numeric=True)})


def test_similar_tool_names_without_schemas() -> None:
    text = "allow refunds.issue when amount is at most 5.\ndeny refunds.issue when amount is 3.\nallow refunds.isue."
    (finding,) = [f for f in findings(text, tools=False) if f.code == "similar-tool-name"]
    assert finding.line == 3 and "did you mean `refunds.issue`?" in finding.help
    assert [f for f in findings("allow crm.lookup.\nallow crm.export.", tools=False)] == []
