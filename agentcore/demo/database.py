"""The store in SQLite: relational tables for users, payment methods, products, variants, orders and payments.

Tools read and write these tables in transactions, so a failed write leaves nothing half-done, and the policy
resolvers read the same rows the tools act on. Documents come back out in τ-bench's JSON shapes.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from agentcore.demo.records import Order, PaymentMethod, Product, Store, User

SCHEMA = """
CREATE TABLE IF NOT EXISTS users (
    seq INTEGER PRIMARY KEY,
    user_id TEXT NOT NULL UNIQUE,
    first_name TEXT NOT NULL,
    last_name TEXT NOT NULL,
    email TEXT NOT NULL,
    zip TEXT NOT NULL,
    address TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS users_email ON users (email);
CREATE TABLE IF NOT EXISTS payment_methods (
    seq INTEGER PRIMARY KEY,
    id TEXT NOT NULL,
    user_id TEXT NOT NULL REFERENCES users (user_id),
    source TEXT NOT NULL CHECK (source IN ('gift_card', 'credit_card', 'paypal')),
    balance REAL,
    brand TEXT,
    last_four TEXT,
    UNIQUE (user_id, id)
);
CREATE TABLE IF NOT EXISTS products (
    seq INTEGER PRIMARY KEY,
    product_id TEXT NOT NULL UNIQUE,
    name TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS variants (
    seq INTEGER PRIMARY KEY,
    item_id TEXT NOT NULL UNIQUE,
    product_id TEXT NOT NULL REFERENCES products (product_id),
    options TEXT NOT NULL,
    available INTEGER NOT NULL,
    price REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS orders (
    seq INTEGER PRIMARY KEY,
    order_id TEXT NOT NULL UNIQUE,
    user_id TEXT NOT NULL REFERENCES users (user_id),
    status TEXT NOT NULL,
    address TEXT NOT NULL,
    fulfillments TEXT NOT NULL,
    outcome TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX IF NOT EXISTS orders_user ON orders (user_id);
CREATE TABLE IF NOT EXISTS order_items (
    order_id TEXT NOT NULL REFERENCES orders (order_id),
    position INTEGER NOT NULL,
    item_id TEXT NOT NULL,
    product_id TEXT NOT NULL,
    name TEXT NOT NULL,
    price REAL NOT NULL,
    options TEXT NOT NULL,
    PRIMARY KEY (order_id, position)
);
CREATE TABLE IF NOT EXISTS payments (
    order_id TEXT NOT NULL REFERENCES orders (order_id),
    position INTEGER NOT NULL,
    transaction_type TEXT NOT NULL CHECK (transaction_type IN ('payment', 'refund')),
    amount REAL NOT NULL,
    payment_method_id TEXT NOT NULL,
    PRIMARY KEY (order_id, position)
);
"""

_OUTCOME_FIELDS = tuple(name for name in Order.model_fields if name not in {
    "order_id", "user_id", "address", "items", "fulfillments", "status", "payment_history",
})  # fmt: skip


class RetailDatabase:
    """One SQLite file (or ``:memory:``) holding a store; ``load`` fills it, the tools and resolvers query it."""

    def __init__(self, path: str | Path = ":memory:") -> None:
        self.path = str(path)
        self.connection = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self.connection.row_factory = sqlite3.Row
        self.connection.execute("PRAGMA foreign_keys = ON")
        if self.path != ":memory:":
            self.connection.execute("PRAGMA journal_mode = WAL")
        self.connection.executescript(SCHEMA)

    def close(self) -> None:
        self.connection.close()

    def copy(self) -> RetailDatabase:
        """An in-memory copy (SQLite's backup API): each test or replay gets a fresh store in milliseconds."""
        clone = RetailDatabase()
        self.connection.backup(clone.connection)
        return clone

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """All-or-nothing writes: BEGIN IMMEDIATE, COMMIT on success, ROLLBACK on any exception."""
        self.connection.execute("BEGIN IMMEDIATE")
        try:
            yield self.connection
        except BaseException:
            self.connection.execute("ROLLBACK")
            raise
        self.connection.execute("COMMIT")

    def query(self, sql: str, *params: Any) -> list[sqlite3.Row]:
        return list(self.connection.execute(sql, params))

    # ---- loading ----------------------------------------------------------------------------------------------
    def load(self, store: Store) -> None:
        """Insert a whole store (must be empty)."""
        if self.query("SELECT 1 FROM users LIMIT 1"):
            raise ValueError(f"the retail database {self.path} already holds a store; load into a new file")
        with self.transaction() as db:
            for user_id, user in store.users.items():
                db.execute(
                    "INSERT INTO users (user_id, first_name, last_name, email, zip, address) VALUES (?, ?, ?, ?, ?, ?)",
                    (user_id, user.name.first_name, user.name.last_name, user.email, user.address.zip,
                     user.address.model_dump_json()),
                )  # fmt: skip
                for method in user.payment_methods.values():
                    db.execute(
                        "INSERT INTO payment_methods (id, user_id, source, balance, brand, last_four) "
                        "VALUES (?, ?, ?, ?, ?, ?)",
                        (method.id, user_id, method.source, method.balance, method.brand, method.last_four),
                    )
            for product in store.products.values():
                db.execute("INSERT INTO products (product_id, name) VALUES (?, ?)", (product.product_id, product.name))
                for variant in product.variants.values():
                    db.execute(
                        "INSERT INTO variants (item_id, product_id, options, available, price) VALUES (?, ?, ?, ?, ?)",
                        (variant.item_id, product.product_id, json.dumps(variant.options), int(variant.available),
                         variant.price),
                    )  # fmt: skip
            for order in sorted(store.orders.values(), key=_user_order_position(store)):
                self._insert_order(db, order)

    def _insert_order(self, db: sqlite3.Connection, order: Order) -> None:
        fulfillments = json.dumps([f.model_dump() for f in order.fulfillments])
        outcome = json.dumps(order.model_dump(include=set(_OUTCOME_FIELDS), exclude_none=True))
        db.execute(
            "INSERT INTO orders (order_id, user_id, status, address, fulfillments, outcome) VALUES (?, ?, ?, ?, ?, ?)",
            (order.order_id, order.user_id, order.status, order.address.model_dump_json(), fulfillments, outcome),
        )
        self.write_items(db, order)
        for position, payment in enumerate(order.payment_history):
            self.add_payment(db, order.order_id, position, payment.transaction_type, payment.amount,
                             payment.payment_method_id)  # fmt: skip

    @staticmethod
    def write_items(db: sqlite3.Connection, order: Order) -> None:
        db.execute("DELETE FROM order_items WHERE order_id = ?", (order.order_id,))
        for position, item in enumerate(order.items):
            db.execute(
                "INSERT INTO order_items (order_id, position, item_id, product_id, name, price, options) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (order.order_id, position, item.item_id, item.product_id, item.name, item.price,
                 json.dumps(item.options)),
            )  # fmt: skip

    @staticmethod
    def add_payment(
        db: sqlite3.Connection, order_id: str, position: int, kind: str, amount: float, method: str
    ) -> None:
        db.execute(
            "INSERT INTO payments (order_id, position, transaction_type, amount, payment_method_id) "
            "VALUES (?, ?, ?, ?, ?)",
            (order_id, position, kind, round(amount, 2), method),
        )

    # ---- documents ----------------------------------------------------------------------------------------------
    def user(self, user_id: str) -> User | None:
        rows = self.query("SELECT * FROM users WHERE user_id = ?", user_id)
        if not rows:
            return None
        row = rows[0]
        methods = {m.id: m for m in self.payment_methods(user_id)}
        orders = [
            r["order_id"] for r in self.query("SELECT order_id FROM orders WHERE user_id = ? ORDER BY seq", user_id)
        ]
        return User.model_validate(
            {"name": {"first_name": row["first_name"], "last_name": row["last_name"]},
             "address": json.loads(row["address"]), "email": row["email"], "payment_methods": methods, "orders": orders}
        )  # fmt: skip

    def payment_methods(self, user_id: str) -> list[PaymentMethod]:
        rows = self.query("SELECT * FROM payment_methods WHERE user_id = ? ORDER BY seq", user_id)
        return [
            PaymentMethod.model_validate({k: v for k, v in dict(row).items() if k not in ("seq", "user_id")})
            for row in rows
        ]

    def order(self, order_id: str) -> Order | None:
        rows = self.query("SELECT * FROM orders WHERE order_id = ?", order_id)
        if not rows:
            return None
        row = rows[0]
        items = [
            {"name": r["name"], "product_id": r["product_id"], "item_id": r["item_id"], "price": r["price"],
             "options": json.loads(r["options"])}
            for r in self.query("SELECT * FROM order_items WHERE order_id = ? ORDER BY position", order_id)
        ]  # fmt: skip
        payments = [
            {
                "transaction_type": r["transaction_type"],
                "amount": r["amount"],
                "payment_method_id": r["payment_method_id"],
            }
            for r in self.query("SELECT * FROM payments WHERE order_id = ? ORDER BY position", order_id)
        ]
        return Order.model_validate(
            {"order_id": order_id, "user_id": row["user_id"], "address": json.loads(row["address"]), "items": items,
             "fulfillments": json.loads(row["fulfillments"]), "status": row["status"], "payment_history": payments,
             **json.loads(row["outcome"])}
        )  # fmt: skip

    def product(self, product_id: str) -> Product | None:
        rows = self.query("SELECT name FROM products WHERE product_id = ?", product_id)
        if not rows:
            return None
        variants = {
            r["item_id"]: {"item_id": r["item_id"], "options": json.loads(r["options"]),
                           "available": bool(r["available"]), "price": r["price"]}
            for r in self.query("SELECT * FROM variants WHERE product_id = ? ORDER BY seq", product_id)
        }  # fmt: skip
        return Product.model_validate({"name": rows[0]["name"], "product_id": product_id, "variants": variants})

    def variant(self, item_id: str) -> sqlite3.Row | None:
        rows = self.query("SELECT * FROM variants WHERE item_id = ?", item_id)
        return rows[0] if rows else None

    def set_order(self, db: sqlite3.Connection, order: Order) -> None:
        """Write back an order's status, address and outcome fields (items and payments have their own writes)."""
        outcome = json.dumps(order.model_dump(include=set(_OUTCOME_FIELDS), exclude_none=True))
        db.execute(
            "UPDATE orders SET status = ?, address = ?, outcome = ? WHERE order_id = ?",
            (order.status, order.address.model_dump_json(), outcome, order.order_id),
        )

    def adjust_balance(self, db: sqlite3.Connection, user_id: str, method_id: str, delta: float) -> None:
        db.execute(
            "UPDATE payment_methods SET balance = ROUND(balance + ?, 2) WHERE user_id = ? AND id = ?",
            (delta, user_id, method_id),
        )

    def counts(self) -> dict[str, int]:
        """Rows per table, for the demo's summary and for tests."""
        tables = ("users", "payment_methods", "products", "variants", "orders", "order_items", "payments")
        return {t: int(self.query(f"SELECT COUNT(*) FROM {t}")[0][0]) for t in tables}


def _user_order_position(store: Store) -> Any:
    """Orders are inserted in each user's own order list order, so ``user.orders`` round-trips exactly."""
    position = {oid: (uid, i) for uid, user in store.users.items() for i, oid in enumerate(user.orders)}
    return lambda order: position.get(order.order_id, (order.user_id, len(position)))


def load_json_store(folder: Path) -> Store:
    """A store from τ-bench-shaped ``users.json``, ``orders.json`` and ``products.json`` in ``folder``."""
    parts: dict[str, Any] = {}
    for name in ("users", "orders", "products"):
        path = folder / f"{name}.json"
        if not path.is_file():
            raise FileNotFoundError(f"{path} is missing: a store folder needs users.json, orders.json, products.json")
        parts[name] = json.loads(path.read_text(encoding="utf-8"))
    return Store.model_validate(parts)
