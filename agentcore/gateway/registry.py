"""The tool registry: names, argument schemas and validators of the callables a gateway may execute.

Schemas come from type hints (a pydantic model is built from the signature) or from an explicit JSON Schema,
so validation happens before any policy decision or execution and policies see canonical values.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, get_args, get_type_hints

import jsonschema
from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from agentcore.gateway import canonical
from agentcore.gateway.errors import ToolArgumentError, UnknownToolError

NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*(\.[A-Za-z_][A-Za-z0-9_-]*)*$")
MAX_NAME = 128


@dataclass(frozen=True)
class Tool:
    """One registered tool. ``validate`` turns raw arguments into (canonical JSON args, call kwargs)."""

    name: str
    description: str
    input_schema: dict[str, Any]
    func: Callable[..., Any]
    is_async: bool
    timeout: float | None = None
    tags: tuple[str, ...] = ()
    _model: type[BaseModel] | None = field(default=None, repr=False)
    _schema_validator: Any = field(default=None, repr=False)
    _decimals: bool = field(default=False, repr=False)  # does the model hold a Decimal anywhere?

    def validate(
        self, args: Mapping[str, Any], limits: canonical.ArgumentLimits, unicode: canonical.UnicodeMode = "canonicalize"
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Canonicalise ``args``, check them against limits and schema; raise ToolArgumentError listing every problem.

        The schema sees the canonical arguments, so the kwargs the tool receives are built from the same text the
        returned canonical JSON (what the policy and the audit see) holds.
        """
        if not isinstance(args, Mapping):
            if isinstance(args, str | bytes):
                problem = "arguments must be a JSON object; got text (is the JSON malformed?)"
            else:
                problem = f"arguments must be a JSON object, got {type(args).__name__}"
            raise ToolArgumentError(self.name, [problem])
        raw, problems = canonical.canonicalize(dict(args), limits, unicode)
        if problems:
            raise ToolArgumentError(self.name, problems)
        if self._model is not None:
            try:
                model = self._model.model_validate(raw)
            except ValidationError as exc:
                raise ToolArgumentError(self.name, _pydantic_problems(exc)) from None
            dumped = model.model_dump(mode="json")
            if self._decimals:
                dumped = _numbers(dumped, model.model_dump())
            dumped, problems = canonical.canonicalize(dumped, limits, unicode)  # the model's "inf" is not JSON
            if problems:
                raise ToolArgumentError(self.name, problems)
            return dumped, dict(model.__dict__)  # extra="forbid": only the fields
        errors = sorted(self._schema_validator.iter_errors(raw), key=lambda e: list(e.path))
        if errors:
            raise ToolArgumentError(self.name, [_schema_problem(e) for e in errors[:5]])
        return raw, raw


def _numbers(dumped: Any, python: Any) -> Any:
    """``dumped`` (a model's JSON form) with each Decimal as the number it is, not pydantic's text: the policy
    compares numbers (``amount is more than 2000``, ``amount is 5000``), and ``"5000"`` is text to it. A Decimal no
    JSON number holds exactly (more digits than a float, or not finite) stays text, which ordered comparisons
    cannot evaluate: they fail closed."""
    if isinstance(python, Decimal) and type(dumped) is str:
        if not python.is_finite():
            return dumped
        if python == python.to_integral_value():
            return int(python)
        number = float(python)
        return number if Decimal(repr(number)) == python else dumped
    if type(dumped) is dict and isinstance(python, dict) and len(dumped) == len(python):
        return {key: _numbers(item, value) for (key, item), value in zip(dumped.items(), python.values(), strict=True)}
    if type(dumped) is list and isinstance(python, list | tuple) and len(dumped) == len(python):
        return [_numbers(item, value) for item, value in zip(dumped, python, strict=True)]
    return dumped


def _mentions_decimal(hint: Any, seen: set[Any]) -> bool:
    """Can a value of type ``hint`` hold a Decimal (``Decimal``, ``list[Decimal]``, a model with one)?"""
    if hint is Decimal or (isinstance(hint, type) and issubclass(hint, Decimal)):
        return True
    if isinstance(hint, type) and issubclass(hint, BaseModel):
        if hint in seen:
            return False
        seen.add(hint)
        return any(_mentions_decimal(f.annotation, seen) for f in hint.model_fields.values())
    return any(_mentions_decimal(arg, seen) for arg in get_args(hint))


def _pydantic_problems(exc: ValidationError) -> list[str]:
    problems = []
    for error in exc.errors()[:5]:
        where = ".".join(str(p) for p in error["loc"]) or "$"
        problems.append(f"{where}: {error['msg']}")
    return problems


def _schema_problem(error: jsonschema.ValidationError) -> str:
    where = ".".join(str(p) for p in error.absolute_path) or "$"
    return f"{where}: {error.message}"


def check_name(name: str) -> str:
    """Tool names are dotted identifiers (``crm.lookup``) so that policies can match them with globs."""
    if not isinstance(name, str) or len(name) > MAX_NAME or not NAME.match(name):
        raise ValueError(
            f"invalid tool name {name!r}: use dotted identifiers like 'crm.lookup' "
            f"(letters, digits, '_' or '-', at most {MAX_NAME} characters)"
        )
    return name


def tool_from_callable(
    func: Callable[..., Any],
    *,
    name: str | None = None,
    description: str | None = None,
    schema: Mapping[str, Any] | None = None,
    timeout: float | None = None,
    tags: tuple[str, ...] = (),
) -> Tool:
    """Build a Tool from a sync or async callable; without ``schema`` its type hints define the arguments."""
    tool_name = check_name(name or func.__name__)
    text = description if description is not None else inspect.getdoc(func) or ""
    is_async = inspect.iscoroutinefunction(func)
    if schema is not None:
        schema_dict = dict(schema)
        validator_cls = jsonschema.validators.validator_for(schema_dict)
        try:
            validator_cls.check_schema(schema_dict)
        except jsonschema.SchemaError as exc:
            raise ValueError(f"tool {tool_name!r}: the JSON Schema is invalid: {exc.message}") from None
        return Tool(tool_name, text, schema_dict, func, is_async, timeout, tags, None, validator_cls(schema_dict))
    model = _model_from_signature(tool_name, func)
    decimals = _mentions_decimal(model, set())
    return Tool(tool_name, text, model.model_json_schema(), func, is_async, timeout, tags, model, None, decimals)


def _model_from_signature(tool_name: str, func: Callable[..., Any]) -> type[BaseModel]:
    hints = get_type_hints(func)
    fields: dict[str, Any] = {}
    for param in inspect.signature(func).parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD, param.POSITIONAL_ONLY):
            raise ValueError(
                f"tool {tool_name!r}: parameter {param.name!r} must be a named parameter "
                "(no *args, **kwargs or positional-only); or pass schema= explicitly"
            )
        if param.name not in hints:
            raise ValueError(f"tool {tool_name!r}: parameter {param.name!r} needs a type hint (or pass schema=)")
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[param.name] = (hints[param.name], default)
    model_name = "".join(part.title().replace("-", "") for part in tool_name.split(".")) + "Args"
    return create_model(model_name, __config__=ConfigDict(extra="forbid"), **fields)


class ToolRegistry:
    """Name -> Tool, with did-you-mean errors for unknown names.

    ``version`` counts changes, so views built from the registry (the MCP proxy's name map) know when to rebuild.
    """

    def __init__(self) -> None:
        self._tools: dict[str, Tool] = {}
        self.version = 0

    def add(self, tool: Tool) -> Tool:
        if tool.name in self._tools:
            raise ValueError(f"tool {tool.name!r} is already registered; pick another name")
        self._tools[tool.name] = tool
        self.version += 1
        return tool

    def remove(self, name: str) -> None:
        """Forget a tool (an upstream MCP server dropped it); later calls to it are unknown-tool errors."""
        if self._tools.pop(name, None) is not None:
            self.version += 1

    def find(self, name: str) -> Tool | None:
        return self._tools.get(name) if isinstance(name, str) else None

    def get(self, name: str) -> Tool:
        tool = self.find(name)
        if tool is None:
            raise UnknownToolError(str(name)[:200], list(self._tools))
        return tool

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __iter__(self) -> Iterator[Tool]:
        return iter(list(self._tools.values()))

    def __len__(self) -> int:
        return len(self._tools)
