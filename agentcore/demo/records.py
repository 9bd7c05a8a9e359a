"""The retail store's documents, in τ-bench's JSON shapes (users, orders, products).

Both the seeded generator and the τ-bench database files produce these models, so one loader and one set of
tools serve both; validation here is what turns a malformed data file into a clear error instead of a bad row.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

OrderStatus = Literal[
    "pending",
    "processed",
    "delivered",
    "cancelled",
    "pending (item modified)",
    "return requested",
    "exchange requested",
]


class _Doc(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Name(_Doc):
    first_name: str
    last_name: str


class Address(_Doc):
    address1: str
    address2: str
    city: str
    country: str
    state: str
    zip: str


class PaymentMethod(_Doc):
    """A gift card (with a balance), a credit card (brand, last four digits) or a PayPal account."""

    source: Literal["gift_card", "credit_card", "paypal"]
    id: str
    balance: float | None = None
    brand: str | None = None
    last_four: str | None = None


class User(_Doc):
    name: Name
    address: Address
    email: str
    payment_methods: dict[str, PaymentMethod]
    orders: list[str] = Field(default_factory=list)


class Variant(_Doc):
    item_id: str
    options: dict[str, str]
    available: bool
    price: float


class Product(_Doc):
    name: str
    product_id: str
    variants: dict[str, Variant]


class OrderItem(_Doc):
    name: str
    product_id: str
    item_id: str
    price: float
    options: dict[str, str]


class Fulfillment(_Doc):
    tracking_id: list[str]
    item_ids: list[str]


class Payment(_Doc):
    transaction_type: Literal["payment", "refund"]
    amount: float
    payment_method_id: str


class Order(_Doc):
    order_id: str
    user_id: str
    address: Address
    items: list[OrderItem]
    fulfillments: list[Fulfillment]
    status: OrderStatus
    payment_history: list[Payment]
    # set by the write tools, as τ-bench's do
    cancel_reason: str | None = None
    return_items: list[str] | None = None
    return_payment_method_id: str | None = None
    exchange_items: list[str] | None = None
    exchange_new_items: list[str] | None = None
    exchange_payment_method_id: str | None = None
    exchange_price_difference: float | None = None


class Store(_Doc):
    """A whole store: what the generator writes and what τ-bench's ``db/*.json`` hold."""

    users: dict[str, User]
    orders: dict[str, Order]
    products: dict[str, Product]
