"""The 16 retail tools against SQLite: τ-bench's semantics, transactions, and schema validation at the gateway."""

from __future__ import annotations

import pytest

from agentcore.demo.database import RetailDatabase
from agentcore.demo.records import Order
from agentcore.demo.tools import RetailError, RetailTools, tool_schemas
from agentcore.gateway import Gateway, ToolArgumentError


def _orders(db: RetailDatabase, status: str, method_prefix: str = "") -> list[Order]:
    rows = db.query(
        "SELECT o.order_id FROM orders o JOIN payments p ON p.order_id = o.order_id AND p.position = 0 "
        "WHERE o.status = ? AND p.payment_method_id LIKE ? ORDER BY o.seq",
        status, f"{method_prefix}%",
    )  # fmt: skip
    return [order for row in rows if (order := db.order(row["order_id"])) is not None]


def _balance(db: RetailDatabase, user_id: str, method_id: str) -> float:
    return float(db.query("SELECT balance FROM payment_methods WHERE user_id = ? AND id = ?", user_id, method_id)[0][0])


def test_all_sixteen_tools_are_registered_with_strict_schemas(gateway: Gateway) -> None:
    names = {schema["function"]["name"] for schema in tool_schemas()}
    assert len(names) == 16 and {tool.name for tool in gateway.registry} == names
    for tool in gateway.registry:
        assert tool.input_schema["additionalProperties"] is False and tool.description


def test_cancel_refunds_gift_cards_at_once_and_rejects_non_pending(store: RetailDatabase) -> None:
    tools = RetailTools(store)
    order = _orders(store, "pending", "gift_card")[0]
    method = order.payment_history[0].payment_method_id
    before = _balance(store, order.user_id, method)
    result = tools.cancel_pending_order(order.order_id, "ordered by mistake")
    assert result["status"] == "cancelled" and result["cancel_reason"] == "ordered by mistake"
    assert result["payment_history"][-1] == {"transaction_type": "refund", "amount": order.payment_history[0].amount,
                                             "payment_method_id": method}  # fmt: skip
    assert _balance(store, order.user_id, method) == pytest.approx(before + order.payment_history[0].amount)
    with pytest.raises(RetailError, match="'cancelled'; this action needs a 'pending' order"):
        tools.cancel_pending_order(order.order_id, "ordered by mistake")
    with pytest.raises(RetailError, match="invalid reason"):
        tools.cancel_pending_order(_orders(store, "pending")[0].order_id, "changed my mind")


def test_return_goes_to_original_method_or_a_gift_card(store: RetailDatabase) -> None:
    tools = RetailTools(store)
    order = next(o for o in _orders(store, "delivered", "credit_card")
                 if any(m.source == "paypal" for m in store.payment_methods(o.user_id)))  # fmt: skip
    paypal = next(m.id for m in store.payment_methods(order.user_id) if m.source == "paypal")
    with pytest.raises(RetailError, match="original payment method or to an existing gift card"):
        tools.return_delivered_order_items(order.order_id, [order.items[0].item_id], paypal)
    assert store.order(order.order_id).status == "delivered"  # type: ignore[union-attr]
    with pytest.raises(RetailError, match="not in order"):
        tools.return_delivered_order_items(order.order_id, ["0000000000"], order.payment_history[0].payment_method_id)
    result = tools.return_delivered_order_items(
        order.order_id, [order.items[0].item_id], order.payment_history[0].payment_method_id
    )
    assert result["status"] == "return requested" and result["return_items"] == [order.items[0].item_id]


def test_modify_items_swaps_variants_and_settles_the_difference(store: RetailDatabase) -> None:
    tools = RetailTools(store)
    for order in _orders(store, "pending", "credit_card"):
        item = order.items[0]
        product = store.product(item.product_id)
        assert product is not None
        other = next((v for v in product.variants.values() if v.available and v.item_id != item.item_id), None)
        if other is not None:
            break
    method = order.payment_history[0].payment_method_id
    result = tools.modify_pending_order_items(order.order_id, [item.item_id], [other.item_id], method)
    assert result["status"] == "pending (item modified)"
    assert result["items"][0]["item_id"] == other.item_id and result["items"][0]["options"] == other.options
    difference = round(other.price - item.price, 2)
    assert result["payment_history"][-1]["amount"] == pytest.approx(abs(difference))
    assert result["payment_history"][-1]["transaction_type"] == ("payment" if difference > 0 else "refund")
    with pytest.raises(RetailError, match="'pending \\(item modified\\)'"):
        tools.modify_pending_order_items(order.order_id, [other.item_id], [item.item_id], method)


def test_exchange_rejects_another_product_and_short_gift_cards(store: RetailDatabase) -> None:
    tools = RetailTools(store)
    order = _orders(store, "delivered")[0]
    method = order.payment_history[0].payment_method_id
    foreign = store.query("SELECT item_id FROM variants WHERE product_id != ? LIMIT 1", order.items[0].product_id)[0][0]
    with pytest.raises(RetailError, match="not a variant of the same product"):
        tools.exchange_delivered_order_items(order.order_id, [order.items[0].item_id], [foreign], method)
    with pytest.raises(RetailError, match="same length"):
        tools.exchange_delivered_order_items(order.order_id, [order.items[0].item_id], [], method)
    assert store.order(order.order_id) == order  # nothing written by refused calls


def test_payment_change_moves_money_between_methods(store: RetailDatabase) -> None:
    tools = RetailTools(store)
    for order in _orders(store, "pending", "credit_card"):
        rich = [m for m in store.payment_methods(order.user_id)
                if m.source == "gift_card" and (m.balance or 0) >= order.payment_history[0].amount]  # fmt: skip
        if rich:
            break
    card, amount = rich[0], order.payment_history[0].amount
    result = tools.modify_pending_order_payment(order.order_id, card.id)
    assert [p["transaction_type"] for p in result["payment_history"]] == ["payment", "payment", "refund"]
    assert _balance(store, order.user_id, card.id) == pytest.approx((card.balance or 0) - amount)
    with pytest.raises(RetailError, match="already been changed"):
        tools.modify_pending_order_payment(order.order_id, order.payment_history[0].payment_method_id)


def test_lookups_and_helpers(store: RetailDatabase) -> None:
    tools = RetailTools(store)
    user_id = store.query("SELECT user_id FROM users ORDER BY seq LIMIT 1")[0][0]
    user = store.user(user_id)
    assert user is not None
    assert tools.find_user_id_by_email(user.email.upper()) == user_id
    name = user.name
    assert tools.find_user_id_by_name_zip(name.first_name.lower(), name.last_name, user.address.zip) == user_id
    with pytest.raises(RetailError, match="user not found"):
        tools.find_user_id_by_email("nobody@example.com")
    catalogue = tools.list_all_product_types()
    assert list(catalogue) == sorted(catalogue) and len(catalogue) == 20
    assert tools.calculate("(2 + 3) * 4.5 / 3") == "7.5"
    for bad in ("__import__('os').system('true')", "2 ** 8", "1 / 0", "2 +"):
        with pytest.raises(RetailError):
            tools.calculate(bad)
    moved = tools.modify_user_address(user_id, "1 Main St", "", "Austin", "TX", "USA", "78701")
    assert moved["address"]["city"] == "Austin" and tools.find_user_id_by_name_zip(
        user.name.first_name, user.name.last_name, "78701") == user_id  # fmt: skip


def test_gateway_validates_arguments_before_policy_or_execution(gateway: Gateway) -> None:
    order_id = gateway.registry.get("cancel_pending_order")  # registered
    assert order_id is not None
    for args in ({"order_id": "#W0000001"}, {"order_id": "#W0000001", "reason": "bored"},
                 {"order_id": "#W0000001", "reason": "no longer needed", "refund_to": "paypal_1"}):  # fmt: skip
        with pytest.raises(ToolArgumentError):
            gateway.call("cancel_pending_order", args, principal="guest", session="s")
    assert not any(r["kind"] == "execution" for r in gateway.audit.rows())
