"""``run_demo``: generate the store, play the conversations, evaluate them, cost them, write the report folder.

Everything runs for real on this machine: SQLite for the store, the gateway, memory and the ledger (one
``agentcore.db`` as in production), the ONNX encoder through accel for intents, memory and evaluators. Only
Trainium is simulated.
"""

from __future__ import annotations

import json
import logging
import time
from collections import Counter
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any, cast

from pydantic import BaseModel, Field

from agentcore.accel.ledger import Ledger
from agentcore.accel.runtime import Accelerator
from agentcore.config import CONFIG_FILE
from agentcore.demo import costs
from agentcore.demo.agent import Agent, ScriptedAgent
from agentcore.demo.database import RetailDatabase
from agentcore.demo.evaluation import EvaluationSummary, evaluate_traces
from agentcore.demo.generator import StoreSize, generate_store
from agentcore.demo.governance import build_gateway
from agentcore.demo.llm_costs import LLMCosts, price_conversations
from agentcore.demo.memory import CustomerMemory
from agentcore.demo.report import render_index
from agentcore.demo.runner import PlayedSession, play
from agentcore.demo.scenarios import scripts, templates
from agentcore.demo.transcripts import conversations, transcript, transcript_html
from agentcore.errors import ConfigError
from agentcore.memory import MemoryStore
from agentcore.references import load_reference

log = logging.getLogger(__name__)

#: files a demo run owns in its report folder; a re-run replaces exactly these
OWNED = ("retail.db", "agentcore.db", "agentcore.db-wal", "agentcore.db-shm", "retail.db-wal", "retail.db-shm")
Progress = Callable[[str, int, int], None]
#: what to run from inside the report folder, where its agentcore.toml points every command at the demo's database
INSPECT = (
    "agentcore accel ledger --by tenant",
    "agentcore gateway audit verify",
    "agentcore gateway approvals list --status all",
    "agentcore memory stats",
)
CONFIG = '# Written by `agentcore demo`: commands run in this folder use its database.\ndatabase = "agentcore.db"\n'


class DemoSettings(BaseModel):
    """What to run: how many conversations, where the report goes, which store seed and tenant."""

    sessions: int = Field(
        default_factory=lambda: len(templates()), ge=1, le=500, description="default: each scenario once"
    )
    out: Path = Path(".agentcore/demo")
    seed: int = 7
    tenant: str = "retail-demo"
    agent: str | None = Field(None, description="package.module:factory of your agent (default: the scripted one)")


class SessionSummary(BaseModel):
    session_id: str
    title: str
    customer: str | None
    calls: int
    as_scripted: bool
    off_script: list[str]
    outcomes: dict[str, int] = Field(default_factory=dict, description="tool call status -> calls in this session")


class Decisions(BaseModel):
    """What the gateway decided, from its audit log."""

    allowed: int
    denied: int
    needed_approval: int
    approved: int
    top_denials: list[tuple[str, int]]
    approval_rules: list[tuple[str, int]]
    approvers: list[str]
    by_tool: dict[str, dict[str, int]] = Field(
        default_factory=dict, description="tool -> gateway decision (allow, deny, needs_approval) -> calls"
    )


class MemorySummary(BaseModel):
    preferences: int
    summaries: int
    events: int
    carried_over: list[dict[str, Any]]


class DemoReport(BaseModel):
    """Everything the summary tables show, also written as ``summary.json``."""

    settings: DemoSettings
    store: dict[str, int]
    sessions: list[SessionSummary]
    decisions: Decisions
    memory: MemorySummary
    evaluation: EvaluationSummary
    audit: dict[str, Any]
    costs: costs.CostSummary | None
    costs_error: str | None = None
    llm_costs: LLMCosts | None = None
    seconds: float
    files: list[str]

    @property
    def passed(self) -> bool:
        """The run is a success when every conversation went as scripted, evaluations passed, the chain verifies."""
        return all(s.as_scripted for s in self.sessions) and self.evaluation.passed and bool(self.audit.get("ok"))


def run_demo(settings: DemoSettings, progress: Progress | None = None) -> DemoReport:
    started = time.perf_counter()
    own_agent = None if settings.agent is None else load_agent(settings.agent)  # a bad reference fails first
    out = _prepare(settings.out)
    report = _reporter(progress)
    report("generating the store", 0, settings.sessions)
    db = RetailDatabase(out / "retail.db")
    db.load(generate_store(settings.seed, StoreSize(users=max(300, 10 * settings.sessions))))
    database = f"sqlite:///{out / 'agentcore.db'}"
    accelerator = Accelerator(device=costs.PROFILES[0], ledger=Ledger(database))
    gateway = build_gateway(db, database=str(out / "agentcore.db"))
    memory = CustomerMemory(MemoryStore(database, accelerator=accelerator, tenant=settings.tenant))
    products = tuple(row["name"] for row in db.query("SELECT name FROM products ORDER BY name"))
    agent = own_agent or ScriptedAgent(accelerator, tenant=settings.tenant, products=products)
    played: list[PlayedSession] = []
    for index, script in enumerate(scripts(db, settings.sessions)):
        report(f"session {script.session_id}", index, settings.sessions)
        played.append(play(script, agent, gateway, memory, tenant=settings.tenant))
    report("evaluating the recorded traces", settings.sessions, settings.sessions)
    (out / "traces.jsonl").write_text("".join(p.trace.model_dump_json() + "\n" for p in played), encoding="utf-8")
    views = conversations(played)
    (out / "transcripts.md").write_text(transcript(views), encoding="utf-8")
    (out / "transcripts.html").write_text(transcript_html(views), encoding="utf-8")
    suite_text = resources.files("agentcore.demo").joinpath("data/suite.toml").read_text(encoding="utf-8")
    (out / "suite.toml").write_text(suite_text, encoding="utf-8")
    evaluation = evaluate_traces(out / "suite.toml", out, accelerator)
    verify = gateway.audit.verify()
    (out / "audit.jsonl").write_text("".join(line + "\n" for line in gateway.audit.export_jsonl()), encoding="utf-8")
    (out / "audit-verify.json").write_text(verify.model_dump_json(indent=1), encoding="utf-8")
    decisions = _decisions(out / "audit.jsonl")
    summary, error = _costs(accelerator, out)
    llm, llm_sessions = price_conversations([p.trace for p in played])
    (out / "llm-traces.jsonl").write_text("".join(s.model_dump_json() + "\n" for s in llm_sessions), encoding="utf-8")
    stats = memory.store.stats()
    result = DemoReport(
        settings=settings,
        store=db.counts(),
        sessions=[_session_summary(p) for p in played],
        decisions=decisions,
        memory=MemorySummary(
            preferences=memory.preferences,
            summaries=memory.summaries,
            events=stats.events,
            carried_over=memory.recalled,
        ),
        evaluation=evaluation,
        audit=verify.model_dump(),
        costs=summary,
        costs_error=error,
        llm_costs=llm,
        seconds=round(time.perf_counter() - started, 2),
        files=[],
    )
    gateway.close()
    memory.store.close()
    if accelerator.ledger is not None:
        accelerator.ledger.engine.dispose()
    db.close()
    last = ("summary.json", "index.html")
    result.files = [*sorted(p.name for p in out.iterdir() if p.is_file() and p.name not in last), *last]
    (out / "summary.json").write_text(result.model_dump_json(indent=1), encoding="utf-8")
    charts = {p.name: p.read_text(encoding="utf-8") for p in sorted(out.glob("accel-*.svg"))}
    (out / "index.html").write_text(render_index(result, charts), encoding="utf-8")
    return result


def load_agent(spec: str) -> Agent:
    """Your agent, from ``package.module:factory`` (called with no arguments; it returns an :class:`Agent`)."""
    factory = load_reference(spec, "--agent")
    agent = factory() if callable(factory) else None
    if not callable(getattr(agent, "respond", None)):
        raise ConfigError(f"--agent {spec!r} must name a factory returning an object with respond(message, session)")
    return cast(Agent, agent)


def _prepare(out: Path) -> Path:
    """Create the report folder; remove only the databases an earlier demo run left there."""
    if out.exists() and not out.is_dir():
        raise NotADirectoryError(f"--out {out} is a file; give a folder for the demo's report")
    out.mkdir(parents=True, exist_ok=True)
    for name in OWNED:
        (out / name).unlink(missing_ok=True)
    (out / CONFIG_FILE).write_text(CONFIG, encoding="utf-8")
    return out.resolve()


def _reporter(progress: Progress | None) -> Progress:
    """Progress goes to the log, and to the caller's callback (the CLI's progress bar) when there is one."""

    def report(message: str, index: int, count: int) -> None:
        log.info("demo: %s", message)
        if progress is not None:
            progress(message, index, count)

    return report


def _decisions(audit_file: Path) -> Decisions:
    effects: Counter[str] = Counter()
    denials: Counter[str] = Counter()
    approvals: Counter[str] = Counter()
    approvers: set[str] = set()
    by_tool: dict[str, Counter[str]] = {}
    for line in audit_file.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if record["kind"] == "decision":
            by_tool.setdefault(record["tool"], Counter())[record["effect"]] += 1
        if record["effect"]:  # decisions, approvals, and executed calls (which carry their allow)
            effects[record["effect"]] += 1
        rules = [r["rule_id"] for r in record["detail"].get("reasons", [])] or [record.get("outcome") or "?"]
        if record["kind"] == "decision" and record["effect"] == "deny":
            denials[rules[0]] += 1
        elif record["kind"] == "decision" and record["effect"] == "needs_approval":
            approvals[rules[0]] += 1
        elif record["kind"] == "approval" and record["effect"] == "approved":
            approvers.add(str(record["detail"].get("by")))
    return Decisions(
        allowed=effects["allow"], denied=effects["deny"], needed_approval=effects["needs_approval"],
        approved=effects["approved"], top_denials=denials.most_common(), approval_rules=approvals.most_common(),
        approvers=sorted(approvers), by_tool={tool: dict(counts) for tool, counts in sorted(by_tool.items())},
    )  # fmt: skip


def _costs(accelerator: Accelerator, out: Path) -> tuple[costs.CostSummary | None, str | None]:
    """Receipts out of the ledger, replayed on both fleets; a simulator failure degrades to a clear message."""
    ledger = accelerator.ledger
    if ledger is None:
        return None, "no ledger: receipts were not recorded"
    ledger.export(out / "accel-receipts.json")
    receipts = json.loads((out / "accel-receipts.json").read_text(encoding="utf-8"))
    try:
        summary, reports = costs.summarise_costs(receipts)
    except Exception as exc:  # the simulator is optional for the demo's verdict; say why it is missing
        log.exception("demo: the accel simulation failed")
        return None, f"{type(exc).__name__}: {exc}"
    for name, svg in costs.charts(reports).items():
        (out / name).write_text(svg, encoding="utf-8")
    (out / "accel-costs.json").write_text(
        json.dumps(
            {name: report.model_dump(exclude={"timeline", "latency_cdf"}) for name, report in reports.items()}, indent=1
        ),
        encoding="utf-8",
    )
    return summary, None


def _session_summary(played: PlayedSession) -> SessionSummary:
    return SessionSummary(
        session_id=played.script.session_id, title=played.script.title, customer=played.customer,
        calls=len(played.outcomes), as_scripted=not played.off_script, off_script=played.off_script,
        outcomes=dict(Counter(outcome.status for outcome in played.outcomes)),
    )  # fmt: skip
