"""Intent by nearest tool: a message goes to the tool whose description or example requests it embeds closest to.

The texts are embedded once per agent with the real encoder through accel; each message costs one more embedding
(charged to the customer), which is the model work the demo's cost summary reports.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

from pydantic import BaseModel

from agentcore.accel.runtime import Accelerator
from agentcore.demo.entities import mask


class Intent(BaseModel):
    """The chosen tool, its cosine similarity, and the runner-up (how clear the choice was)."""

    tool: str
    score: float
    runner_up: str
    margin: float


def _examples() -> dict[str, list[str]]:
    text = resources.files("agentcore.demo").joinpath("data/intents.json").read_text(encoding="utf-8")
    return dict(json.loads(text))


class IntentClassifier:
    """Nearest-tool intent over the tool schemas' descriptions plus a few example requests per tool.

    ``products`` are the store's product names: masked like ids, so "exchange the Jigsaw Puzzle" reads as
    "exchange the item" and the product does not pull the intent towards whatever mentions puzzles.
    """

    def __init__(
        self,
        accelerator: Accelerator,
        schemas: list[dict[str, Any]],
        *,
        tenant: str,
        products: tuple[str, ...] = (),
        skip: tuple[str, ...] = ("think",),
    ) -> None:
        self.accelerator = accelerator
        self.tenant = tenant
        self.products = products
        examples = _examples()
        self.labels: list[str] = []
        texts: list[str] = []
        for schema in schemas:
            spec = schema["function"]
            if spec["name"] in skip:
                continue
            for text in [spec["description"], *examples.get(spec["name"], [])]:
                self.labels.append(spec["name"])
                texts.append(mask(text))
        self.tools = sorted(set(self.labels))
        self.vectors = accelerator.embed(texts, tenant=tenant, agent="scripted-agent").vectors

    def classify(self, message: str, *, user: str | None = None) -> Intent:
        query = self.accelerator.embed(
            [mask(message, self.products)], tenant=self.tenant, agent="scripted-agent", user=user
        ).vectors[0]
        similarity = self.vectors @ query
        best: dict[str, float] = {}
        for label, score in zip(self.labels, similarity, strict=True):
            best[label] = max(best.get(label, -1.0), float(score))
        ranked = sorted(best.items(), key=lambda item: item[1], reverse=True)
        (tool, score), (runner_up, second) = ranked[0], ranked[1]
        return Intent(tool=tool, score=round(score, 4), runner_up=runner_up, margin=round(score - second, 4))
