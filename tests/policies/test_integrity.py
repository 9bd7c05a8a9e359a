"""Policy input that once hung or crashed the toolchain: backtracking regexes, huge durations, lone surrogates,
look-alike identities. Each is a located error (``policy check`` exits 2) or a correct, prompt decision."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agentcore.cli import app
from agentcore.policies import Effect, PolicyCheckError, PolicyEngine, PolicySyntaxError, Request
from agentcore.text import canonical_text, is_canonical_text

RUNNER = CliRunner()


def _decide(engine: PolicyEngine, **args: object) -> Effect:
    return engine.decide(Request(principal={"id": "u"}, action="t", args=args)).effect  # type: ignore[arg-type]


def test_a_catastrophic_pattern_decides_long_input_correctly() -> None:
    """``^(\\w+\\s?)*$`` backtracks exponentially in Python's ``re``: 10,000 characters would never finish."""
    engine = PolicyEngine.from_text('allow t when text matches "^(\\\\w+\\\\s?)*$".')
    assert _decide(engine, text="a" * 10_000 + "!") is Effect.DENY  # no match: the backtracking worst case
    assert _decide(engine, text="ab cd " * 1_666) is Effect.ALLOW
    redacting = PolicyEngine.from_text('allow t.\nredact pattern "(a+)+$" in results of t.')
    assert redacting.decide(Request(principal={"id": "u"}, action="t")).effect is Effect.ALLOW


@pytest.mark.parametrize(
    ("policy", "why"),
    [
        ('deny t when text matches "^(a)\\\\1$".', "invalid escape sequence"),  # a backreference
        ('deny t when text matches "(?=a)b".', "invalid perl operator"),  # lookahead
        ('allow t.\nredact pattern "(?<!x)y" in results of t.', "invalid perl operator"),
    ],
)
def test_patterns_re2_cannot_run_are_refused_with_the_location_and_why(policy: str, why: str) -> None:
    with pytest.raises(PolicyCheckError, match=why) as error:
        PolicyEngine.from_text(policy, "p.policy")
    problem = error.value.problems[0]
    assert problem.file == "p.policy" and problem.line >= 1 and problem.column >= 1
    assert "RE2" in problem.message


def test_a_duration_too_long_for_datetime_is_a_located_syntax_error() -> None:
    text = "deny a after b in the same session within 1999999999999999999 hours."
    with pytest.raises(PolicySyntaxError, match="at most 100 years") as error:
        PolicyEngine.from_text(text, "p.policy")
    assert (error.value.problems[0].line, error.value.problems[0].column) == (1, 43)


def test_lone_surrogates_are_located_syntax_errors() -> None:
    with pytest.raises(PolicySyntaxError, match="lone surrogate") as error:
        PolicyEngine.from_text('allow t.\nallow u when url is "x\ud800".', "p.policy")
    assert (error.value.problems[0].line, error.value.problems[0].column) == (2, 23)
    with pytest.raises(PolicySyntaxError, match="lone surrogate escape"):
        PolicyEngine.from_text('allow u when url is "\\ud800".', "p.policy")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"deny a after b in the same session within 1999999999999999999 hours.\n", "at most 100 years"),
        (b'allow t.\nallow u when url is "\xed\xa0\x80".\n', "byte 0xED is not UTF-8"),
        (b'allow u when url is "\\ud800".\n', "lone surrogate"),
        (b'deny t when text matches "^(a)\\\\1$".\n', "RE2"),
    ],
)
def test_policy_check_exits_2_with_file_line_column(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "p.policy"
    path.write_bytes(content)
    result = RUNNER.invoke(app, ["policy", "check", str(path)])
    assert result.exit_code == 2, result.output
    assert f"{path}:" in result.output and message in result.output and "Traceback" not in result.output


def test_look_alike_identities_and_literals_are_one_spelling() -> None:
    engine = PolicyEngine.from_text('allow t.\ndeny t for user "mallory".\ndeny t for user "ｅｖｅ".')
    for user in ("mallory", "ｍａｌｌｏｒｙ", "mallory\u200b", "mal\u00adlory", "eve"):
        assert engine.decide(Request(principal={"id": user}, action="t")).effect is Effect.DENY, user
    assert engine.decide(Request(principal={"id": "alice"}, action="t")).effect is Effect.ALLOW


def test_a_look_alike_approver_role_names_the_canonical_role() -> None:
    engine = PolicyEngine.from_text('require approval from role "ｍａｎａｇｅｒ\u200b" for t.')
    decision = engine.decide(Request(principal={"id": "bob"}, action="t"))
    assert decision.effect is Effect.NEEDS_APPROVAL and decision.obligations.approver_roles == ("manager",)


@pytest.mark.parametrize("condition", ["", " when n is present"])
@pytest.mark.parametrize(
    ("subject", "caller"),
    [
        ('users with role "ａｄｍｉｎ"', {"principal": {"id": "bob", "roles": ["admin"]}}),
        ('users with role "admin\u200b"', {"principal": {"id": "bob", "roles": ["admin"]}}),
        ('user "ｍａｌｌｏｒｙ"', {"principal": {"id": "mallory"}}),
        ('agent "bot\u00ad1"', {"principal": {"id": "bob"}, "agent": {"id": "bot1"}}),
    ],
)
def test_a_look_alike_subject_literal_denies_alone_and_with_a_condition(
    subject: str, caller: dict[str, Any], condition: str
) -> None:
    """A lone subject with a condition is compiled inline: it must compare the canonical spelling too (a raw
    comparison let "ａｄｍｉｎ" with a condition miss the canonical role "admin": a false allow)."""
    engine = PolicyEngine.from_text(f"allow t.\ndeny t for {subject}{condition}.")
    request = Request(action="t", args={"n": 1}, **caller)
    assert engine.decide(request).effect is Effect.DENY
    if not condition:  # an unconditional deny that surely applies takes the tool off the caller's list
        assert not engine.could_allow(request.principal, request.agent, "t")


@pytest.mark.parametrize(
    ("raw", "canonical"),
    [
        ("ｍａｌｌｏｒｙ", "mallory"),
        ("a\u200bb\u200c\u200d\u2060\ufeff\u00ad", "ab"),
        ("\u202eevil\u202c\u2066x\u2069", "evilx"),
        ("e\u0301", "é"),
        ("e\u200b\u0301", "é"),  # removing the invisible character lets the accent compose
        ("x\ufe0f\U000e0041", "x"),  # variation selector, tag character
        ("\uffa0", ""),  # NFKC turns it into U+3164 HANGUL FILLER, itself invisible
        ("plain ascii", "plain ascii"),
    ],
)
def test_canonical_text(raw: str, canonical: str) -> None:
    assert canonical_text(raw) == canonical
    assert canonical_text(canonical) == canonical and is_canonical_text(canonical)
    assert is_canonical_text(raw) == (raw == canonical)
