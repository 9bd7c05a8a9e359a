"""The JSON report (schema ``agentcore.eval-report/1``): byte-identical for identical input.

Per-result usage keeps model, items and tokens; measured CPU seconds vary run to run, so they are left out
unless ``timings=True``. The CLI adds the run's start and finish (``timing``, versioned on its own), which differ
by nature; everything else is the same for the same input.
"""

from __future__ import annotations

import json

from agentcore.evaluations.outcome import Outcome

OPTIONAL_FIELDS = ("timing", "llm_cost")


def render_json(outcome: Outcome, *, timings: bool = False, ascii_only: bool = False) -> str:
    """The report; ``ascii_only`` writes each non-ASCII character as ``\\uXXXX`` (the same data), as ``--json`` prints
    it so no bidi override in a trace reaches a terminal."""
    data = outcome.model_dump(mode="json")
    for optional in OPTIONAL_FIELDS:  # additive fields: a report without them reads as it did before they existed
        if data[optional] is None:
            del data[optional]
    if not timings:
        for result in data["results"]:
            for usage in result["usage"]:
                usage.pop("cpu_seconds", None)
    return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=ascii_only) + "\n"
