"""agentcore.policies: readable policy rules for agent tool calls, checked and compiled into a fast engine.

The pipeline, one module per step (all under ``policies/``):

1. ``grammar.lark`` + ``parser.py`` + ``transform.py``: text -> typed AST (``ast.py``), located syntax errors.
2. ``checker.py``: AST + tool schemas (``schemas.py``) -> findings, with exact reasoning in ``regions.py``.
3. ``values.py`` + ``conditions.py`` + ``compiler.py``: AST -> closures, indexed by action.
4. ``engine.py``: :class:`PolicyEngine` decides a :class:`Request` into a :class:`Decision`.

Around it: ``formatter.py`` (``policy fmt``), ``testing.py`` (``*.tests.toml`` policy tests, JUnit XML),
``cedar.py`` (Cedar export), ``errors.py``. The language reference is ``docs/policy-language.md``.

The contract with callers (the gateway) lives in ``policies/model.py`` (``Request``, ``Decision``, ``Effect``,
``Reason``, ``Obligations``, ``RateLimit``) and ``policies/context.py`` (the ``DecisionContext`` protocol through
which stateful facts arrive, and ``InMemoryContext``). Both only grow: changes there are additive.
"""

from agentcore.policies.context import DecisionContext, InMemoryContext, Scope
from agentcore.policies.engine import PolicyEngine
from agentcore.policies.errors import PolicyCheckError, PolicyError, PolicySyntaxError, Problem
from agentcore.policies.model import (
    AgentInfo,
    Decision,
    Effect,
    Obligations,
    Principal,
    RateLimit,
    Reason,
    RedactPattern,
    Request,
    RequestContext,
)
from agentcore.policies.parser import parse

__all__ = [
    "AgentInfo",
    "Decision",
    "DecisionContext",
    "Effect",
    "InMemoryContext",
    "Obligations",
    "PolicyCheckError",
    "PolicyEngine",
    "PolicyError",
    "PolicySyntaxError",
    "Principal",
    "Problem",
    "RateLimit",
    "Reason",
    "RedactPattern",
    "Request",
    "RequestContext",
    "Scope",
    "parse",
]
