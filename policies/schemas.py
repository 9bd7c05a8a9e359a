"""Tool schemas the checker validates policies against: OpenAI function-calling JSON, MCP tool lists, or a mapping.

Accepted shapes (a JSON file or Python data): a list of ``{"type": "function", "function": {"name",
"parameters"}}`` (OpenAI), a list of ``{"name", "inputSchema"}`` (MCP) or ``{"name", "parameters"}``, or an
object mapping tool name to its arguments' JSON Schema.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from agentcore.policies.errors import PolicyRequestError


class ToolSchema(BaseModel):
    """A tool's name and the JSON Schema (an ``object`` schema) of its arguments."""

    model_config = ConfigDict(frozen=True)
    name: str
    parameters: dict[str, Any]

    def at(self, path: tuple[str, ...]) -> dict[str, Any] | None:
        """The sub-schema at an argument path, or None when the schema has no such path."""
        schema: dict[str, Any] = self.parameters
        for part in path:
            if schema.get("type") == "array" or "items" in schema:
                schema = schema.get("items", {})
                if part.isdigit():
                    continue
            properties = schema.get("properties")
            if not isinstance(properties, dict) or part not in properties:
                return None
            schema = properties[part]
        return schema

    def names(self, path: tuple[str, ...]) -> list[str]:
        """Property names available next to ``path`` (for did-you-mean)."""
        parent = self.at(path[:-1]) or {}
        return sorted((parent.get("properties") or {}).keys())


def load_tools(source: Path | list[Any] | dict[str, Any]) -> dict[str, ToolSchema]:
    """Tool name -> schema; raise :class:`PolicyRequestError` for an unreadable or unrecognised file."""
    data: Any = source
    if isinstance(source, Path):
        try:
            data = json.loads(source.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as error:
            raise PolicyRequestError(f"{source}: cannot read tool schemas: {error}") from None
    if isinstance(data, dict) and isinstance(data.get("tools"), list):
        data = data["tools"]
    tools: dict[str, ToolSchema] = {}
    if isinstance(data, dict):
        for name, parameters in data.items():
            tools[name] = ToolSchema(name=name, parameters=parameters if isinstance(parameters, dict) else {})
        return tools
    if not isinstance(data, list):
        raise PolicyRequestError("tool schemas must be a JSON list of tools or an object of name -> schema")
    for entry in data:
        spec = entry.get("function", entry) if isinstance(entry, dict) else None
        if not isinstance(spec, dict) or not isinstance(spec.get("name"), str):
            raise PolicyRequestError(
                f"tool entry without a name: {json.dumps(entry)[:80]}; expected OpenAI or MCP format"
            )
        parameters = spec.get("parameters", spec.get("inputSchema", {}))
        tools[spec["name"]] = ToolSchema(name=spec["name"], parameters=parameters or {})
    return tools
