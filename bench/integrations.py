"""Per-call cost of the model SDK adapters and framework integrations over a plain ``gw.call``.

Prints ONE JSON line: median and p95 microseconds per allowed call (audit on, SQLite, default durability) for
``gw.call``, the OpenAI Chat Completions adapter (given a ``ChatCompletion`` object), the Responses adapter, the
Anthropic adapter (given a ``Message``) and a LangChain tool (``tool.invoke`` with a tool call).

    python bench/integrations.py [--calls 2000]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from anthropic.types import Message
from openai.types.chat import ChatCompletion
from openai.types.responses import Response

from agentcore import Gateway
from agentcore.gateway.adapters import run_anthropic_tool_uses, run_openai_response_calls, run_openai_tool_calls
from agentcore.integrations.langchain import langchain_tools

POLICY = 'policy "bench" version 1 owner "bench"\n\nallow crm.lookup for users with role "support".\n'
USER = {"id": "alice", "roles": ["support"]}
ARGS = {"customer_id": "c1"}


def timed(run: Callable[[], Any], calls: int) -> dict[str, float]:
    samples = []
    for _ in range(calls):
        started = time.perf_counter()
        run()
        samples.append((time.perf_counter() - started) * 1e6)
    ordered = sorted(samples)
    return {"median_us": round(statistics.median(ordered), 1), "p95_us": round(ordered[int(0.95 * len(ordered))], 1)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=2000)
    calls = parser.parse_args().calls
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "bench.policy").write_text(POLICY, encoding="utf-8")
        gw = Gateway(folder, database=str(Path(folder) / "gw.db"))

        @gw.tool(name="crm.lookup")
        def lookup(customer_id: str) -> dict[str, str]:
            return {"id": customer_id, "tier": "gold"}

        call = {"id": "c1", "type": "function", "function": {"name": "crm_lookup", "arguments": json.dumps(ARGS)}}
        completion = ChatCompletion.model_validate({"id": "x", "object": "chat.completion", "created": 1, "model": "m",
            "choices": [{"index": 0, "finish_reason": "tool_calls",
                         "message": {"role": "assistant", "tool_calls": [call]}}]})  # fmt: skip
        item = {"type": "function_call", "call_id": "c1", "name": "crm_lookup", "arguments": json.dumps(ARGS)}
        response = Response.model_validate({"id": "r", "object": "response", "created_at": 1, "model": "m",
            "parallel_tool_calls": True, "tool_choice": "auto", "tools": [], "output": [item]})  # fmt: skip
        message = Message.model_validate({"id": "m", "type": "message", "role": "assistant", "model": "m",
            "usage": {"input_tokens": 1, "output_tokens": 1},
            "content": [{"type": "tool_use", "id": "t1", "name": "crm_lookup", "input": ARGS}]})  # fmt: skip
        (tool,) = langchain_tools(gw, principal=USER)
        tool_call = {"type": "tool_call", "id": "c1", "name": "crm_lookup", "args": ARGS}
        paths: dict[str, Callable[[], Any]] = {
            "gateway_call": lambda: gw.call("crm.lookup", ARGS, principal=USER),
            "openai_chat_adapter": lambda: run_openai_tool_calls(gw, completion, principal=USER),
            "openai_responses_adapter": lambda: run_openai_response_calls(gw, response, principal=USER),
            "anthropic_adapter": lambda: run_anthropic_tool_uses(gw, message, principal=USER),
            "langchain_tool": lambda: tool.invoke(tool_call),
        }
        for run in paths.values():  # warm-up
            run()
        results = {name: timed(run, calls) for name, run in paths.items()}
        gw.close()
    print(json.dumps({"bench": "integrations", "calls": calls, "machine": platform.machine(),
                      "python": platform.python_version(), **results}))  # fmt: skip


if __name__ == "__main__":
    main()
