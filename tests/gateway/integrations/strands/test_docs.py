"""The Strands snippet of docs/integrations.md runs as written, with the scripted Strands model."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("strands", reason="strands-agents lives in .venv-strands; test_strands_env.py runs these there")

from agentcore import Gateway

DOC = Path(__file__).resolve().parents[4] / "docs" / "integrations.md"


def test_strands_snippet_pauses_for_approval_and_runs_the_refund_once(
    make_gateway: Callable[..., tuple[Gateway, dict[str, int]]], scripted_strands_model: Any
) -> None:
    section = DOC.read_text(encoding="utf-8").split("\n## Strands Agents\n", 1)[1].split("\n## ", 1)[0]
    (code,) = re.findall(r"^```python\n(.*?)^```", section, flags=re.M | re.S)
    gw, runs = make_gateway()
    model = scripted_strands_model([("refunds_issue", {"order_id": "o1", "amount": 900})])
    user, manager = {"id": "alice", "roles": ["support"]}, {"id": "mona", "roles": ["manager"]}
    namespace = {"gw": gw, "user": user, "manager": manager, "model": model}
    exec(compile(code, f"{DOC}:Strands Agents", "exec"), namespace)
    assert namespace["result"].stop_reason == "end_turn" and runs == {"refunds.issue": 1}
    assert [a.status for a in gw.approvals.list(None)] == ["executed"]
