"""fmt: canonical, idempotent, and parse(fmt(x)) means the same as x (Hypothesis over generated rules)."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from agentcore.policies import parse
from agentcore.policies.ast import structure
from agentcore.policies.formatter import format_file

DATA = Path(__file__).parent / "data"

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


def roundtrip(text: str) -> None:
    first = parse(text, "t.policy")
    formatted = format_file(first)
    second = parse(formatted, "t.policy")
    assert structure(second) == structure(first), formatted
    assert format_file(second) == formatted


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
    assert formatted == "# keep me\ndeny x when a is more than 5.\n# and me\nallow y.\n"
