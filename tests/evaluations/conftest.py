"""Fixtures for the evaluation tests: one batched, cached Models over the shared real encoder."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from agentcore.evaluations.models import Models


@pytest.fixture(scope="session")
def models(accelerator) -> Models:  # type: ignore[no-untyped-def]
    """Embeddings are cached across every test of the session (the same prototypes recur everywhere)."""
    return Models(accelerator, tenant="tests")


@pytest.fixture(scope="session")
def data_dir(shared_data: Callable[..., Path]) -> Path:
    """The shared labelled data folder (skips, or fails under CI=true, when absent)."""
    return shared_data()
