"""An LLM agent for the retail demo, in the Chat Completions message shapes, with your model client plugged in.

``model(messages, tools)`` is your client call and returns the assistant message as a dict; with the OpenAI SDK::

    def model(messages, tools):
        reply = client.chat.completions.create(model="gpt-4.1", messages=messages, tools=tools)
        return reply.choices[0].message.model_dump(exclude_none=True)

Play it through the demo's scenarios, evaluation and report with ``agentcore demo --agent mypackage.agents:make``,
where ``make()`` returns ``ChatAgent(model)``. Every tool call goes through ``session.call``: the gateway decides it
as the customer the conversation identified (a guest until then), so the model can never pick its principal.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from agentcore.demo import AgentSession

Model = Callable[[list[dict[str, Any]], list[dict[str, Any]]], dict[str, Any]]


class ChatAgent:
    """One message history per conversation: user turns, assistant tool calls, and a ``tool`` reply to each."""

    def __init__(self, model: Model, *, max_steps: int = 8) -> None:
        self.model = model
        self.max_steps = max_steps
        self.histories: dict[str, list[dict[str, Any]]] = {}

    def respond(self, message: str, session: AgentSession) -> str:
        messages = self.histories.setdefault(session.session_id, [])
        messages.append({"role": "user", "content": message})
        for _ in range(self.max_steps):
            reply = self.model(messages, session.tool_schemas)
            messages.append(reply)
            if not reply.get("tool_calls"):
                return str(reply.get("content") or "")
            for call in reply["tool_calls"]:
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": _run(call, session)})
        return "I could not finish this within the steps I allow myself; a human agent will follow up."


def _run(call: dict[str, Any], session: AgentSession) -> str:
    """The tool message's content: the gateway's outcome, or why the model's arguments could not be read."""
    try:
        arguments = json.loads(call["function"]["arguments"] or "{}")
    except json.JSONDecodeError as exc:
        return json.dumps({"status": "invalid", "message": f"arguments are not JSON ({exc}); send a JSON object"})
    if not isinstance(arguments, dict):
        return json.dumps({"status": "invalid", "message": "arguments must be a JSON object"})
    return session.call(call["function"]["name"], arguments).model_dump_json()
