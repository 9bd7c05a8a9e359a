"""What an evaluator returns: a score on AgentCore's label scale, an explanation, and the model usage it caused."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field


class Level(StrEnum):
    """What one result judges: a whole session, one turn (trace), or one tool call."""

    SESSION = "session"
    TRACE = "trace"
    TOOL_CALL = "tool_call"


class Status(StrEnum):
    """Whether an evaluator could judge its target; a target it cannot judge is never a pass."""

    JUDGED = "judged"
    NOT_APPLICABLE = "not_applicable"
    ERROR = "error"  # the judgement could not be made (an LLM judge failed): never a pass, fails the run


NOT_APPLICABLE_LABEL = "Not Applicable"
ERROR_LABEL = "Error"


class Scale(BaseModel):
    """Ordered labels with their values (AgentCore's scales); a score maps to the nearest label."""

    model_config = ConfigDict(frozen=True)

    labels: tuple[tuple[str, float], ...]

    def label(self, score: float) -> str:
        return min(self.labels, key=lambda item: (abs(item[1] - score), -item[1]))[0]

    def snap(self, score: float) -> float:
        """The scale value nearest to ``score`` (results report AgentCore's discrete values)."""
        return dict(self.labels)[self.label(score)]

    def describe(self) -> str:
        return " / ".join(f"{name} {value:g}" for name, value in self.labels)


YES_NO = Scale(labels=(("No", 0.0), ("Yes", 1.0)))
FIVE = Scale(
    labels=(
        ("Not At All", 0.0),
        ("Not Generally", 0.25),
        ("Neutral/Mixed", 0.5),
        ("Generally Yes", 0.75),
        ("Completely Yes", 1.0),
    )
)


class Usage(BaseModel):
    """Model work charged to accel for one result (its share of the batched receipts)."""

    model_config = ConfigDict(frozen=True)

    model: str
    items: int
    tokens: int = 0
    cpu_seconds: float | None = Field(default=None, description="measured CPU time; left out of JSON reports")
    device_seconds: float = Field(default=0.0, description="simulated accelerator time (accel's cost model)")
    usd: float = 0.0
    joules: float = 0.0


class EvaluatorResult(BaseModel):
    """One evaluator's verdict on one target (session, trace or tool call)."""

    model_config = ConfigDict(frozen=True)

    evaluator: str
    level: Level
    target_id: str
    session_id: str
    score: float = Field(ge=0.0, le=1.0)
    raw_score: float = Field(ge=0.0, le=1.0, description="the continuous score before snapping to the label scale")
    label: str
    passed: bool = Field(description="false for a result that is not applicable: it is not a pass")
    explanation: str
    usage: tuple[Usage, ...] = ()
    status: Status = Status.JUDGED

    @property
    def judged(self) -> bool:
        return self.status is Status.JUDGED

    @property
    def qualified_id(self) -> str:
        """``session/target``, without repeating the session when the target id already starts with it."""
        if self.target_id == self.session_id or self.target_id.startswith(f"{self.session_id}/"):
            return self.target_id
        return f"{self.session_id}/{self.target_id}"
