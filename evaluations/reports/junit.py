"""JUnit XML: one testcase per evaluator x target, plus one per gate; failures carry the explanation.

Follows the schema CI systems read (Jenkins' junit-10.xsd / GitLab / GitHub test reporters): ``testsuites`` >
``testsuite`` (name, tests, failures, errors, skipped, time) > ``testcase`` (classname, name, time) > ``failure``.
"""

from __future__ import annotations

import xml.etree.ElementTree as ElementTree

from agentcore.evaluations.outcome import Outcome


def render_junit(outcome: Outcome) -> str:
    root = ElementTree.Element("testsuites", name=outcome.suite)
    total = failed = 0
    for summary in outcome.summaries:
        results = [result for result in outcome.results if result.evaluator == summary.evaluator]
        cases = len(results) + len(summary.checks)
        failures = sum(not result.passed for result in results) + sum(not check.passed for check in summary.checks)
        suite = ElementTree.SubElement(
            root,
            "testsuite",
            name=summary.evaluator,
            tests=str(cases),
            failures=str(failures),
            errors="0",
            skipped="0",
            time="0",
        )
        for result in results:
            case = ElementTree.SubElement(
                suite, "testcase", classname=summary.evaluator, name=f"{result.session_id}/{result.target_id}", time="0"
            )
            if not result.passed:
                failure = ElementTree.SubElement(
                    case, "failure", message=f"{result.label} ({result.score:g})", type="EvaluatorFailed"
                )
                failure.text = result.explanation
        for check in summary.checks:
            case = ElementTree.SubElement(
                suite, "testcase", classname=f"{summary.evaluator}.gates", name=check.name, time="0"
            )
            if not check.passed:
                failure = ElementTree.SubElement(
                    case,
                    "failure",
                    message=f"{check.name}: {check.actual:g} vs {check.threshold:g}",
                    type="ThresholdFailed",
                )
                failure.text = (
                    f"{summary.evaluator} {check.name} threshold {check.threshold:g}, actual {check.actual:g}"
                )
        total += cases
        failed += failures
    root.set("tests", str(total))
    root.set("failures", str(failed))
    root.set("errors", "0")
    ElementTree.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ElementTree.tostring(root, encoding="unicode") + "\n"
