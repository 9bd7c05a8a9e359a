"""Put the retail tools behind a :class:`Gateway`: schemas, the policy bundle, and the entity resolvers.

The policies ask about orders and payment methods (``order(order_id).status``); the resolvers answer from the
same SQLite rows the tools act on, so a decision and the action it allows see one truth.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

from agentcore.demo.database import RetailDatabase
from agentcore.demo.tools import RetailTools, tool_schemas
from agentcore.gateway import Gateway
from agentcore.gateway.gateway import Mode
from agentcore.policies.model import Principal

APPROVER = Principal(id="supervisor.dana", roles=frozenset({"supervisor"}))


def policy_dir() -> Path:
    """The demo's policy bundle, shipped inside the package."""
    return Path(str(resources.files("agentcore.demo").joinpath("policies")))


def customer(user_id: str, how: str) -> Principal:
    """The principal of an authenticated customer; ``how`` records the lookup that authenticated them."""
    return Principal(id=user_id, roles=frozenset({"customer"}), attributes={"authenticated_by": how})


def guest(session_id: str) -> Principal:
    """Who the agent acts for before the customer is identified: no roles, so only lookups are allowed."""
    return Principal(id=f"guest-{session_id}")


def order_facts(db: RetailDatabase, order_id: Any) -> dict[str, Any] | None:
    """What policies may ask about an order: owner, status, total paid and the original payment method."""
    order = db.order(str(order_id))
    if order is None:
        return None
    paid = [p for p in order.payment_history if p.transaction_type == "payment"]
    return {
        "user_id": order.user_id,
        "status": order.status,
        "total": round(sum(item.price for item in order.items), 2),
        "paid_with": paid[0].payment_method_id if paid else None,
    }


def payment_method_facts(db: RetailDatabase, method_id: Any) -> dict[str, Any] | None:
    """Owner, kind and (for gift cards) balance of a payment method."""
    rows = db.query("SELECT user_id, source, balance FROM payment_methods WHERE id = ? ORDER BY seq", str(method_id))
    if not rows:
        return None
    return {"user_id": rows[0]["user_id"], "source": rows[0]["source"], "balance": rows[0]["balance"]}


def build_gateway(
    db: RetailDatabase, *, database: str, policies: Path | None = None, mode: Mode = "enforce"
) -> Gateway:
    """A gateway over the 16 tools (strict JSON schemas) with the retail policies and resolvers."""
    gateway = Gateway(policies or policy_dir(), database=database, reload=False, name="retail", mode=mode)
    functions = RetailTools(db).functions()
    for schema in tool_schemas():
        spec = schema["function"]
        strict = {**spec["parameters"], "additionalProperties": False}
        gateway.tool(functions[spec["name"]], name=spec["name"], description=spec["description"], schema=strict)
    gateway.resolver("order")(lambda order_id: order_facts(db, order_id))
    gateway.resolver("payment_method")(lambda method_id: payment_method_facts(db, method_id))
    return gateway
