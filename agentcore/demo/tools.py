"""The 16 τ-bench retail tools, implemented against :class:`RetailDatabase` with τ-bench's semantics.

Every write runs in one transaction. The tools check their own preconditions too (status, ownership, balances):
policies stop a bad call before it runs, and the tools still never corrupt the store if called without them.
"""

from __future__ import annotations

import ast
import json
import operator
from collections import Counter
from collections.abc import Callable
from importlib import resources
from typing import Any

from agentcore.demo.database import RetailDatabase
from agentcore.demo.records import Address, Order

CANCEL_REASONS = ("no longer needed", "ordered by mistake")


class RetailError(Exception):
    """A tool refused the request (unknown id, wrong status, insufficient balance); the message says which."""


def tool_schemas() -> list[dict[str, Any]]:
    """The 16 tool schemas (OpenAI function format, from τ-bench, MIT) shipped with the demo."""
    text = resources.files("agentcore.demo").joinpath("data/tools.json").read_text(encoding="utf-8")
    return list(json.loads(text))


class RetailTools:
    """The tools of one store; :meth:`functions` maps each tool name to its callable."""

    def __init__(self, db: RetailDatabase) -> None:
        self.db = db

    def functions(self) -> dict[str, Callable[..., Any]]:
        return {schema["function"]["name"]: getattr(self, schema["function"]["name"]) for schema in tool_schemas()}

    # ---- lookups --------------------------------------------------------------------------------------------
    def find_user_id_by_email(self, email: str) -> str:
        rows = self.db.query("SELECT user_id FROM users WHERE lower(email) = lower(?) ORDER BY seq", email)
        if not rows:
            raise RetailError(f"user not found: no user has the email {email!r}")
        return str(rows[0]["user_id"])

    def find_user_id_by_name_zip(self, first_name: str, last_name: str, zip: str) -> str:
        rows = self.db.query(
            "SELECT user_id FROM users WHERE lower(first_name) = lower(?) AND lower(last_name) = lower(?) AND zip = ? "
            "ORDER BY seq",
            first_name, last_name, zip,
        )  # fmt: skip
        if not rows:
            raise RetailError(f"user not found: no user named {first_name} {last_name} in zip code {zip}")
        return str(rows[0]["user_id"])

    def get_user_details(self, user_id: str) -> dict[str, Any]:
        user = self.db.user(user_id)
        if user is None:
            raise RetailError(f"user not found: {user_id!r}")
        return user.model_dump(exclude_none=True)

    def get_order_details(self, order_id: str) -> dict[str, Any]:
        return self._order(order_id).model_dump(exclude_none=True)

    def get_product_details(self, product_id: str) -> dict[str, Any]:
        product = self.db.product(product_id)
        if product is None:
            raise RetailError(f"product not found: {product_id!r} (product ids are not item ids)")
        return product.model_dump()

    def list_all_product_types(self) -> dict[str, str]:
        rows = self.db.query("SELECT name, product_id FROM products ORDER BY name")
        return {row["name"]: row["product_id"] for row in rows}

    def calculate(self, expression: str) -> str:
        return f"{_arithmetic(expression):.2f}".rstrip("0").rstrip(".")

    def think(self, thought: str) -> str:
        return ""

    def transfer_to_human_agents(self, summary: str) -> str:
        return "Transfer successful"

    # ---- pending orders -------------------------------------------------------------------------------------
    def cancel_pending_order(self, order_id: str, reason: str) -> dict[str, Any]:
        order = self._order(order_id, "pending")
        if reason not in CANCEL_REASONS:
            raise RetailError(f"invalid reason {reason!r}: use one of {', '.join(CANCEL_REASONS)}")
        with self.db.transaction() as db:
            position = len(order.payment_history)
            for payment in list(order.payment_history):
                self.db.add_payment(db, order_id, position, "refund", payment.amount, payment.payment_method_id)
                position += 1
                if payment.payment_method_id.startswith("gift_card"):  # gift cards are refunded at once
                    self.db.adjust_balance(db, order.user_id, payment.payment_method_id, payment.amount)
            order.status, order.cancel_reason = "cancelled", reason
            self.db.set_order(db, order)
        return self.get_order_details(order_id)

    def modify_pending_order_address(
        self, order_id: str, address1: str, address2: str, city: str, state: str, country: str, zip: str
    ) -> dict[str, Any]:
        order = self._order(order_id, "pending")
        order.address = Address(address1=address1, address2=address2, city=city, state=state, country=country, zip=zip)
        with self.db.transaction() as db:
            self.db.set_order(db, order)
        return self.get_order_details(order_id)

    def modify_pending_order_payment(self, order_id: str, payment_method_id: str) -> dict[str, Any]:
        order = self._order(order_id, "pending")
        method = self._method(order.user_id, payment_method_id)
        history = order.payment_history
        if len(history) != 1 or history[0].transaction_type != "payment":
            raise RetailError("the payment of this order has already been changed or split; it cannot change again")
        paid = history[0]
        if paid.payment_method_id == payment_method_id:
            raise RetailError("the new payment method must differ from the current one")
        if method.source == "gift_card" and (method.balance or 0.0) < paid.amount:
            raise RetailError(f"gift card {payment_method_id} has {method.balance} left, not enough for {paid.amount}")
        with self.db.transaction() as db:
            self.db.add_payment(db, order_id, 1, "payment", paid.amount, payment_method_id)
            self.db.add_payment(db, order_id, 2, "refund", paid.amount, paid.payment_method_id)
            if method.source == "gift_card":
                self.db.adjust_balance(db, order.user_id, payment_method_id, -paid.amount)
            if paid.payment_method_id.startswith("gift_card"):
                self.db.adjust_balance(db, order.user_id, paid.payment_method_id, paid.amount)
        return self.get_order_details(order_id)

    def modify_pending_order_items(
        self, order_id: str, item_ids: list[str], new_item_ids: list[str], payment_method_id: str
    ) -> dict[str, Any]:
        order = self._order(order_id, "pending")
        difference = self._swap_difference(order, item_ids, new_item_ids, payment_method_id)
        with self.db.transaction() as db:
            kind = "payment" if difference > 0 else "refund"
            self.db.add_payment(db, order_id, len(order.payment_history), kind, abs(difference), payment_method_id)
            if payment_method_id.startswith("gift_card"):
                self.db.adjust_balance(db, order.user_id, payment_method_id, -difference)
            for old, new in zip(item_ids, new_item_ids, strict=True):
                item = next(i for i in order.items if i.item_id == old)
                variant = self.db.variant(new)
                assert variant is not None  # checked by _swap_difference
                item.item_id, item.price, item.options = new, variant["price"], json.loads(variant["options"])
            order.status = "pending (item modified)"
            self.db.write_items(db, order)
            self.db.set_order(db, order)
        return self.get_order_details(order_id)

    # ---- delivered orders -----------------------------------------------------------------------------------
    def return_delivered_order_items(
        self, order_id: str, item_ids: list[str], payment_method_id: str
    ) -> dict[str, Any]:
        order = self._order(order_id, "delivered")
        original = order.payment_history[0].payment_method_id if order.payment_history else None
        if payment_method_id != original and not payment_method_id.startswith("gift_card"):
            raise RetailError("a refund goes to the original payment method or to an existing gift card")
        self._method(order.user_id, payment_method_id)
        self._check_items(order, item_ids)
        order.status = "return requested"
        order.return_items, order.return_payment_method_id = sorted(item_ids), payment_method_id
        with self.db.transaction() as db:
            self.db.set_order(db, order)
        return self.get_order_details(order_id)

    def exchange_delivered_order_items(
        self, order_id: str, item_ids: list[str], new_item_ids: list[str], payment_method_id: str
    ) -> dict[str, Any]:
        order = self._order(order_id, "delivered")
        difference = self._swap_difference(order, item_ids, new_item_ids, payment_method_id)
        order.status = "exchange requested"
        order.exchange_items, order.exchange_new_items = sorted(item_ids), sorted(new_item_ids)
        order.exchange_payment_method_id, order.exchange_price_difference = payment_method_id, difference
        with self.db.transaction() as db:
            self.db.set_order(db, order)
        return self.get_order_details(order_id)

    def modify_user_address(
        self, user_id: str, address1: str, address2: str, city: str, state: str, country: str, zip: str
    ) -> dict[str, Any]:
        if self.db.user(user_id) is None:
            raise RetailError(f"user not found: {user_id!r}")
        address = Address(address1=address1, address2=address2, city=city, state=state, country=country, zip=zip)
        with self.db.transaction() as db:
            db.execute(
                "UPDATE users SET address = ?, zip = ? WHERE user_id = ?", (address.model_dump_json(), zip, user_id)
            )
        return self.get_user_details(user_id)

    # ---- shared checks --------------------------------------------------------------------------------------
    def _order(self, order_id: str, status: str | None = None) -> Order:
        order = self.db.order(order_id)
        if order is None:
            raise RetailError(f"order not found: {order_id!r} (order ids look like '#W0000000')")
        if status is not None and order.status != status:
            raise RetailError(f"order {order_id} is {order.status!r}; this action needs a {status!r} order")
        return order

    def _method(self, user_id: str, method_id: str) -> Any:
        for method in self.db.payment_methods(user_id):
            if method.id == method_id:
                return method
        raise RetailError(f"payment method {method_id!r} is not one of this user's payment methods")

    @staticmethod
    def _check_items(order: Order, item_ids: list[str]) -> None:
        have = Counter(item.item_id for item in order.items)
        for item_id, count in Counter(item_ids).items():
            if have[item_id] < count:
                raise RetailError(f"item {item_id} is not in order {order.order_id} (or not that many times)")

    def _swap_difference(self, order: Order, item_ids: list[str], new_item_ids: list[str], method_id: str) -> float:
        """Check an item swap (same product, new item available) and return the price difference."""
        self._check_items(order, item_ids)
        if len(item_ids) != len(new_item_ids):
            raise RetailError("item_ids and new_item_ids must have the same length (one new item per old item)")
        difference = 0.0
        for old, new in zip(item_ids, new_item_ids, strict=True):
            item = next(i for i in order.items if i.item_id == old)
            variant = self.db.variant(new)
            if variant is None or variant["product_id"] != item.product_id:
                raise RetailError(f"new item {new} is not a variant of the same product as item {old}")
            if not variant["available"]:
                raise RetailError(f"new item {new} is not available")
            difference += variant["price"] - item.price
        method = self._method(order.user_id, method_id)
        if method.source == "gift_card" and (method.balance or 0.0) < difference:
            raise RetailError(f"gift card {method_id} has {method.balance} left, not enough for {difference:.2f}")
        return round(difference, 2)


_OPERATORS: dict[type, Callable[..., float]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.USub: operator.neg, ast.UAdd: operator.pos,
}  # fmt: skip


def _arithmetic(expression: str) -> float:
    """Evaluate + - * / and parentheses over numbers, without ``eval``."""
    try:
        tree = ast.parse(expression, mode="eval")
    except SyntaxError as exc:
        raise RetailError(f"cannot parse {expression!r}: use numbers, + - * / and parentheses") from exc

    def walk(node: ast.AST) -> float:
        if isinstance(node, ast.Constant) and isinstance(node.value, int | float) and not isinstance(node.value, bool):
            return float(node.value)
        if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
            return _OPERATORS[type(node.op)](walk(node.left), walk(node.right))
        if isinstance(node, ast.UnaryOp) and type(node.op) in _OPERATORS:
            return _OPERATORS[type(node.op)](walk(node.operand))
        raise RetailError(f"{expression!r} is not plain arithmetic: use numbers, + - * / and parentheses")

    try:
        return walk(tree.body)
    except ZeroDivisionError as exc:
        raise RetailError(f"{expression!r} divides by zero") from exc
