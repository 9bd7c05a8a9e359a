"""Policy test files: requests with expected effects, kept next to the policies (``*.tests.toml``).

A file holds the world the cases run in (entities for resolvers, detector scores) and the cases; each case may
list earlier executed calls (``history``) and spend, so stateful rules are tested too. Results render as JUnit
XML for CI.
"""

from __future__ import annotations

import tomllib
import xml.etree.ElementTree as ET
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, ValidationError

from agentcore.policies.context import InMemoryContext, Scope, scope_key
from agentcore.policies.engine import PolicyEngine
from agentcore.policies.errors import PolicyRequestError
from agentcore.policies.located import located
from agentcore.policies.model import AgentInfo, Decision, Effect, Principal, Request, RequestContext
from agentcore.policies.values import equality_key

TEST_SUFFIX = ".tests.toml"
DEFAULT_TIME = datetime(2026, 1, 5, 12, 0, tzinfo=UTC)  # a Monday, noon UTC


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class PastCall(_Strict):
    """An executed call before the case's request, ``minutes_ago`` minutes earlier (same user/session by default)."""

    action: str
    args: dict[str, Any] = Field(default_factory=dict)
    minutes_ago: float = 1.0
    session: str | None = None


class PastSpend(_Strict):
    scope: Scope = Scope.USER
    usd: float
    minutes_ago: float = 1.0


class Fact(_Strict):
    """What resolver ``entity`` returns for ``key``: any TOML value, compared structurally with the lookup's key.

    A table is an object key (key order is irrelevant), an array is several keys (``flight(number, date)``) or a
    list key, so lookups that the ``entities`` tables (text keys only) cannot name can still be stubbed.
    """

    entity: str
    key: Any
    value: dict[str, Any]


class Case(_Strict):
    """One request and the effect it must get; ``reason`` (optional) must appear in a determining rule id."""

    name: str
    action: str
    expect: Effect
    reason: str | None = None
    user: str = "test-user"
    roles: list[str] = Field(default_factory=list)
    claims: dict[str, Any] = Field(default_factory=dict)
    agent: str = "test-agent"
    agent_attributes: dict[str, Any] = Field(default_factory=dict)
    args: dict[str, Any] = Field(default_factory=dict)
    time: AwareDatetime = DEFAULT_TIME
    session: str | None = "test-session"
    tenant: str | None = "test-tenant"
    history: list[PastCall] = Field(default_factory=list)
    spend: list[PastSpend] = Field(default_factory=list)
    facts: list[Fact] = Field(default_factory=list)

    def request(self, action: str | None = None, args: dict[str, Any] | None = None, **context: Any) -> Request:
        return Request(
            principal=Principal(id=self.user, roles=frozenset(self.roles), attributes=self.claims),
            agent=AgentInfo(id=self.agent, attributes=self.agent_attributes),
            action=action or self.action,
            args=self.args if args is None else args,
            context=RequestContext(
                time=context.get("time", self.time), session_id=context.get("session", self.session), tenant=self.tenant
            ),
        )


class TestFile(_Strict):
    """``entities.<resolver>.<key>`` = attributes, ``[[facts]]`` for other keys (a case's own ``facts`` win);
    ``detectors.<name>`` = the score every text gets."""

    entities: dict[str, dict[str, dict[str, Any]]] = Field(default_factory=dict)
    facts: list[Fact] = Field(default_factory=list)
    detectors: dict[str, float] = Field(default_factory=dict)
    case: list[Case] = Field(default_factory=list)


class CaseResult(BaseModel):
    file: str
    name: str
    passed: bool
    expected: Effect
    decision: Decision
    message: str = ""


def load_tests(path: Path) -> TestFile:
    """Read and validate one test file; raise :class:`PolicyRequestError` saying what is wrong."""
    try:
        text = path.read_text(encoding="utf-8")
        return TestFile.model_validate(tomllib.loads(text))
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise PolicyRequestError(f"{path}: cannot read policy test file: {error}") from None
    except ValidationError as error:
        raise PolicyRequestError(f"invalid policy test file:\n{located(error, text, str(path))}") from None


def context_for(tests: TestFile, case: Case) -> InMemoryContext:
    """An in-memory world holding the file's entities, facts and detectors and the case's facts, history, spend."""
    context = InMemoryContext()
    facts: dict[str, dict[Any, dict[str, Any]]] = {}
    for fact in (*tests.facts, *case.facts):
        facts.setdefault(fact.entity, {})[equality_key(fact.key)] = fact.value
    for entity in {*tests.entities, *facts}:
        context.add_resolver(entity, _lookup(tests.entities.get(entity, {}), facts.get(entity, {})))
    for name, score in tests.detectors.items():
        context.add_detector(name, _constant(score))
    for call in case.history:
        at = case.time - timedelta(minutes=call.minutes_ago)
        context.record(case.request(call.action, call.args, session=call.session or case.session, time=at))
    request = case.request()
    for spent in case.spend:
        at = case.time - timedelta(minutes=spent.minutes_ago)
        context.add_spend(
            spent.scope, scope_key(request, spent.scope) or "", spent.usd, at, tenant=request.context.tenant
        )
    return context


def _lookup(
    records: dict[str, dict[str, Any]], facts: dict[Any, dict[str, Any]]
) -> Callable[..., dict[str, Any] | None]:
    """Facts by structural key, else records by text key; several keys (``flight(number, date)``) arrive as one
    argument each or as one tuple, and find ``entities`` records under their texts joined by ``|``."""

    def lookup(*keys: Any) -> dict[str, Any] | None:
        if len(keys) == 1 and isinstance(keys[0], tuple):
            keys = keys[0]
        found = facts.get(equality_key(keys[0] if len(keys) == 1 else keys))
        if found is None and not any(isinstance(key, (dict, list, tuple)) for key in keys):
            found = records.get("|".join(str(key) for key in keys))
        return found

    return lookup


def _constant(score: float) -> Callable[[str], float]:
    return lambda text: score


def run_tests(engine: PolicyEngine, paths: list[Path]) -> list[CaseResult]:
    results = []
    for path in paths:
        tests = load_tests(path)
        for case in tests.case:
            decision = engine.decide(case.request(), context_for(tests, case))
            passed = decision.effect is case.expect
            message = "" if passed else f"expected {case.expect.value}, got {decision.effect.value}"
            if passed and case.reason and not any(case.reason in r.rule_id for r in decision.reasons):
                passed, message = False, f"expected a reason from rule {case.reason!r}"
            if not passed:
                message += "; reasons: " + "; ".join(f"{r.rule_id} ({r.note or r.text})" for r in decision.reasons)
            results.append(
                CaseResult(
                    file=str(path),
                    name=case.name,
                    passed=passed,
                    expected=case.expect,
                    decision=decision,
                    message=message,
                )
            )
    return results


def junit_xml(results: list[CaseResult]) -> str:
    """JUnit XML (one testsuite per test file) that CI systems display."""
    root = ET.Element("testsuites", name="agentcore-policy", tests=str(len(results)))
    root.set("failures", str(sum(not r.passed for r in results)))
    for file in dict.fromkeys(r.file for r in results):
        mine = [r for r in results if r.file == file]
        suite = ET.SubElement(root, "testsuite", name=file, tests=str(len(mine)))
        suite.set("failures", str(sum(not r.passed for r in mine)))
        for result in mine:
            case = ET.SubElement(suite, "testcase", classname=Path(file).name, name=result.name)
            if not result.passed:
                ET.SubElement(case, "failure", message=result.message).text = result.message
    return ET.tostring(root, encoding="unicode", xml_declaration=True)
