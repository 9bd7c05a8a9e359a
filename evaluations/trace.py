"""The trace model every importer produces and every evaluator reads.

A :class:`Session` is one conversation; each :class:`Trace` is one user turn (input, output, system
instructions, context documents) with the spans that happened during it (tool calls, retrievals, model
calls). Optional ``reference`` fields carry ground truth (expected response, expected tool calls,
verifiable instructions, assertions, expected trajectory), mirroring AgentCore's ground-truth inputs.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

SCHEMA_VERSION = "agentcore.trace/1"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ToolSpec(_Model):
    """A tool offered to the agent: name, description and JSON-Schema-like parameters."""

    name: str
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=dict)
    read_only: bool = Field(default=False, description="a lookup that changes nothing (MCP's readOnlyHint)")


class ToolCall(_Model):
    """One tool call: what was called with which arguments, what came back, and the gateway's decision."""

    kind: Literal["tool_call"] = "tool_call"
    id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    result: Any = None
    error: str | None = None
    decision: str | None = None


class Retrieval(_Model):
    """One retrieval: the query and the documents returned."""

    kind: Literal["retrieval"] = "retrieval"
    id: str
    query: str = ""
    documents: list[str] = Field(default_factory=list)


class ModelCall(_Model):
    """One model call inside a turn."""

    kind: Literal["model_call"] = "model_call"
    id: str
    model: str = ""
    input: str = ""
    output: str = ""
    input_tokens: int | None = Field(default=None, ge=0, description="prompt tokens the provider counted")
    output_tokens: int | None = Field(default=None, ge=0, description="completion tokens the provider counted")


Span = Annotated[ToolCall | Retrieval | ModelCall, Field(discriminator="kind")]


class Instruction(_Model):
    """A verifiable instruction (IFEval ids, e.g. ``punctuation:no_comma``) with its parameters."""

    id: str
    kwargs: dict[str, Any] = Field(default_factory=dict)


class ExpectedCall(_Model):
    """An expected tool call; each argument lists its acceptable values (``""`` = may be omitted).

    As a session goal, a state-changing action is required and a read-only lookup is not (another route to the
    same end state is as good), unless ``required`` says otherwise. ``read_only`` unset follows the session's
    :class:`ToolSpec` of that name (state-changing when the tool is not described).
    """

    name: str
    arguments: dict[str, list[Any]] = Field(default_factory=dict)
    read_only: bool | None = None
    required: bool | None = None


class TraceReference(_Model):
    """Ground truth for one turn. ``expected_tool_calls == []`` means no tool should be called."""

    expected_response: str | None = None
    expected_tool_calls: list[ExpectedCall] | None = None
    instructions: list[Instruction] | None = None


class SessionReference(_Model):
    """Ground truth for a session: assertions, expected trajectory (tool names) and required actions."""

    assertions: list[str] = Field(default_factory=list)
    expected_trajectory: list[str] | None = None
    expected_actions: list[ExpectedCall] | None = None
    expected_outputs: list[str] = Field(default_factory=list)


class Trace(_Model):
    """One user turn of a session."""

    id: str
    input: str = ""
    output: str = ""
    system: str | None = None
    context: list[str] = Field(default_factory=list)
    tools: list[ToolSpec] = Field(default_factory=list)
    spans: list[Span] = Field(default_factory=list)
    reference: TraceReference | None = None

    @property
    def tool_calls(self) -> list[ToolCall]:
        return [span for span in self.spans if isinstance(span, ToolCall)]

    @property
    def documents(self) -> list[str]:
        """Context the answer may rely on: explicit context, retrieved documents and tool results."""
        docs = list(self.context)
        for span in self.spans:
            if isinstance(span, Retrieval):
                docs.extend(span.documents)
            elif isinstance(span, ToolCall) and span.result not in (None, ""):
                docs.append(span.result if isinstance(span.result, str) else _compact_json(span.result))
        return docs


class Session(_Model):
    """One conversation: its turns in order and optional session-level ground truth."""

    id: str
    traces: list[Trace]
    tools: list[ToolSpec] = Field(default_factory=list)
    reference: SessionReference | None = None
    tenant: str | None = None

    @property
    def model_calls(self) -> list[ModelCall]:
        return [span for trace in self.traces for span in trace.spans if isinstance(span, ModelCall)]

    @property
    def tool_calls(self) -> list[ToolCall]:
        return [call for trace in self.traces for call in trace.tool_calls]


def _compact_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
