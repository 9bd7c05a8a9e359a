"""JUnit XML: one testcase per evaluator x target, plus one per gate, failing exactly when the run's gates fail.

Follows the schema CI systems read (Jenkins' junit-10.xsd / GitLab / GitHub test reporters): ``testsuites`` >
``testsuite`` (name, tests, failures, errors, skipped, time, ``properties``) > ``testcase`` (classname, name,
time) > ``failure`` | ``skipped`` | ``system-out``. A result that is below its threshold but breaks no gate is
not a ``failure`` (CI would fail a build that the exit code passed): its verdict goes to ``system-out``. Only a
result under a ``min_score`` gate and a failed gate are failures; not-applicable results are ``skipped``.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ElementTree

from agentcore.evaluations.outcome import EvaluatorSummary, Outcome
from agentcore.evaluations.result import EvaluatorResult

#: what XML 1.0 cannot hold, even escaped: one such character (an ANSI escape in a trace) and a CI's parser rejects
#: the whole file, so it shows no failure at all
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _xml_text(text: str) -> str:
    """``text`` with each character XML cannot hold written as its Python escape (``\\x1b``)."""
    return _NOT_XML.sub(lambda match: ascii(match.group())[1:-1], text)


def _make_xml_safe(root: ElementTree.Element) -> None:
    for element in root.iter():
        element.text = _xml_text(element.text) if element.text else element.text
        for name, value in element.attrib.items():
            element.set(name, _xml_text(value))


def _seconds(result: EvaluatorResult) -> float:
    """Measured CPU time of the result's model work (absent in reports read back from JSON)."""
    return sum(usage.cpu_seconds or 0.0 for usage in result.usage)


def _properties(suite: ElementTree.Element, summary: EvaluatorSummary) -> None:
    properties = ElementTree.SubElement(suite, "properties")
    for name, value in (
        ("level", summary.level.value),
        ("judged", str(summary.count)),
        ("not_applicable", str(summary.not_applicable)),
        ("coverage", f"{summary.coverage:g}"),
        ("mean", f"{summary.mean:g}"),
        ("pass_rate", f"{summary.pass_rate:g}"),
        ("gated", "true" if summary.checks else "false"),
    ):
        ElementTree.SubElement(properties, "property", name=name, value=value)


def _result_case(suite: ElementTree.Element, summary: EvaluatorSummary, result: EvaluatorResult) -> tuple[int, int]:
    """One result's testcase; returns (failures, skipped) it adds."""
    case = ElementTree.SubElement(
        suite, "testcase", classname=summary.evaluator, name=result.qualified_id, time=f"{_seconds(result):.6f}"
    )
    verdict = f"{result.label} ({result.score:g}): {result.explanation}"
    if not result.judged:
        ElementTree.SubElement(case, "skipped", message=result.explanation)
        return 0, 1
    min_score = next((check.threshold for check in summary.checks if check.name == "min_score"), None)
    if min_score is not None and result.score < min_score:
        failure = ElementTree.SubElement(
            case, "failure", message=f"{result.label} ({result.score:g}) < min_score {min_score:g}", type="MinScore"
        )
        failure.text = result.explanation
        return 1, 0
    if not result.passed:
        ElementTree.SubElement(case, "system-out").text = verdict
    return 0, 0


def render_junit(outcome: Outcome) -> str:
    root = ElementTree.Element("testsuites", name=outcome.suite)
    total = failed = skipped = 0
    seconds = 0.0
    for summary in outcome.summaries:
        results = [result for result in outcome.results if result.evaluator == summary.evaluator]
        suite_seconds = sum(_seconds(result) for result in results)
        suite = ElementTree.SubElement(root, "testsuite", name=summary.evaluator, errors="0")
        _properties(suite, summary)
        failures = skips = 0
        for result in results:
            failure, skip = _result_case(suite, summary, result)
            failures, skips = failures + failure, skips + skip
        for check in summary.checks:
            case = ElementTree.SubElement(
                suite, "testcase", classname=f"{summary.evaluator}.gates", name=check.name, time="0"
            )
            if not check.passed:
                failures += 1
                gate = ElementTree.SubElement(
                    case, "failure", message=f"{check.name}: {check.actual:g} vs {check.threshold:g}", type="Gate"
                )
                gate.text = f"{summary.evaluator} {check.name} threshold {check.threshold:g}, actual {check.actual:g}"
        cases = len(results) + len(summary.checks)
        suite.set("tests", str(cases))
        suite.set("failures", str(failures))
        suite.set("skipped", str(skips))
        suite.set("time", f"{suite_seconds:.6f}")
        total, failed, skipped, seconds = total + cases, failed + failures, skipped + skips, seconds + suite_seconds
    root.set("tests", str(total))
    root.set("failures", str(failed))
    root.set("errors", "0")
    root.set("skipped", str(skipped))
    root.set("time", f"{seconds:.6f}")
    _make_xml_safe(root)
    ElementTree.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ElementTree.tostring(root, encoding="unicode") + "\n"
