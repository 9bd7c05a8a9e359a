"""The JSON report (schema ``agentcore.eval-report/1``): byte-identical for identical input.

Per-result usage keeps model, items and tokens; measured CPU seconds vary run to run, so they are left out
unless ``timings=True``.
"""

from __future__ import annotations

import json

from agentcore.evaluations.outcome import Outcome


def render_json(outcome: Outcome, *, timings: bool = False) -> str:
    data = outcome.model_dump(mode="json")
    if not timings:
        for result in data["results"]:
            for usage in result["usage"]:
                usage.pop("cpu_seconds", None)
    return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
