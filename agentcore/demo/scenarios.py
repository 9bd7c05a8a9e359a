"""Scenario scripts: conversation templates (package data) filled with customers and orders from the store.

Each template names what it needs (``pending_order``, ``card_paid_delivered``, ...); a picker finds the first
unused customer in the store that has it, so the same seed gives the same conversations, and a larger
``--sessions`` walks through more customers. Every script states the outcomes it expects, which the demo checks.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from importlib import resources
from typing import Any, TypeVar

from pydantic import BaseModel, Field

from agentcore.demo.agent import choose_variant
from agentcore.demo.database import RetailDatabase
from agentcore.demo.entities import mentioned_names
from agentcore.demo.records import Order, User
from agentcore.demo.session import Status, ToolOutcome

T = TypeVar("T")
SMALL = 1000.0  # orders at most this large need no approval to refund
#: (street, second line, city, state, zip) of the addresses customers move to
NEW_ADDRESSES = (
    ("Lakeview Drive", "Suite 12", "Seattle", "WA", "98101"),
    ("Maple Avenue", "Floor 3", "Boston", "MA", "02110"),
    ("Cedar Street", "Apt 4", "Austin", "TX", "78701"),
)


class Expectation(BaseModel):
    """An outcome the script expects, in order: this tool, this status, and optionally the rule and method."""

    tool: str
    status: Status
    rule: str | None = None
    payment_method_id: str | None = None

    def matches(self, outcome: ToolOutcome) -> bool:
        if outcome.tool != self.tool or outcome.status != self.status:
            return False
        if self.rule is not None and self.rule not in outcome.rules:
            return False
        return self.payment_method_id is None or outcome.arguments.get("payment_method_id") == self.payment_method_id


class ExpectedTool(BaseModel):
    """A call a correct agent makes in answer to a turn, with its exact arguments (placeholders until filled)."""

    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class Turn(BaseModel):
    """What the customer says, and the calls a correct agent makes in answer (the evaluation's ground truth)."""

    say: str
    tools: list[ExpectedTool] = Field(default_factory=list)

    def filled(self, facts: dict[str, str]) -> Turn:
        tools = [ExpectedTool(name=t.name, arguments=_fill_value(t.arguments, facts)) for t in self.tools]
        return Turn(say=self.say.format(**facts), tools=tools)


class Template(BaseModel):
    """A conversation to fill; ``follows`` names an earlier template whose customer comes back in this one."""

    id: str
    title: str
    needs: str
    follows: str | None = None
    turns: list[Turn]
    expect: list[Expectation]


class Script(BaseModel):
    """One conversation to play: a template filled for one customer."""

    session_id: str
    template: str
    title: str
    customer: str
    turns: list[Turn]
    expect: list[Expectation]
    facts: dict[str, str] = Field(default_factory=dict)

    def check(self, outcomes: list[ToolOutcome]) -> list[str]:
        """Expectations not met, in order (an empty list means the conversation went as scripted)."""
        missing, position = [], 0
        for expectation in self.expect:
            found = next((i for i in range(position, len(outcomes)) if expectation.matches(outcomes[i])), None)
            if found is None:
                what = f" ({expectation.rule})" if expectation.rule else ""
                missing.append(f"{expectation.tool} -> {expectation.status}{what}")
            else:
                position = found + 1
        return missing


def templates() -> list[Template]:
    text = resources.files("agentcore.demo").joinpath("data/scenarios.json").read_text(encoding="utf-8")
    return [Template.model_validate(item) for item in json.loads(text)]


class ScenarioError(LookupError):
    """The store has no customer left that a scenario needs (a store too small for that many sessions)."""


Need = Callable[[str, User, Template, dict[str, str]], dict[str, str] | None]


class Picker:
    """Finds customers and orders for each template's ``needs``; never uses a customer twice.

    A need gets the customer and, for a template that ``follows`` another, the facts of that earlier conversation.
    A customer is only picked for a template if they also have what its followers will need.
    """

    def __init__(self, db: RetailDatabase, all_templates: list[Template]) -> None:
        self.db = db
        self.templates = all_templates
        self.users: dict[str, User] = {}
        for row in db.query("SELECT user_id FROM users ORDER BY seq"):
            self.users[row["user_id"]] = _present(db.user(row["user_id"]), row["user_id"])
        self.orders = {o: _present(db.order(o), o) for user in self.users.values() for o in user.orders}
        self.used: set[str] = set()
        self.leads: dict[str, dict[str, str]] = {}
        self.needs: dict[str, Need] = {
            "any_customer": self._any_customer, "any_order": self._any_order,
            "pending_order": lambda uid, u, t, lead: self._order_of(u, "pending"),
            "delivered_order": lambda uid, u, t, lead: self._order_of(u, "delivered"),
            "pending_high_value": self._high_value, "gift_card_customer": self._gift_card_customer,
            "exchange_with_gift_card": self._exchange_with_gift_card, "pending_swap": self._pending_swap,
            "two_customers": self._two_customers, "card_paid_delivered": self._card_paid,
            "poor_gift_card": self._poor_gift_card, "three_pending": self._three_pending,
            "ship_to_new_address": self._ship_to_new_address,
        }  # fmt: skip
        for template in all_templates:
            if template.needs not in self.needs:
                raise ScenarioError(f"scenario {template.id!r} needs {template.needs!r}, which no picker provides")

    def fill(self, template: Template, index: int) -> Script:
        if template.follows is not None:
            lead = self.leads.pop(template.follows, None)
            if lead is None:
                raise ScenarioError(f"scenario {template.id!r} must come after a {template.follows!r} scenario")
            user_id = lead["user_id"]
            found = self.needs[template.needs](user_id, self.users[user_id], template, lead)
            if found is None:
                raise ScenarioError(f"the customer of {template.follows!r} lacks what {template.id!r} needs")
            return self._script(template, index, user_id, found)
        followers = [t for t in self.templates if t.follows == template.id]
        for user_id, user in self.users.items():
            found = None if user_id in self.used else self.needs[template.needs](user_id, user, template, {})
            if found is None:
                continue
            lead = {**_identity(user_id, user, index), **found}
            if all(self.needs[f.needs](user_id, user, f, lead) is not None for f in followers):
                self.used.add(user_id)
                if followers:
                    self.leads[template.id] = lead
                return self._script(template, index, user_id, found)
        raise ScenarioError(
            f"no customer left for scenario {template.id!r} ({template.needs}): "
            "generate a bigger store or play fewer sessions"
        )

    def _script(self, template: Template, index: int, user_id: str, found: dict[str, str]) -> Script:
        facts = {**_identity(user_id, self.users[user_id], index), **found}
        return Script(
            session_id=f"s{index:03d}-{template.id}",
            template=template.id,
            title=template.title,
            customer=user_id,
            turns=[turn.filled(facts) for turn in template.turns],
            expect=[
                e.model_copy(update={"payment_method_id": _fill(e.payment_method_id, facts)}) for e in template.expect
            ],
            facts=facts,
        )

    # ---- needs --------------------------------------------------------------------------------------------------
    def _orders(self, user: User, status: str, *, small: bool = True) -> list[Order]:
        found = [self.orders[o] for o in user.orders if self.orders[o].status == status]
        return [o for o in found if (_total(o) <= SMALL) == small]

    def _any_customer(
        self, user_id: str, user: User, template: Template, lead: dict[str, str]
    ) -> dict[str, str] | None:
        items = [item for order_id in user.orders for item in self.orders[order_id].items]
        if len(items) < 2:
            return None
        return {"product": items[0].name, "product_id": items[0].product_id, "price_a": f"{items[0].price:.2f}",
                "price_b": f"{items[1].price:.2f}"}  # fmt: skip

    def _any_order(self, user_id: str, user: User, template: Template, lead: dict[str, str]) -> dict[str, str] | None:
        return {"order_id": user.orders[0]} if user.orders else None

    def _order_of(self, user: User, status: str) -> dict[str, str] | None:
        orders = self._orders(user, status)
        return {"order_id": orders[0].order_id, "item": orders[0].items[0].name} if orders else None

    def _high_value(self, user_id: str, user: User, template: Template, lead: dict[str, str]) -> dict[str, str] | None:
        orders = self._orders(user, "pending", small=False)
        return {"order_id": orders[0].order_id} if orders else None

    def _gift_card_customer(
        self, user_id: str, user: User, template: Template, lead: dict[str, str]
    ) -> dict[str, str] | None:
        cards = [m for m in user.payment_methods.values() if m.source == "gift_card"]
        delivered = self._orders(user, "delivered")
        if not cards or not delivered:
            return None
        item = delivered[0].items[0]
        return {"order_id": delivered[0].order_id, "item": item.name, "item_id": item.item_id, "gift_card": cards[0].id}

    def _exchange_with_gift_card(
        self, user_id: str, user: User, template: Template, lead: dict[str, str]
    ) -> dict[str, str] | None:
        """Another delivered order of the customer, with a swap the remembered gift card can pay for."""
        card = user.payment_methods.get(lead.get("gift_card", ""))
        if card is None:
            return None
        for order in self._orders(user, "delivered"):
            if order.order_id != lead.get("order_id"):
                swap = self._swap(user_id, user, template, order, card.balance or 0.0)
                if swap is not None:
                    return {**swap, "gift_card": card.id}
        return None

    def _ship_to_new_address(
        self, user_id: str, user: User, template: Template, lead: dict[str, str]
    ) -> dict[str, str] | None:
        """A pending order to send to the address the customer moved to in the conversation this one follows."""
        found = self._order_of(user, "pending")
        moved: dict[str, str] = {k: lead[k] for k in ("address1", "address2", "city", "state", "new_zip") if k in lead}
        return {**found, **moved} if found and len(moved) == 5 else None

    def _pending_swap(
        self, user_id: str, user: User, template: Template, lead: dict[str, str]
    ) -> dict[str, str] | None:
        for order in self._orders(user, "pending"):
            method = user.payment_methods.get(order.payment_history[0].payment_method_id)
            if method is not None and method.source != "gift_card":
                swap = self._swap(user_id, user, template, order, 0.0)
                if swap is not None:
                    return {**swap, "paid_with": method.id}
        return None

    def _swap(self, user_id: str, user: User, template: Template, order: Order, budget: float) -> dict[str, str] | None:
        """An item of ``order`` and an option value whose variant the agent will pick, within ``budget``."""
        for item in order.items:
            product = self.db.product(item.product_id)
            assert product is not None
            values = sorted({v for variant in product.variants.values() for v in variant.options.values()})
            for value in values:
                if value in item.options.values():
                    continue
                facts = {
                    **_identity(user_id, user, 0),
                    "order_id": order.order_id,
                    "item": item.name,
                    "new_value": value,
                }
                message = template.turns[1].say.format(**facts)
                chosen = choose_variant(message, item.model_dump(), product.model_dump())
                if chosen is None or _mentioned_items(message, order) != [item.name]:
                    continue
                if product.variants[chosen].price - item.price <= budget:
                    return {"order_id": order.order_id, "item": item.name, "item_id": item.item_id,
                            "product_id": item.product_id, "new_value": value, "new_item_id": chosen}  # fmt: skip
        return None

    def _two_customers(
        self, user_id: str, user: User, template: Template, lead: dict[str, str]
    ) -> dict[str, str] | None:
        for other_id, other in self.users.items():
            if other_id == user_id or other_id in self.used:
                continue
            pending = self._orders(other, "pending")
            if pending:
                return {"other_order_id": pending[0].order_id, "other_email": other.email}
        return None

    def _card_paid(self, user_id: str, user: User, template: Template, lead: dict[str, str]) -> dict[str, str] | None:
        paypal = [m.id for m in user.payment_methods.values() if m.source == "paypal"]
        if not paypal:
            return None
        for order in self._orders(user, "delivered"):
            if order.payment_history[0].payment_method_id.startswith("credit_card"):
                return {"order_id": order.order_id, "item": order.items[0].name, "item_id": order.items[0].item_id,
                        "paypal": paypal[0]}  # fmt: skip
        return None

    def _poor_gift_card(
        self, user_id: str, user: User, template: Template, lead: dict[str, str]
    ) -> dict[str, str] | None:
        cards = [m for m in user.payment_methods.values() if m.source == "gift_card"]
        for order in self._orders(user, "pending"):
            paid_with = order.payment_history[0].payment_method_id
            if cards and not paid_with.startswith("gift_card") and (cards[0].balance or 0.0) < _total(order):
                return {"order_id": order.order_id, "gift_card": cards[0].id}
        return None

    def _three_pending(
        self, user_id: str, user: User, template: Template, lead: dict[str, str]
    ) -> dict[str, str] | None:
        orders = self._orders(user, "pending")
        if len(orders) < 3:
            return None
        return {"order_id": orders[0].order_id, "order_id_2": orders[1].order_id, "order_id_3": orders[2].order_id}


def scripts(db: RetailDatabase, sessions: int) -> list[Script]:
    """``sessions`` scripts, walking through the templates in order (again with new customers past the end)."""
    if sessions < 1:
        raise ValueError("the demo needs at least one session")
    all_templates = templates()
    picker = Picker(db, all_templates)
    return [picker.fill(all_templates[i % len(all_templates)], i) for i in range(sessions)]


def _identity(user_id: str, user: User, index: int) -> dict[str, str]:
    street, line2, city, state, zip_code = NEW_ADDRESSES[index % len(NEW_ADDRESSES)]
    address1 = f"{10 + index} {street}"
    written = ", ".join(part for part in (address1, line2, city, f"{state} {zip_code}") if part)
    return {
        "user_id": user_id, "email": user.email, "first_name": user.name.first_name,
        "last_name": user.name.last_name, "zip": user.address.zip, "new_address": written,
        "address1": address1, "address2": line2, "city": city, "state": state, "new_zip": zip_code,
    }  # fmt: skip


def _present(value: T | None, key: str) -> T:
    if value is None:
        raise ScenarioError(f"{key} is listed in the store but cannot be read back")
    return value


def _total(order: Order) -> float:
    return round(sum(item.price for item in order.items), 2)


def _fill(value: str | None, facts: dict[str, str]) -> str | None:
    return None if value is None else value.format(**facts)


def _fill_value(value: Any, facts: dict[str, str]) -> Any:
    """Placeholders filled in strings, recursively through lists and objects."""
    if isinstance(value, str):
        return value.format(**facts)
    if isinstance(value, list):
        return [_fill_value(item, facts) for item in value]
    if isinstance(value, dict):
        return {key: _fill_value(item, facts) for key, item in value.items()}
    return value


def _mentioned_items(message: str, order: Order) -> list[str]:
    return mentioned_names(message, sorted({item.name for item in order.items}))
