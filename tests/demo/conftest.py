"""Fixtures of the demo tests: a generated store in SQLite, a governed gateway over it, a real encoder."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agentcore.demo.app import DemoReport, DemoSettings, run_demo
from agentcore.demo.database import RetailDatabase
from agentcore.demo.generator import generate_store
from agentcore.demo.governance import build_gateway
from agentcore.demo.scenarios import templates
from agentcore.gateway import Gateway


@pytest.fixture(scope="session")
def generated() -> RetailDatabase:
    """The default generated store, loaded once; tests that write take ``store`` (a copy)."""
    db = RetailDatabase()
    db.load(generate_store())
    return db


@pytest.fixture
def store(generated: RetailDatabase) -> Iterator[RetailDatabase]:
    copy = generated.copy()
    yield copy
    copy.close()


@pytest.fixture
def gateway(store: RetailDatabase, tmp_path: Path) -> Iterator[Gateway]:
    gw = build_gateway(store, database=str(tmp_path / "agentcore.db"))
    yield gw
    gw.close()


@pytest.fixture(scope="session")
def encoder():  # type: ignore[no-untyped-def]
    """The real fp32 encoder, with no ledger (tests must not write the working directory's database)."""
    from agentcore.accel.runtime import Accelerator

    return Accelerator(ledger=None)


@pytest.fixture(scope="session")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[DemoReport, Path]:
    """One full ``agentcore demo`` (every scenario once) that the report tests read."""
    out = tmp_path_factory.mktemp("demo")
    return run_demo(DemoSettings(sessions=len(templates()), out=out)), out
