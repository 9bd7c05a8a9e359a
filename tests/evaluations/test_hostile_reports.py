"""Reports never lie: trace text (ids, explanations quoting the agent) that is hostile to a report's format stays
literal text in it, and the JUnit file stays one a real XML parser reads, so CI still sees every failure."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ElementTree

from agentcore.evaluations.outcome import Outcome, summarise
from agentcore.evaluations.reports import render_html, render_json, render_junit, render_markdown
from agentcore.evaluations.result import EvaluatorResult, Level
from agentcore.evaluations.suite import Gate

HOSTILE = (
    '\x1b[2J\x00\x08\ufffe ]]></failure></testcase><testcase name="forged"/> <script>alert(1)</script>'
    '<a href="javascript:alert(1)">x</a> \' onmouseover="alert(1)" '
    "| x |\r| Evil | trace | 1 | 100% | 1.000 | 1.000 | 100% |  | ✅ |\n"
    "## Evaluation: t — ✅ passed\u2028[ok](javascript:x)"
)


def _outcome() -> Outcome:
    failing = EvaluatorResult(
        evaluator="Custom.Rule", level=Level.TRACE, target_id=f"t{HOSTILE}", session_id="s", score=0.0,
        raw_score=0.0, label="No", passed=False, explanation=HOSTILE,
    )  # fmt: skip
    return summarise("suite", 1, [failing], {"Custom.Rule": Gate(min_score=1.0)})


def test_junit_with_control_characters_still_parses_and_fails() -> None:
    root = ElementTree.fromstring(render_junit(_outcome()))  # raised ParseError: CI would show no failure at all
    assert root.get("failures") == "2" and len(root.findall(".//failure")) == 2
    escaped = f"s/t{HOSTILE}"
    for char in "\x1b\x00\x08\ufffe":
        escaped = escaped.replace(char, ascii(char)[1:-1])
    assert [case.get("name") for case in root.iter("testcase")] == [escaped, "min_score"]
    assert "\\x1b[2J" in (root.find(".//failure").text or "")  # type: ignore[union-attr]


def test_markdown_keeps_hostile_text_inside_its_cell() -> None:
    markdown = render_markdown(_outcome())
    lines = markdown.splitlines()
    assert lines[0] == "## Evaluation: suite — ❌ failed"
    assert [line for line in lines if line.startswith("#")] == [lines[0], "### Failing results (1)"]
    rows = [line for line in lines if line.startswith("|")]
    assert len(rows) == 6, rows  # two tables of a header, a rule and one row each: no forged row
    failure = rows[-1]
    assert len(re.findall(r"(?<!\\)\|", failure)) == 5, "an unescaped pipe would add a cell"
    assert "\r" not in markdown and "\u2028" not in markdown and "\x1b" not in markdown
    assert "\\<script\\>" in failure and not re.search(r"(?<!\\)(<script|\]\(javascript)", markdown)


def test_html_and_json_stay_inert_and_valid() -> None:
    outcome = _outcome()
    page = render_html(outcome)
    assert "<script" not in page and 'href="javascript' not in page and 'name="forged"' not in page
    assert 'onmouseover="alert' not in page
    assert json.loads(render_json(outcome))["results"][0]["explanation"] == HOSTILE
