"""Fixtures for the accel tests: SICK sentence pairs."""

from __future__ import annotations

import csv
from collections.abc import Callable
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def sick_pairs(shared_data: Callable[..., Path]) -> list[tuple[str, str, float]]:
    """SICK sentence pairs with human relatedness (CC BY-NC-SA: test data only, never shipped)."""
    with shared_data("sick", "sick.tsv").open(newline="") as handle:
        rows = csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE)
        return [(row["sentence_A"], row["sentence_B"], float(row["relatedness_score"])) for row in rows]
