"""``agentcore demo``: a short tour that runs for real on this machine."""

from __future__ import annotations

import typer
from rich.table import Table

from agentcore.accel.runtime import Accelerator
from agentcore.cli.output import console

_QUERIES = ["I want my money back for the broken lamp", "Where is my package?"]
_TOOLS = {
    "refunds.issue": "Issue a refund to the customer's original payment method",
    "orders.track": "Tell the customer where their order is and when it will arrive",
    "crm.update_address": "Change the shipping address stored for a customer",
    "catalog.search": "Search the product catalogue by keyword",
}


def demo() -> None:
    """Embed tool descriptions and requests with the real encoder and show which tool each request needs."""
    accelerator = Accelerator()
    names = list(_TOOLS)
    tools = accelerator.embed(list(_TOOLS.values()), tenant="demo")
    queries = accelerator.embed(_QUERIES, tenant="demo", user="alice")
    scores = queries.vectors @ tools.vectors.T
    table = Table("request", "nearest tool", "cosine")
    for query, row in zip(_QUERIES, scores, strict=True):
        best = int(row.argmax())
        table.add_row(query, names[best], f"{row[best]:.3f}")
    console.print(table)
    receipt = queries.receipt
    console.print(
        f"encoder {receipt.model} ({receipt.variant}): {receipt.items} texts, {receipt.tokens} tokens, "
        f"{receipt.cpu_seconds * 1000:.1f} ms on this CPU"
    )


def register(app: typer.Typer) -> None:
    app.command("demo")(demo)
