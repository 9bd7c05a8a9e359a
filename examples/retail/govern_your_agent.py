"""Put your own agent behind the retail demo's gateway: every tool call is checked by policy, then audited.

Run from the repository root: ``.venv/bin/python examples/retail/govern_your_agent.py``. An LLM agent would make
the same ``session.call`` for each tool call the model asks for, and show the model each outcome.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from agentcore.demo.database import RetailDatabase
from agentcore.demo.generator import generate_store
from agentcore.demo.governance import APPROVER, build_gateway
from agentcore.demo.session import AgentSession


def main() -> None:
    folder = Path(tempfile.mkdtemp(prefix="agentcore-retail-"))
    store = RetailDatabase(folder / "retail.db")
    store.load(generate_store(seed=7))
    gateway = build_gateway(store, database=str(folder / "agentcore.db"))
    customer = store.query("SELECT user_id, email FROM users ORDER BY seq LIMIT 1")[0]
    user = store.user(customer["user_id"])
    assert user is not None
    pending = [o for o in user.orders if (order := store.order(o)) is not None and order.status == "pending"]

    session = AgentSession("example-1", gateway, tenant="example")
    steps = [
        ("get_order_details", {"order_id": user.orders[0]}),  # denied: nobody is identified yet
        ("find_user_id_by_email", {"email": customer["email"]}),  # identifies the customer
        ("get_order_details", {"order_id": user.orders[0]}),  # allowed now
        ("cancel_pending_order", {"order_id": pending[0] if pending else user.orders[0], "reason": "no longer needed"}),
    ]
    for tool, arguments in steps:
        outcome = session.call(tool, arguments)
        if outcome.status == "needs_approval":
            outcome = session.approve(outcome, APPROVER, note="example supervisor")
        print(f"{tool}: {outcome.status} {outcome.rules or ''}")
    print(f"audit chain: {gateway.audit.verify()}")
    gateway.close()


if __name__ == "__main__":
    main()
