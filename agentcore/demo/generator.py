"""A seeded generator of a retail store in τ-bench's schema, so the demo runs without τ-bench's data files.

Same seed, same store: scenarios and tests can rely on it. The store has products with option variants (some
out of stock), users with gift cards (with balances), credit cards and PayPal, and orders in every status.
"""

from __future__ import annotations

import itertools
import json
import random
from importlib import resources
from typing import Any

from pydantic import BaseModel, Field

from agentcore.demo.records import Store

STATUS_WEIGHTS = {"pending": 40, "delivered": 35, "processed": 12, "cancelled": 13}


class StoreSize(BaseModel):
    """How big a store to generate; the defaults make a store the demo's scenarios always find cases in."""

    users: int = Field(default=300, ge=10, le=100_000)
    max_orders_per_user: int = Field(default=6, ge=3, le=50)
    max_items_per_order: int = Field(default=4, ge=1, le=20)


def _catalog() -> dict[str, Any]:
    text = resources.files("agentcore.demo").joinpath("data/catalog.json").read_text(encoding="utf-8")
    return dict(json.loads(text))


class _Ids:
    """Unique random digit strings, so ids look like τ-bench's and never collide."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.used: set[str] = set()

    def digits(self, count: int, prefix: str = "") -> str:
        while True:
            value = prefix + "".join(self.rng.choice("0123456789") for _ in range(count))
            if value not in self.used:
                self.used.add(value)
                return value


def generate_store(seed: int = 7, size: StoreSize | None = None) -> Store:
    """Generate a store; deterministic for a given ``seed`` and ``size``."""
    size = size or StoreSize()
    rng = random.Random(seed)
    ids = _Ids(rng)
    catalog = _catalog()
    products = {spec["name"]: _product(spec, rng, ids) for spec in catalog["products"]}
    users: dict[str, Any] = {}
    orders: dict[str, Any] = {}
    for _ in range(size.users):
        user_id, user = _user(catalog, rng, ids)
        for _ in range(rng.randint(1, size.max_orders_per_user)):
            order = _order(user_id, user, products, size.max_items_per_order, rng, ids)
            orders[order["order_id"]] = order
            user["orders"].append(order["order_id"])
        users[user_id] = user
    return Store.model_validate(
        {"users": users, "orders": orders, "products": {p["product_id"]: p for p in products.values()}}
    )


def _product(spec: dict[str, Any], rng: random.Random, ids: _Ids) -> dict[str, Any]:
    axes = list(spec["options"])
    combos = list(itertools.product(*(spec["options"][axis] for axis in axes)))
    low, high = spec["price"]
    variants = {}
    for combo in rng.sample(combos, k=min(len(combos), rng.randint(6, 14))):
        item_id = ids.digits(10)
        variants[item_id] = {
            "item_id": item_id,
            "options": dict(zip(axes, combo, strict=True)),
            "available": rng.random() < 0.8,
            "price": round(rng.uniform(low, high), 2),
        }
    return {"name": spec["name"], "product_id": ids.digits(10), "variants": variants}


def _address(catalog: dict[str, Any], rng: random.Random) -> dict[str, str]:
    city, state, zip_prefix = rng.choice(catalog["cities"])
    return {
        "address1": f"{rng.randint(10, 999)} {rng.choice(catalog['streets'])}",
        "address2": f"Suite {rng.randint(100, 999)}" if rng.random() < 0.6 else "",
        "city": city,
        "country": "USA",
        "state": state,
        "zip": f"{zip_prefix}{rng.randint(0, 99):02d}",
    }


def _user(catalog: dict[str, Any], rng: random.Random, ids: _Ids) -> tuple[str, dict[str, Any]]:
    first, last = rng.choice(catalog["first_names"]), rng.choice(catalog["last_names"])
    user_id = ids.digits(4, prefix=f"{first}_{last}_".lower())
    suffix = user_id[-4:]
    methods: dict[str, Any] = {}
    for source in rng.sample(["gift_card", "credit_card", "paypal"], k=rng.randint(1, 3)):
        method_id = ids.digits(7, prefix=f"{source}_")
        method: dict[str, Any] = {"source": source, "id": method_id}
        if source == "gift_card":
            method["balance"] = float(rng.choice([0, 15, 40, 85, 120, 260, 900, 3500]))
        elif source == "credit_card":
            method["brand"], method["last_four"] = rng.choice(catalog["card_brands"]), ids.digits(4)[-4:]
        methods[method_id] = method
    return user_id, {
        "name": {"first_name": first, "last_name": last},
        "address": _address(catalog, rng),
        "email": f"{first}.{last}{suffix}@example.com".lower(),
        "payment_methods": methods,
        "orders": [],
    }


def _order(
    user_id: str, user: dict[str, Any], products: dict[str, Any], max_items: int, rng: random.Random, ids: _Ids
) -> dict[str, Any]:
    status = rng.choices(list(STATUS_WEIGHTS), weights=list(STATUS_WEIGHTS.values()))[0]
    items = []
    for product in rng.sample(list(products.values()), k=rng.randint(1, max_items)):
        variant = rng.choice(list(product["variants"].values()))
        items.append({"name": product["name"], "product_id": product["product_id"], "item_id": variant["item_id"],
                      "price": variant["price"], "options": variant["options"]})  # fmt: skip
    method = rng.choice(list(user["payment_methods"]))
    total = round(sum(item["price"] for item in items), 2)
    payments = [{"transaction_type": "payment", "amount": total, "payment_method_id": method}]
    if status == "cancelled":
        payments.append({"transaction_type": "refund", "amount": total, "payment_method_id": method})
    shipped = status in ("processed", "delivered")
    fulfillments = [{"tracking_id": [ids.digits(12)], "item_ids": [i["item_id"] for i in items]}] if shipped else []
    return {
        "order_id": ids.digits(7, prefix="#W"),
        "user_id": user_id,
        "address": dict(user["address"]),
        "items": items,
        "fulfillments": fulfillments,
        "status": status,
        "payment_history": payments,
    }
