"""A scripted Strands ``Model`` for the Strands integration tests (they run in .venv-strands, see Makefile)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

Turn = list[tuple[str, dict[str, Any]]]


@pytest.fixture
def scripted_strands_model() -> Callable[..., Any]:
    """``make(*turns)``: a Strands ``Model`` whose turn n asks for ``turns[n]``'s calls, then answers "done";
    ``.read`` keeps the text of every tool result it was given, ``.turns_taken`` how often it was asked."""
    pytest.importorskip("strands")
    from strands.models import Model

    class ScriptedModel(Model):
        def __init__(self, *turns: Turn) -> None:
            self.left, self.read, self.turns_taken = list(turns), [], 0

        def update_config(self, **model_config: Any) -> None:
            pass

        def get_config(self) -> Any:
            return {}

        def structured_output(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError

        async def stream(self, messages: Any, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
            self.turns_taken += 1
            results = [b["toolResult"] for b in messages[-1]["content"] if "toolResult" in b]
            self.read += [(r["status"], r["content"][0]["text"]) for r in results]
            yield {"messageStart": {"role": "assistant"}}
            calls = self.left.pop(0) if self.left else []
            for i, (name, args) in enumerate(calls):
                use = {"toolUseId": f"t{self.turns_taken}_{i}", "name": name}
                yield {"contentBlockStart": {"start": {"toolUse": use}}}
                yield {"contentBlockDelta": {"delta": {"toolUse": {"input": json.dumps(args)}}}}
                yield {"contentBlockStop": {}}
            if not calls:
                yield {"contentBlockDelta": {"delta": {"text": "done"}}}
                yield {"contentBlockStop": {}}
            yield {"messageStop": {"stopReason": "tool_use" if calls else "end_turn"}}

    return ScriptedModel
