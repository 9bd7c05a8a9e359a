"""Checker: schema findings with did-you-mean; exact interval/set reasoning for dead, shadowed, conflicting rules."""

from __future__ import annotations

import pytest

from agentcore.policies import parse
from agentcore.policies.ast import structure
from agentcore.policies.checker import Finding, check
from agentcore.policies.formatter import format_file
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


# ---- bounds written once: `is more than 5 and less than 2` --------------------------------------------------------
@pytest.mark.parametrize(
    ("short", "long"),
    [
        ("length of attendees is more than 5 and less than 2",
         "length of attendees is more than 5 and length of attendees is less than 2"),
        ("amount is at least 5 and at most 10 and b is 2", "amount is at least 5 and amount is at most 10 and b is 2"),
        ("amount > 5 and < 2 or x is 1", "(amount > 5 and amount < 2) or x is 1"),
        ("amount is more than 5 and is less than 9", "amount is more than 5 and amount is less than 9"),
        ("amount is between 1 and 3 and greater than 2", "amount is between 1 and 3 and amount > 2"),
        ("a is more than 1 and\n    less than 2", "a is more than 1 and a is less than 2"),
    ],
)  # fmt: skip
def test_further_bounds_on_one_value_mean_the_comparisons_written_out(short: str, long: str) -> None:
    assert flat(structure(parse(f"deny t when {short}."))) == flat(structure(parse(f"deny t when {long}.")))
    formatted = format_file(parse(f"deny t when {short}."))
    assert flat(structure(parse(formatted))) == flat(structure(parse(f"deny t when {long}.")))
    assert formatted.split().count("and") == short.split().count("and")  # fmt keeps the bounds written once


def flat(data: object) -> object:
    """Structure with nested conjunctions merged (a chain of bounds is one node inside a larger `and`)."""
    if isinstance(data, list):
        return [flat(item) for item in data]
    if not isinstance(data, dict):
        return data
    merged = {key: flat(value) for key, value in data.items()}
    if merged.get("kind") == "and":
        merged["items"] = [p for i in merged["items"] for p in (i["items"] if i.get("kind") == "and" else [i])]
    return merged


def test_and_before_a_new_comparison_stays_a_new_comparison() -> None:
    cond = parse("deny t when a is 1 and more is 2 and at is 3.").rules[0].clauses[0].cond
    assert [c.left.parts for c in cond.items] == [("a",), ("more",), ("at",)]  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("deny t when length of attendees is more than 5 and less than 2.", (1, 13)),
        ("deny t when a is 1 or (b is more than 3 and at most 2).", (1, 24)),
        ("deny t when any i in items has i.qty is more than 5 and i.qty is less than 3.", (1, 32)),
        ('deny t when a is 1.\ndefine "odd" as\n  x is 1 and x is 2.', (3, 3)),
        ("deny t when length of xs is less than 0.", (1, 1)),
        ('deny t unless status is "a" and less than 3.', (1, 15)),
    ],
)
def test_unsatisfiable_conditions_are_located(text: str, where: tuple[int, int]) -> None:
    found = [(f.code, f.file, f.line, f.column) for f in findings(text, tools=False)]
    assert found == [("impossible-condition", "t.policy", *where)]


def test_satisfiable_bounds_and_separate_items_are_not_reported() -> None:
    assert findings("deny t when amount is more than 2 and less than 5.", tools=False) == []
    two_items = "deny t when any i in xs has (any i in ys has i is 1) and i is 2."
    assert findings(two_items, tools=False) == []


PAIR_TARGETS = ["any tool", "crm.*", "crm.lookup", "crm.export", "refunds.issue", "crm.lookup, refunds.issue", "re*"]
PAIR_CONDITIONS = ["", " when amount is more than 100", " when amount is at most 500", " when amount is at least 50"]


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("tools", [True, False])
def test_rule_pairs_are_checked_only_where_targets_can_overlap(
    seed: int, tools: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The target index (a bundle of many tools is not checked across all pairs) finds what all pairs find."""
    import random

    from agentcore.policies import checker

    rng = random.Random(seed)
    lines = []
    for _ in range(40):
        target, condition = rng.choice(PAIR_TARGETS), rng.choice(PAIR_CONDITIONS)
        kind = rng.choice(["allow", "deny", 'require approval from role "m" for'])
        lines.append(f"{kind} {target}{condition}.")
    text = "\n".join(lines)
    indexed = findings(text, tools)
    monkeypatch.setattr(checker, "_overlapping", lambda active: lambda rule: list(range(len(active))))
    assert indexed == findings(text, tools)
    assert {"shadowed", "conflict"} <= {f.code for f in indexed}
