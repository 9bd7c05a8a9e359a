"""agentcore: govern AI agents with readable policies, an enforcing gateway, per-user memory and evaluations.

The public API is re-exported here lazily, so ``import agentcore`` stays cheap and a user who only
needs the policy engine never loads onnxruntime.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from agentcore.errors import AgentCoreError, ConfigError, ModelCorruptError, ModelError, ModelNotFoundError

__version__ = "0.1.0"

# public name -> module that defines it
_LAZY: dict[str, str] = {
    "Accelerator": "agentcore.accel.runtime",
    "EmbeddingResult": "agentcore.accel.runtime",
    "Receipt": "agentcore.accel.runtime",
    "AdmissionError": "agentcore.accel.errors",
    "DeviceProfile": "agentcore.accel.sim.profiles",
    "Ledger": "agentcore.accel.ledger",
    "SimulatedDevice": "agentcore.accel.sim.device",
    "Simulator": "agentcore.accel.sim.simulator",
    "Spend": "agentcore.accel.ledger",
    "Workload": "agentcore.accel.sim.workload",
    "MemoryStore": "agentcore.memory",
    "MemoryRecord": "agentcore.memory",
    "ScoredRecord": "agentcore.memory",
    "MemoryEvent": "agentcore.memory",
    "ScoredEvent": "agentcore.memory",
    "MemoryStrategy": "agentcore.memory",
    "PolicyEngine": "agentcore.policies",
    "Request": "agentcore.policies",
    "Decision": "agentcore.policies",
    "Effect": "agentcore.policies",
    "PolicySyntaxError": "agentcore.policies",
    "PolicyCheckError": "agentcore.policies",
    "forget": "agentcore.erasure",
    "Gateway": "agentcore.gateway",
    "ToolDenied": "agentcore.gateway",
    "ApprovalRequired": "agentcore.gateway",
    "ToolArgumentError": "agentcore.gateway",
    "UnknownToolError": "agentcore.gateway",
    "ToolExecutionError": "agentcore.gateway",
    "GatewayError": "agentcore.gateway",
    "OutcomeNotRecorded": "agentcore.gateway",
    "EvaluationSuite": "agentcore.evaluations",
    "EvaluatorResult": "agentcore.evaluations",
    "Trace": "agentcore.evaluations",
    "TraceFormatError": "agentcore.evaluations",
}

if TYPE_CHECKING:
    from agentcore.accel.errors import AdmissionError
    from agentcore.accel.ledger import Ledger, Spend
    from agentcore.accel.runtime import Accelerator, EmbeddingResult, Receipt
    from agentcore.accel.sim.device import SimulatedDevice
    from agentcore.accel.sim.profiles import DeviceProfile
    from agentcore.accel.sim.simulator import Simulator
    from agentcore.accel.sim.workload import Workload
    from agentcore.erasure import forget
    from agentcore.evaluations import EvaluationSuite, EvaluatorResult, Trace, TraceFormatError
    from agentcore.gateway import (
        ApprovalRequired,
        Gateway,
        GatewayError,
        OutcomeNotRecorded,
        ToolArgumentError,
        ToolDenied,
        ToolExecutionError,
        UnknownToolError,
    )
    from agentcore.memory import MemoryEvent, MemoryRecord, MemoryStore, MemoryStrategy, ScoredEvent, ScoredRecord
    from agentcore.policies import Decision, Effect, PolicyCheckError, PolicyEngine, PolicySyntaxError, Request


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'agentcore' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "Accelerator",
    "AdmissionError",
    "AgentCoreError",
    "ApprovalRequired",
    "ConfigError",
    "Decision",
    "DeviceProfile",
    "Effect",
    "EmbeddingResult",
    "EvaluationSuite",
    "EvaluatorResult",
    "Gateway",
    "GatewayError",
    "Ledger",
    "MemoryEvent",
    "MemoryRecord",
    "MemoryStore",
    "MemoryStrategy",
    "ModelCorruptError",
    "ModelError",
    "ModelNotFoundError",
    "OutcomeNotRecorded",
    "PolicyCheckError",
    "PolicyEngine",
    "PolicySyntaxError",
    "Receipt",
    "Request",
    "ScoredEvent",
    "ScoredRecord",
    "SimulatedDevice",
    "Simulator",
    "Spend",
    "ToolArgumentError",
    "ToolDenied",
    "ToolExecutionError",
    "Trace",
    "TraceFormatError",
    "UnknownToolError",
    "Workload",
    "__version__",
    "forget",
]
