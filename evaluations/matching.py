"""Deterministic tool-call checks: BFCL-style matching against expected calls, and JSON-Schema-like validation.

Matching follows BFCL's AST checker: a parameter matches when its value equals one of the acceptable values
(strings compared case- and punctuation-insensitively, ints equal to floats), ``""`` among the acceptable values
means the parameter may be left out, and a parameter the expected call does not name is an error.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from agentcore.evaluations.trace import ExpectedCall, ToolCall, ToolSpec

_PUNCT = re.compile(r"[\s,./\-_*^'\"]")

_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "str": (str,),
    "char": (str,),
    "integer": (int,),
    "int": (int,),
    "long": (int,),
    "short": (int,),
    "byte": (int,),
    "number": (int, float),
    "float": (int, float),
    "double": (int, float),
    "boolean": (bool,),
    "bool": (bool,),
    "array": (list, tuple),
    "list": (list, tuple),
    "tuple": (list, tuple),
    "arraylist": (list, tuple),
    "set": (list, tuple),
    "object": (dict,),
    "dict": (dict,),
    "hashmap": (dict,),
    "map": (dict,),
}


def _norm_string(value: str) -> str:
    return _PUNCT.sub("", value.lower())


def values_match(actual: Any, acceptable: Any) -> bool:
    """Whether ``actual`` equals one acceptable value (recursively for lists and dicts)."""
    if isinstance(acceptable, dict):
        if not isinstance(actual, dict):
            return False
        for key, options in acceptable.items():
            choices = options if isinstance(options, list) else [options]
            if key not in actual:
                if "" not in choices:
                    return False
            elif not any(values_match(actual[key], choice) for choice in choices):
                return False
        return set(actual) <= set(acceptable)
    if isinstance(acceptable, list):
        return (
            isinstance(actual, (list, tuple))
            and len(actual) == len(acceptable)
            and all(values_match(a, b) for a, b in zip(actual, acceptable, strict=True))
        )
    if isinstance(acceptable, bool) or isinstance(actual, bool):
        return actual is acceptable
    if isinstance(acceptable, (int, float)):
        return isinstance(actual, (int, float)) and float(actual) == float(acceptable)
    if isinstance(acceptable, str):
        return isinstance(actual, str) and _norm_string(actual) == _norm_string(acceptable)
    return bool(actual == acceptable)


def call_problems(call: ToolCall, expected: ExpectedCall) -> list[str]:
    """Why ``call`` does not match ``expected`` (empty when it matches)."""
    if call.name != expected.name:
        return [f"called {call.name!r}, expected {expected.name!r}"]
    problems = []
    for name, options in expected.arguments.items():
        if name not in call.arguments:
            if "" not in options:
                problems.append(f"missing argument {name!r}")
        elif call.arguments[name] == "" and "" in options:
            continue
        elif not any(values_match(call.arguments[name], option) for option in options if option != ""):
            problems.append(
                f"argument {name!r}={call.arguments[name]!r} is not one of {[o for o in options if o != '']!r}"
            )
    problems.extend(f"unexpected argument {name!r}" for name in call.arguments if name not in expected.arguments)
    return problems


def best_match(call: ToolCall, expected: Sequence[ExpectedCall]) -> list[str]:
    """Problems against the closest expected call of the same name (fewest problems)."""
    same = [item for item in expected if item.name == call.name]
    if not same:
        return [f"no expected call to {call.name!r}"]
    return min((call_problems(call, item) for item in same), key=len)


def schema_problems(call: ToolCall, tool: ToolSpec) -> list[str]:
    """Required arguments missing, unknown arguments, wrong JSON types and values outside ``enum``."""
    properties: dict[str, Any] = tool.parameters.get("properties", {}) or {}
    problems = [
        f"missing required argument {name!r}"
        for name in tool.parameters.get("required", [])
        if name not in call.arguments
    ]
    for name, value in call.arguments.items():
        schema = properties.get(name)
        if schema is None:
            problems.append(f"unknown argument {name!r} for {tool.name!r}")
            continue
        declared = str(schema.get("type", "")).lower()
        allowed = _TYPES.get(declared)
        if allowed and (not isinstance(value, allowed) or (bool not in allowed and isinstance(value, bool))):
            problems.append(f"argument {name!r} should be {declared}, got {type(value).__name__}")
        if "enum" in schema and value not in schema["enum"]:
            problems.append(f"argument {name!r}={value!r} is not one of {schema['enum']!r}")
    return problems
