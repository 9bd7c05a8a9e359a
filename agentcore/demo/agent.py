"""Agents for the retail demo: the :class:`Agent` protocol an application implements, and a scripted agent.

To plug in a real LLM agent, implement ``respond(message, session) -> str``: give the model
``session.tool_schemas``, run each tool call it makes with ``session.call(name, arguments)`` (which goes through
the gateway as the session's principal and returns a :class:`ToolOutcome` instead of raising), feed the outcome
back, and return the model's reply. ``session.memory`` and ``session.customer`` give it the customer's memory.

The :class:`ScriptedAgent` needs no LLM: intent is the nearest tool description (the encoder through accel),
arguments come from entity patterns, the store (through read tools) and the customer's memory. It does *not*
second-guess policy: asked to do something forbidden, it tries, and the gateway says no. That is the point.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import partial
from typing import Any, Protocol

from pydantic import BaseModel

from agentcore.accel.runtime import Accelerator
from agentcore.demo import entities
from agentcore.demo.intents import IntentClassifier
from agentcore.demo.session import AgentSession, ToolOutcome
from agentcore.demo.tools import tool_schemas

WRITES = (
    "cancel_pending_order", "modify_pending_order_address", "modify_pending_order_payment",
    "modify_pending_order_items", "return_delivered_order_items", "exchange_delivered_order_items",
    "modify_user_address",
)  # fmt: skip
PAYS = ("modify_pending_order_payment", "modify_pending_order_items", "return_delivered_order_items",
        "exchange_delivered_order_items")  # fmt: skip
#: what the customer is told when a rule of the demo's policy bundle denies a call
EXPLANATIONS = {
    "authenticate-first": "I first need to verify who you are: please give me your email, or your name and zip code.",
    "one-customer-per-conversation": "I can only help one customer per conversation.",
    "other-account": "I can only act on your own account.",
    "other-orders": "I can only help with your own orders.",
    "own-payment-method": "That payment method is not one of yours.",
    "pending-orders-only": "Only pending orders can be cancelled or modified.",
    "delivered-orders-only": "Only delivered orders can be returned or exchanged.",
    "refund-to-original-or-gift-card": "Refunds go to the original payment method or to one of your gift cards.",
    "new-payment-method-differs": "The new payment method must differ from the current one.",
    "gift-card-covers-total": "That gift card's balance does not cover the order total.",
    "cancellations-per-day": "You have reached today's limit of cancellations.",
}


class Agent(Protocol):
    """What the demo needs from an agent: answer one customer message, calling tools through the session."""

    def respond(self, message: str, session: AgentSession) -> str: ...


class Plan(BaseModel):
    """A tool call the agent has worked out (and, for writes, will make once the customer confirms)."""

    tool: str
    arguments: dict[str, Any]
    summary: str


class NeedMore(Exception):
    """The message lacks something the call needs; the text asks the customer for it."""


class ScriptedAgent:
    """A deterministic agent: nearest-tool intent via the encoder, arguments via entity patterns and memory."""

    def __init__(self, accelerator: Accelerator, *, tenant: str, products: tuple[str, ...] = ()) -> None:
        self.intents = IntentClassifier(accelerator, tool_schemas(), tenant=tenant, products=products)
        self.pending: dict[str, Plan] = {}

    def respond(self, message: str, session: AgentSession) -> str:
        plan = self.pending.pop(session.session_id, None)
        if plan is not None and entities.YES.search(message):
            outcome = session.call(plan.tool, plan.arguments)
            self._remember(outcome, session)
            return self._describe(outcome)
        if plan is not None and entities.NO.search(message):
            return "All right, I have not changed anything."
        if plan is None and (entities.YES.search(message) or entities.NO.search(message)):
            return "There is nothing waiting for your confirmation. What can I do for you?"
        intent = self.intents.classify(message, user=session.customer)
        try:
            plan = self._plan(intent.tool, message, session)
        except NeedMore as need:
            return str(need)
        if plan.tool in WRITES:
            self.pending[session.session_id] = plan
            return f"To confirm: {plan.summary}. Shall I go ahead (yes/no)?"
        return self._describe(session.call(plan.tool, plan.arguments))

    # ---- planning: arguments for the chosen tool ---------------------------------------------------------------
    def _plan(self, tool: str, message: str, session: AgentSession) -> Plan:
        builders: dict[str, Callable[[str, AgentSession], Plan]] = {
            "find_user_id_by_email": self._by_email, "find_user_id_by_name_zip": self._by_name,
            "get_user_details": self._account, "get_order_details": self._order_status,
            "list_all_product_types": lambda m, s: Plan(tool=tool, arguments={}, summary="the catalogue"),
            "get_product_details": self._product, "cancel_pending_order": self._cancel,
            "modify_pending_order_address": self._order_address, "modify_user_address": self._user_address,
            "modify_pending_order_payment": self._payment, "return_delivered_order_items": self._return,
            "exchange_delivered_order_items": partial(self._swap, "exchange_delivered_order_items"),
            "modify_pending_order_items": partial(self._swap, "modify_pending_order_items"),
            "calculate": self._calculate,
            "transfer_to_human_agents": lambda m, s: Plan(tool=tool, arguments={"summary": m}, summary="transfer"),
        }  # fmt: skip
        return builders[tool](message, session)

    def _by_email(self, message: str, session: AgentSession) -> Plan:
        email = _need(entities.first(entities.EMAIL, message), "What is the email address on your account?")
        return Plan(tool="find_user_id_by_email", arguments={"email": email}, summary=f"look up {email}")

    def _by_name(self, message: str, session: AgentSession) -> Plan:
        found = _need(entities.name_and_zip(message), "Please tell me your first name, last name and zip code.")
        return Plan(tool="find_user_id_by_name_zip", arguments=found, summary="look up by name and zip")

    def _account(self, message: str, session: AgentSession) -> Plan:
        user_id = entities.first(entities.USER_ID, message) or _need(session.customer, _WHO)
        return Plan(tool="get_user_details", arguments={"user_id": user_id}, summary=f"account {user_id}")

    def _order_status(self, message: str, session: AgentSession) -> Plan:
        order_id = _need(entities.first(entities.ORDER_ID, message), _WHICH_ORDER)
        return Plan(tool="get_order_details", arguments={"order_id": order_id}, summary=f"order {order_id}")

    def _product(self, message: str, session: AgentSession) -> Plan:
        catalogue = self._read(session, "list_all_product_types", {})
        names = entities.mentioned_names(message, list(catalogue or {}))
        name = _need(names[0] if names else None, "Which product would you like to know about?")
        return Plan(tool="get_product_details", arguments={"product_id": catalogue[name]}, summary=name)

    def _cancel(self, message: str, session: AgentSession) -> Plan:
        order_id = _need(entities.first(entities.ORDER_ID, message), _WHICH_ORDER)
        reason = _need(entities.cancel_reason(message), "Why cancel: 'no longer needed' or 'ordered by mistake'?")
        args = {"order_id": order_id, "reason": reason}
        return Plan(tool="cancel_pending_order", arguments=args, summary=f"cancel order {order_id} ({reason})")

    def _order_address(self, message: str, session: AgentSession) -> Plan:
        order_id = _need(entities.first(entities.ORDER_ID, message), _WHICH_ORDER)
        address = self._address(message, session)
        return Plan(tool="modify_pending_order_address", arguments={"order_id": order_id, **address},
                    summary=f"ship order {order_id} to {_one_line(address)}")  # fmt: skip

    def _user_address(self, message: str, session: AgentSession) -> Plan:
        user_id = entities.first(entities.USER_ID, message) or _need(session.customer, _WHO)
        address = self._address(message, session)
        return Plan(tool="modify_user_address", arguments={"user_id": user_id, **address},
                    summary=f"change the default address of {user_id} to {_one_line(address)}")  # fmt: skip

    def _payment(self, message: str, session: AgentSession) -> Plan:
        order_id = _need(entities.first(entities.ORDER_ID, message), _WHICH_ORDER)
        method = self._payment_method(message, session, order_id)
        return Plan(tool="modify_pending_order_payment", arguments={"order_id": order_id, "payment_method_id": method},
                    summary=f"pay order {order_id} with {method}")  # fmt: skip

    def _return(self, message: str, session: AgentSession) -> Plan:
        order_id = _need(entities.first(entities.ORDER_ID, message), _WHICH_ORDER)
        order = _need(self._read(session, "get_order_details", {"order_id": order_id}), _CANNOT_READ)
        items = _need(_items(message, order), "Which items of that order would you like to return?")
        method = self._payment_method(message, session, order_id)
        args = {"order_id": order_id, "item_ids": [i["item_id"] for i in items], "payment_method_id": method}
        names = ", ".join(i["name"] for i in items)
        return Plan(tool="return_delivered_order_items", arguments=args,
                    summary=f"return {names} from order {order_id}, refund to {method}")  # fmt: skip

    def _swap(self, tool: str, message: str, session: AgentSession) -> Plan:
        """Exchange (delivered) or modify (pending) items: same product, the options the customer names."""
        order_id = _need(entities.first(entities.ORDER_ID, message), _WHICH_ORDER)
        order = _need(self._read(session, "get_order_details", {"order_id": order_id}), _CANNOT_READ)
        items = _need(_items(message, order), "Which items would you like to change?")
        new_ids = []
        for item in items:
            product = _need(
                self._read(session, "get_product_details", {"product_id": item["product_id"]}), _CANNOT_READ
            )
            new_ids.append(
                _need(choose_variant(message, item, product), f"Which {item['name']} option would you like instead?")
            )
        method = self._payment_method(message, session, order_id)
        args = {"order_id": order_id, "item_ids": [i["item_id"] for i in items], "new_item_ids": new_ids,
                "payment_method_id": method}  # fmt: skip
        names = ", ".join(i["name"] for i in items)
        summary = f"swap {names} in order {order_id} for items {', '.join(new_ids)}, difference via {method}"
        return Plan(tool=tool, arguments=args, summary=summary)

    def _calculate(self, message: str, session: AgentSession) -> Plan:
        expression = _need(entities.first(entities.ARITHMETIC, message), "What would you like me to calculate?")
        return Plan(tool="calculate", arguments={"expression": expression}, summary=expression)

    # ---- argument sources ---------------------------------------------------------------------------------------
    def _read(self, session: AgentSession, tool: str, arguments: dict[str, Any]) -> Any:
        """A read through the gateway, cached per session (reads are audited like every other call)."""
        key = f"{tool}:{json.dumps(arguments, sort_keys=True)}"
        if key not in session.cache:
            outcome = session.call(tool, arguments)
            if outcome.status != "ok":
                raise NeedMore(self._describe(outcome))
            session.cache[key] = outcome.result
        return session.cache[key]

    def _address(self, message: str, session: AgentSession) -> dict[str, str]:
        address = entities.address(message)
        if (
            address is None
            and session.customer
            and session.memory
            and entities.mentions_any(message, entities.REMEMBERED)
        ):
            remembered = session.memory.recall(session.customer, "address", message)
            address = json.loads(remembered) if remembered else None
        return _need(address, "What is the full address (street, city, state and zip code)?")

    def _payment_method(self, message: str, session: AgentSession, order_id: str) -> str:
        """Explicit id > 'original payment' > remembered preference > the kind of method named."""
        explicit = entities.first(entities.PAYMENT_ID, message)
        if explicit:
            return explicit
        if entities.mentions_any(message, entities.ORIGINAL_PAYMENT):
            order = self._read(session, "get_order_details", {"order_id": order_id})
            return str(order["payment_history"][0]["payment_method_id"])
        customer = _need(session.customer, _WHO)
        if session.memory is not None and entities.mentions_any(message, entities.REMEMBERED):
            remembered = session.memory.recall(customer, "payment_method", message)
            if remembered:
                return str(remembered)
        kind = _need(entities.payment_kind(message), "Which payment method should I use?")
        account = self._read(session, "get_user_details", {"user_id": customer})
        methods = [m for m in account["payment_methods"].values() if m["source"] == kind]
        return str(_need(methods[0]["id"] if methods else None, f"You have no {kind.replace('_', ' ')} on file."))

    # ---- replies and memory -------------------------------------------------------------------------------------
    def _describe(self, outcome: ToolOutcome) -> str:
        if outcome.status == "denied":
            told = [EXPLANATIONS.get(rule, "") for rule in outcome.rules]
            return "I'm sorry, I can't do that. " + (" ".join(t for t in told if t) or "It is not permitted.")
        if outcome.status == "needs_approval":
            return "This needs a supervisor's approval; I have sent the request and will let you know."
        if outcome.status in ("error", "invalid"):
            return f"That did not work: {outcome.message}"
        return result_text(outcome.tool, outcome.result)

    def _remember(self, outcome: ToolOutcome, session: AgentSession) -> None:
        if outcome.status != "ok" or session.customer is None or session.memory is None:
            return
        if outcome.tool in PAYS:
            method = outcome.arguments["payment_method_id"]
            text = f"Prefers {method.rsplit('_', 1)[0].replace('_', ' ')} {method} for refunds and payments"
            session.memory.remember(session.customer, "payment_method", method, text, session.session_id)
        if outcome.tool == "modify_user_address":
            address = {k: outcome.arguments[k] for k in ("address1", "address2", "city", "state", "country", "zip")}
            session.memory.remember(session.customer, "address", json.dumps(address),
                                    f"Default shipping address: {_one_line(address)}", session.session_id)  # fmt: skip


_WHO = "First, please tell me your email, or your name and zip code."
_WHICH_ORDER = "Which order is it? Order ids look like #W0000000."
_CANNOT_READ = "I could not read that."


def _need(value: Any, question: str) -> Any:
    if value is None or value == [] or value == "":
        raise NeedMore(question)
    return value


def _one_line(address: dict[str, str]) -> str:
    parts = [address["address1"], address["address2"], address["city"], f"{address['state']} {address['zip']}"]
    return ", ".join(p for p in parts if p)


def _items(message: str, order: dict[str, Any]) -> list[dict[str, Any]]:
    """The order's items the customer names (by product name), or every item for 'everything'/'all items'."""
    if entities.mentions_any(message, ("everything", "all items", "all the items", "whole order")):
        return list(order["items"])
    named = entities.mentioned_names(message, sorted({item["name"] for item in order["items"]}))
    return [item for item in order["items"] if item["name"] in named]


def choose_variant(message: str, item: dict[str, Any], product: dict[str, Any]) -> str | None:
    """The available variant matching the option values the customer names, otherwise closest to the old item."""
    values = sorted({v for variant in product["variants"].values() for v in variant["options"].values()})
    wanted = [v for v in entities.mentioned_names(message, values) if v not in item["options"].values()]
    if not wanted:
        return None
    best: tuple[int, int, str] | None = None
    for variant in product["variants"].values():
        if not variant["available"] or variant["item_id"] == item["item_id"]:
            continue
        options = variant["options"]
        hits = sum(value in options.values() for value in wanted)
        kept = sum(options.get(k) == v for k, v in item["options"].items())
        if hits and (best is None or (hits, kept) > best[:2]):
            best = (hits, kept, variant["item_id"])
    return best[2] if best else None


def result_text(tool: str, result: Any) -> str:
    """A short customer-facing sentence for a successful call."""
    if tool in ("find_user_id_by_email", "find_user_id_by_name_zip"):
        return "Thank you, I have found your account. How can I help?"
    if isinstance(result, dict) and "order_id" in result:
        items = ", ".join(i["name"] for i in result["items"])
        total = sum(i["price"] for i in result["items"])
        return f"Order {result['order_id']} is {result['status']}: {items} (total ${total:,.2f})."
    if tool in ("get_user_details", "modify_user_address") and isinstance(result, dict):
        address = result["address"]
        methods = ", ".join(result["payment_methods"])
        return f"Your address is {_one_line(address)}; your payment methods are {methods}."
    if tool == "list_all_product_types":
        return f"We sell {len(result)} kinds of products: " + ", ".join(sorted(result)) + "."
    if tool == "get_product_details":
        available = [v for v in result["variants"].values() if v["available"]]
        return f"The {result['name']} comes in {len(result['variants'])} options; {len(available)} are in stock."
    if tool == "calculate":
        return f"That comes to {result}."
    if tool == "transfer_to_human_agents":
        return "I am transferring you to a human agent now."
    return "Done."
