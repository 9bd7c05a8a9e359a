"""Console fixtures: a gateway database with real calls, eval reports the CLI wrote, ledger receipts, the console
served by uvicorn on a free port, and a headless Chromium page (Debian's ``/usr/bin/chromium`` via Playwright).

``AGENTCORE_SCREENSHOTS=docs/img`` copies the screenshots the tests take into that folder (relative to the
repository root); by default they stay under the test's tmp folder.
"""

from __future__ import annotations

import datetime
import json
import os
import shutil
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jwt
import pytest
import uvicorn
from typer.testing import CliRunner

from agentcore.cli import app as cli
from agentcore.console import ConsoleSettings, create_app
from agentcore.gateway import Gateway

REPO = Path(__file__).resolve().parents[2]
SECRET_ENV = "CONSOLE_TEST_SECRET"
SECRET = "console-test-secret-" + "x" * 32
POLICY = """policy "support" version 1 owner "platform-team"

allow crm.lookup for users with role "support".
allow refunds.issue for users with role "support" when amount is at most 500.
require approval from role "manager" for refunds.issue when amount is more than 500.
deny vault.read for users with role "support".
"""
SUITE = """[suite]
name = "retail-support"
traces = ["{traces}"]
tenant = "ci"

[[evaluators]]
id = "Builtin.TrajectoryInOrderMatch"
min_pass_rate = 0.9

[[evaluators]]
id = "Builtin.ToolSelectionAccuracy"
min_pass_rate = 0.5
"""


def token(sub: str, roles: list[str], ttl_s: int = 600, tenant: str | None = None) -> str:
    claims = {"sub": sub, "roles": roles, "exp": int(time.time()) + ttl_s}
    claims |= {} if tenant is None else {"tenant": tenant}
    return jwt.encode(claims, SECRET, algorithm="HS256")


@dataclass
class World:
    """Everything one console test runs against."""

    root: Path
    config: Path
    gateway: Gateway
    runs: dict[str, int]
    reports: Path
    settings: ConsoleSettings
    threads: list[threading.Thread] = field(default_factory=list)

    def call_waiting_for_approval(self, amount: float = 900) -> dict[str, Any]:
        """Start a caller that waits (``approval="wait"``) for its refund's approval; returns where its result lands."""
        outcome: dict[str, Any] = {}

        def run() -> None:
            try:
                outcome["result"] = self.gateway.call(
                    "refunds.issue",
                    {"order_id": "o-77", "amount": amount},
                    principal=SUPPORT,
                    agent="helpdesk-bot",
                    approval="wait",
                )
            except Exception as error:  # the test reads it
                outcome["error"] = error

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        self.threads.append(thread)
        deadline = time.monotonic() + 30
        while not self.gateway.approvals.list("pending"):
            assert time.monotonic() < deadline, "the approval request never appeared"
            time.sleep(0.05)
        outcome["approval_id"] = self.gateway.approvals.list("pending")[0].id
        return outcome


SUPPORT = {"id": "alice", "roles": ["support"]}


def _write_config(root: Path) -> Path:
    (root / "policies").mkdir()
    (root / "policies" / "support.policy").write_text(POLICY, encoding="utf-8")
    (root / "audit.key").write_text("k1:" + "c" * 48 + "\n", encoding="utf-8")
    config = root / "gateway.toml"
    config.write_text(
        f"""[gateway]
name = "console-test"
policies = ["policies"]
database = "{root / "gw.db"}"
audit_key_file = "audit.key"

[gateway.auth]
algorithms = ["HS256"]
secret_env = "{SECRET_ENV}"
roles_claim = "roles"
tenant_claim = "tenant"
""",
        encoding="utf-8",
    )
    return config


def _eval_reports(root: Path) -> Path:
    """Two runs of a real suite written by ``agentcore eval run --report``, a day apart (the first's recorded times
    moved back a day): the example traces, then a regressed copy whose agent cancels with the wrong tool (so the
    second run has failing targets)."""
    reports = root / "reports"
    original = REPO / "examples" / "evals" / "traces.jsonl"
    regressed = root / "traces-regressed.jsonl"
    sessions = [json.loads(line) for line in original.read_text(encoding="utf-8").splitlines() if line.strip()]
    for span in (s for session in sessions for turn in session["traces"] for s in turn.get("spans", [])):
        if span.get("name") == "cancel_pending_order":
            span["name"] = "modify_pending_order"
    regressed.write_text("".join(json.dumps(session) + "\n" for session in sessions), encoding="utf-8")
    for index, (name, traces) in enumerate((("2026-11-30.json", original), ("2026-12-01.json", regressed))):
        suite = root / f"suite-{index}.toml"
        suite.write_text(SUITE.format(traces=traces), encoding="utf-8")
        done = CliRunner().invoke(cli, ["eval", "run", str(suite), "--report", str(reports / name), "--no-cache"])
        assert done.exit_code == index, done.output  # the regressed run fails its gate
        if index == 0:
            report = json.loads((reports / name).read_text(encoding="utf-8"))
            for key in ("started_at", "finished_at"):
                moment = datetime.datetime.fromisoformat(report["timing"][key]) - datetime.timedelta(days=1)
                report["timing"][key] = moment.isoformat()
            (reports / name).write_text(json.dumps(report), encoding="utf-8")
    return reports


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[World]:
    """A gateway (keyed audit chain) with one allowed and one denied call, two eval runs, and console settings."""
    from agentcore.gateway import ToolDenied
    from agentcore.gateway.mcp.config import load_config

    monkeypatch.setenv(SECRET_ENV, SECRET)
    config = _write_config(tmp_path)
    loaded = load_config(config)
    gw = Gateway(loaded.policies, database=loaded.database, audit_key=loaded.audit_key_file, approval_timeout_s=60)
    runs: dict[str, int] = {}

    @gw.tool(name="crm.lookup")
    def lookup(customer_id: str) -> dict[str, str]:
        runs["crm.lookup"] = runs.get("crm.lookup", 0) + 1
        return {"id": customer_id, "tier": "gold"}

    @gw.tool(name="refunds.issue")
    def refund(order_id: str, amount: float) -> dict[str, Any]:
        runs["refunds.issue"] = runs.get("refunds.issue", 0) + 1
        return {"order_id": order_id, "refunded": amount}

    @gw.tool(name="vault.read")
    def vault(key: str) -> str:
        runs["vault.read"] = runs.get("vault.read", 0) + 1
        return "secret"

    gw.call("crm.lookup", {"customer_id": "c1"}, principal=SUPPORT, agent="helpdesk-bot")
    with pytest.raises(ToolDenied):
        gw.call("vault.read", {"key": "root-password"}, principal=SUPPORT, agent="helpdesk-bot")
    reports = _eval_reports(tmp_path)
    settings = ConsoleSettings.from_gateway_config(config, reports=reports)
    made = World(tmp_path, config, gw, runs, reports, settings)
    yield made
    gw.close()
    for thread in made.threads:
        thread.join(timeout=5)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def served(world: World) -> Iterator[str]:
    """The console of ``world`` served by uvicorn on a free loopback port; its base URL."""
    port = _free_port()
    server = uvicorn.Server(
        uvicorn.Config(create_app(world.settings), host="127.0.0.1", port=port, log_level="warning")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "the console did not start"
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=10)


@pytest.fixture
def browser_page(chromium: Any) -> Iterator[Any]:
    """A fresh page (own cookies) that refuses every request off the loopback console: no network assets."""
    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(15_000)
    external: list[str] = []

    def guard(route: Any) -> None:
        url = route.request.url
        if url.startswith(("http://127.0.0.1:", "data:", "about:")):
            route.continue_()
        else:
            external.append(url)
            route.abort()

    page.route("**/*", guard)
    yield page
    context.close()
    assert not external, f"pages requested external assets: {external}"


@pytest.fixture
def screenshot(tmp_path: Path) -> Callable[[Any, str], Path]:
    """``screenshot(page, name)``: a full-page PNG under tmp (copied to $AGENTCORE_SCREENSHOTS when set)."""
    target = os.environ.get("AGENTCORE_SCREENSHOTS")

    def take(page: Any, name: str) -> Path:
        path = tmp_path / "screenshots" / f"{name}.png"
        path.parent.mkdir(exist_ok=True)
        page.screenshot(path=str(path), full_page=True)
        if target:
            folder = Path(target) if Path(target).is_absolute() else REPO / target
            folder.mkdir(parents=True, exist_ok=True)
            shutil.copy(path, folder / path.name)
        return path

    return take
