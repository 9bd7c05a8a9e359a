"""Tool registration and argument validation: schemas from hints or JSON Schema, canonical values, limits."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from agentcore.gateway.canonical import ArgumentLimits
from agentcore.gateway.errors import ToolArgumentError, UnknownToolError
from agentcore.gateway.registry import ToolRegistry, check_name, tool_from_callable

LIMITS = ArgumentLimits()


class Address(BaseModel):
    city: str
    zip: str


def ship(order_id: str, address: Address, express: bool = False) -> str:
    """Ship an order."""
    return f"{order_id}:{address.city}:{express}"


def test_schema_from_type_hints_validates_and_canonicalises() -> None:
    tool = tool_from_callable(ship, name="orders.ship")
    assert tool.description == "Ship an order."
    assert tool.input_schema["required"] == ["order_id", "address"]
    canon, kwargs = tool.validate({"order_id": "A1", "address": {"city": "Oslo", "zip": "0150"}}, LIMITS)
    assert canon == {"order_id": "A1", "address": {"city": "Oslo", "zip": "0150"}, "express": False}
    assert isinstance(kwargs["address"], Address)
    assert tool.func(**kwargs) == "A1:Oslo:False"


def test_wrong_types_missing_and_extra_arguments_are_listed() -> None:
    tool = tool_from_callable(ship, name="orders.ship")
    with pytest.raises(ToolArgumentError) as info:
        tool.validate({"order_id": 5, "surprise": 1}, LIMITS)
    text = str(info.value)
    assert "order_id" in text and "address" in text and "surprise" in text


def test_explicit_json_schema() -> None:
    schema = {
        "type": "object",
        "properties": {"amount": {"type": "number", "maximum": 1000}},
        "required": ["amount"],
        "additionalProperties": False,
    }
    tool = tool_from_callable(lambda amount: amount, name="refunds.issue", schema=schema)
    assert tool.validate({"amount": 12.5}, LIMITS)[0] == {"amount": 12.5}
    with pytest.raises(ToolArgumentError, match="maximum"):
        tool.validate({"amount": 5000}, LIMITS)
    with pytest.raises(ValueError, match="JSON Schema is invalid"):
        tool_from_callable(lambda: None, name="bad.schema", schema={"type": "nonsense"})


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        ({"order_id": "a\x00b"}, "NUL byte"),
        ({"order_id": "x" * 1_000_000}, "exceeds the limit"),
        ({"order_id": float("nan")}, "not a finite number"),
        ({"order_id": {"a": {"b": {"c": 1}}}}, "nested deeper"),
    ],
)
def test_hostile_arguments_are_rejected_before_validation(args: dict[str, object], problem: str) -> None:
    tool = tool_from_callable(ship, name="orders.ship")
    with pytest.raises(ToolArgumentError, match=problem):
        tool.validate(args, ArgumentLimits(max_depth=2))


def test_total_size_limit() -> None:
    tool = tool_from_callable(ship, name="orders.ship")
    with pytest.raises(ToolArgumentError, match="bytes of JSON"):
        tool.validate({"order_id": "x" * 2000}, ArgumentLimits(max_bytes=1000))


def test_names_and_unknown_tool_suggestion() -> None:
    registry = ToolRegistry()
    registry.add(tool_from_callable(ship, name="orders.ship"))
    with pytest.raises(ValueError, match="already registered"):
        registry.add(tool_from_callable(ship, name="orders.ship"))
    with pytest.raises(UnknownToolError, match=r"did you mean 'orders\.ship'"):
        registry.get("orders.shp")
    for bad in ["", "a..b", "1abc", "a b", "x" * 200, "crm.*"]:
        with pytest.raises(ValueError, match="invalid tool name"):
            check_name(bad)


def test_untyped_or_variadic_parameters_are_refused() -> None:
    def untyped(x):  # type: ignore[no-untyped-def]
        return x

    def variadic(**kwargs: int) -> None:
        return None

    with pytest.raises(ValueError, match="needs a type hint"):
        tool_from_callable(untyped)
    with pytest.raises(ValueError, match="named parameter"):
        tool_from_callable(variadic)


def test_removing_a_tool_counts_as_a_change_and_makes_it_unknown() -> None:
    registry = ToolRegistry()
    registry.add(tool_from_callable(ship, name="orders.ship"))
    before = registry.version
    registry.remove("orders.ship")
    assert registry.version == before + 1 and "orders.ship" not in registry
    with pytest.raises(UnknownToolError):
        registry.get("orders.ship")
    registry.remove("orders.ship")  # already gone: nothing changes
    assert registry.version == before + 1
    registry.add(tool_from_callable(ship, name="orders.ship"))  # the name is free again
    assert registry.version == before + 2
