"""fmt: canonical, idempotent, and parse(fmt(x)) means the same as x (Hypothesis over generated rules)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentcore.policies import parse
from agentcore.policies.ast import structure
from agentcore.policies.formatter import DEFAULT_WIDTH, format_file

DATA = Path(__file__).parent / "data"
ROOT = Path(__file__).resolve().parents[2]

values = st.sampled_from(
    [
        "amount",
        "a.b.c",
        "args.user",
        "user.dept",
        "agent.team",
        "order(order_id).status",
        "length of items",
        "url host",
        "a plus b",
        "context.tenant",
        "sum of amount over refunds.* in the last 2 hours per user",
        "count of calls to any tool in the last 90 seconds per session",
        "accelerator spend of tenant today",
        '"pii" score of arguments',
        '"tox" score of body',
    ]
)
literals = st.sampled_from(['"x"', '"é \\" q"', "1", "-2.5", "0.00001", "true", "false", "null", "3 USD"])
predicates = st.sampled_from(
    [
        "is {l}",
        "is not {l}",
        "exceeds {l}",
        "= {l}",
        "!= {l}",
        "< {l}",
        ">= {l}",
        "is at most {l}",
        "is between {l} and {l}",
        "is one of {l}, {l}",
        "contains {l}",
        "does not start with {l}",
        'matches "^a.*"',
        "is missing",
        "is present",
    ]
)
atoms = st.one_of(
    st.builds(lambda v, p, lit: f"{v} {p.format(l=lit)}", values, predicates, literals),
    st.just('user has role "r"'),
    st.just('outside 22:00-06:00 on saturday, sunday in "Asia/Tokyo"'),
    st.just("after crm.export for the same user within 1.5 hours"),
)
conditions = st.recursive(
    atoms,
    lambda inner: st.one_of(
        st.builds(lambda a, b: f"{a} and {b}", inner, inner),
        st.builds(lambda a, b: f"{a} or {b}", inner, inner),
        st.builds(lambda a: f"not {a}", inner),
        st.builds(lambda a: f"({a})", inner),
    ),
    max_leaves=4,
)
heads = st.sampled_from(
    [
        "allow a.b",
        "deny any tool",
        "deny any tool in crm.*, x",
        'require approval from role "m" for r',
        "require approval for r",
        "limit p to 3 calls per 5 minutes per agent",
        "suppress output of s",
        'redact email addresses and fields "a", "b" and pattern "\\\\d+" as "n" in results of c',
        'rule "named": monitor deny f',
    ]
)


def roundtrip(text: str, width: int = DEFAULT_WIDTH) -> str:
    first = parse(text, "t.policy")
    formatted = format_file(first, width)
    second = parse(formatted, "t.policy")
    assert structure(second) == structure(first), formatted
    assert format_file(second, width) == formatted
    return formatted


@settings(max_examples=200, deadline=None)
@given(
    heads,
    st.sampled_from(["", ' for users with role "s"', ' for agent "a" and tenant "t"']),
    st.lists(st.tuples(st.sampled_from(["when", "unless"]), conditions), max_size=2),
)
def test_fmt_roundtrip_generated(head: str, subject: str, clauses: list[tuple[str, str]]) -> None:
    body = "".join(f" {mode} {cond}" for mode, cond in clauses)
    roundtrip(f'# header comment\npolicy "p" version 2 owner "o"\ndefault allow.\n{head}{subject}{body}.\n# trailing\n')


def test_fmt_feature_file_and_comments() -> None:
    text = (DATA / "features.policy").read_text()
    roundtrip(text)
    formatted = format_file(parse("# keep me\ndeny   x when a exceeds 5 .\n\n\n# and me\nallow  y.", "t.policy"))
    assert formatted == "# keep me\ndeny x when a is more than 5.\n\n# and me\nallow y.\n"


rules = st.builds(
    lambda head, clauses: head + "".join(f" {mode} {cond}" for mode, cond in clauses) + ".",
    heads.filter(lambda head: not head.startswith("rule ")),
    st.lists(st.tuples(st.sampled_from(["when", "unless"]), conditions), max_size=3),
)
separators = st.sampled_from(["\n", "\n\n", "\n\n\n", " ", "\n# note\n", "\n\n# a\n# b\n", " # after\n", "\n    "])


preambles = st.sampled_from(
    ["", "# top\n", 'policy "p" version 2 owner "o"\n', '# top\n\npolicy "p"\n  description "d"\n\ndefault allow.\n\n']
)


@settings(max_examples=60, deadline=None)
@given(preambles, st.lists(st.tuples(rules, separators), min_size=1, max_size=5), st.integers(20, 140))
def test_fmt_roundtrip_generated_bundles(preamble: str, statements: list[tuple[str, str]], width: int) -> None:
    """Whole bundles (header, default, blank lines, comments between, after and inside rules) at any width."""
    text = preamble + "".join(rule + separator for rule, separator in statements)
    formatted = roundtrip(text, width)
    assert "\n\n\n" not in formatted and not formatted.startswith("\n")
    comment_lines = [line.strip() for line in text.splitlines() if "#" in line]
    assert [line for line in formatted.splitlines() if line.startswith("#")] == [
        line[line.index("#") :] for line in comment_lines
    ]


def test_fmt_keeps_layout_and_wraps_at_clause_boundaries() -> None:
    text = (
        "# about refunds\n"
        'allow refunds.issue for users with role "support" when amount is at most 500 and customer.tier is one of '
        '"gold", "silver", "bronze", "platinum", "diamond" unless customer.status is "flagged" or amount is '
        "more than 10000. # trailing\n\n\n"
        "deny x.\n"
        "deny y # inside\n"
        "    when a is 1.\n"
    )
    assert roundtrip(text) == (
        "# about refunds\n"
        "# trailing\n"
        "allow refunds.issue\n"
        '    for users with role "support"\n'
        "    when amount is at most 500\n"
        '        and customer.tier is one of "gold", "silver", "bronze", "platinum", "diamond"\n'
        '    unless customer.status is "flagged" or amount is more than 10000.\n'
        "\n"
        "deny x.\n"
        "# inside\n"
        "deny y when a is 1.\n"
    )
    narrow = roundtrip(text, 40)
    assert max(map(len, narrow.splitlines())) <= 40, narrow
    assert "    when amount is at most 500\n        and customer.tier is one of" in narrow


SHIPPED = sorted(
    [
        *(ROOT / "agentcore" / "demo" / "policies").glob("*.policy"),
        *(ROOT / "examples").rglob("*.policy"),
        *(ROOT / "examples").rglob("*.schema"),
        *DATA.glob("*.policy"),
    ]
)


@pytest.mark.parametrize("path", SHIPPED, ids=lambda path: str(path.relative_to(ROOT)))
def test_shipped_bundles_are_formatted(path: Path) -> None:
    """The bundles we ship pass ``agentcore policy fmt --check`` (and round-trip)."""
    text = path.read_text(encoding="utf-8")
    assert roundtrip(text) == text
