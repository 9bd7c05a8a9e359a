"""agentcore.evaluations: offline evaluators for agent traces, suites with CI gates, and reports.

Everything runs locally and deterministically: rules, the MiniLM encoder and small ONNX heads, all through
``agentcore.accel``. See docs/evaluations.md for the trace schema, the evaluators and their measured agreement.
"""

from agentcore.evaluations.api import EvaluationSuite
from agentcore.evaluations.base import Evaluator, Judgement, PerTargetEvaluator, Target
from agentcore.evaluations.custom import evaluator
from agentcore.evaluations.errors import EvaluationError, SuiteError, TraceFormatError, UnknownEvaluatorError
from agentcore.evaluations.importers import load_sessions
from agentcore.evaluations.models import Models
from agentcore.evaluations.outcome import Outcome
from agentcore.evaluations.pairwise import Comparison, Preference, compare, compare_responses
from agentcore.evaluations.registry import create_evaluator, evaluator_classes, register
from agentcore.evaluations.result import EvaluatorResult, Level, Scale, Usage
from agentcore.evaluations.runner import evaluate
from agentcore.evaluations.suite import load_suite
from agentcore.evaluations.trace import (
    ExpectedCall,
    Instruction,
    ModelCall,
    Retrieval,
    Session,
    SessionReference,
    ToolCall,
    ToolSpec,
    Trace,
    TraceReference,
)

__all__ = [
    "Comparison",
    "EvaluationError",
    "EvaluationSuite",
    "Evaluator",
    "EvaluatorResult",
    "ExpectedCall",
    "Instruction",
    "Judgement",
    "Level",
    "ModelCall",
    "Models",
    "Outcome",
    "PerTargetEvaluator",
    "Preference",
    "Retrieval",
    "Scale",
    "Session",
    "SessionReference",
    "SuiteError",
    "Target",
    "ToolCall",
    "ToolSpec",
    "Trace",
    "TraceFormatError",
    "TraceReference",
    "UnknownEvaluatorError",
    "Usage",
    "compare",
    "compare_responses",
    "create_evaluator",
    "evaluate",
    "evaluator",
    "evaluator_classes",
    "load_sessions",
    "load_suite",
    "register",
]
