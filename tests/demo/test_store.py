"""The seeded store generator and the SQLite store: τ-bench's schema, every order status, exact round trips."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from agentcore.demo.database import RetailDatabase, load_json_store
from agentcore.demo.generator import StoreSize, generate_store
from agentcore.demo.records import Store


def test_same_seed_same_store_and_another_seed_differs() -> None:
    size = StoreSize(users=40)
    assert generate_store(3, size) == generate_store(3, size)
    assert generate_store(3, size) != generate_store(4, size)


def test_generated_store_covers_the_domain() -> None:
    store = generate_store()
    statuses = Counter(order.status for order in store.orders.values())
    assert {"pending", "processed", "delivered", "cancelled"} <= set(statuses)
    sources = Counter(m.source for user in store.users.values() for m in user.payment_methods.values())
    assert set(sources) == {"gift_card", "credit_card", "paypal"}
    cards = [m for user in store.users.values() for m in user.payment_methods.values() if m.source == "gift_card"]
    assert all(card.balance is not None for card in cards) and len({card.balance for card in cards}) > 3
    variants = [v for product in store.products.values() for v in product.variants.values()]
    assert any(not v.available for v in variants) and all(len(p.variants) >= 6 for p in store.products.values())
    for order in store.orders.values():
        assert order.user_id in store.users and order.order_id in store.users[order.user_id].orders
        paid = sum(p.amount for p in order.payment_history if p.transaction_type == "payment")
        assert paid == pytest.approx(sum(item.price for item in order.items))
        assert (order.status == "cancelled") == any(p.transaction_type == "refund" for p in order.payment_history)
        assert bool(order.fulfillments) == (order.status in ("processed", "delivered"))


def test_generated_store_round_trips_through_sqlite(generated: RetailDatabase) -> None:
    store = generate_store()
    for user_id, user in store.users.items():
        assert generated.user(user_id) == user
    for order_id, order in store.orders.items():
        assert generated.order(order_id) == order
    for product_id, product in store.products.items():
        assert generated.product(product_id) == product
    assert generated.counts()["orders"] == len(store.orders)


def test_tau_bench_database_round_trips(shared_data) -> None:  # type: ignore[no-untyped-def]
    folder = shared_data("tau_bench_retail", "db")
    raw = {name: json.loads((folder / f"{name}.json").read_text()) for name in ("users", "orders", "products")}
    db = RetailDatabase()
    db.load(load_json_store(folder))
    assert db.counts()["users"] == 500 and db.counts()["orders"] == 1000 and db.counts()["products"] == 50
    for user_id, user in raw["users"].items():
        assert db.user(user_id).model_dump(exclude_none=True) == user  # type: ignore[union-attr]
    for order_id, order in raw["orders"].items():
        assert db.order(order_id).model_dump(exclude_none=True) == order  # type: ignore[union-attr]


def test_loading_twice_and_bad_folders_fail_clearly(generated: RetailDatabase, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="already holds a store"):
        generated.copy().load(generate_store(1, StoreSize(users=10)))
    with pytest.raises(FileNotFoundError, match=r"users\.json is missing"):
        load_json_store(tmp_path)
    (tmp_path / "users.json").write_text('{"u": {"name": "x"}}')
    (tmp_path / "orders.json").write_text("{}")
    (tmp_path / "products.json").write_text("{}")
    with pytest.raises(ValueError, match=r"users\.u\.name"):
        load_json_store(tmp_path)
    assert Store.model_validate({"users": {}, "orders": {}, "products": {}}).users == {}
