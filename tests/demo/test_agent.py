"""The scripted agent's parts: entity patterns (pure) and nearest-tool intent with the real encoder."""

from __future__ import annotations

import pytest

from agentcore.demo import entities
from agentcore.demo.agent import choose_variant
from agentcore.demo.intents import IntentClassifier
from agentcore.demo.tools import tool_schemas


def test_entities_are_found_and_ids_never_mistaken_for_addresses() -> None:
    text = "Please ship order #W3426084 to 14 Maple Avenue, Floor 3, Boston, MA 02110 instead."
    assert entities.first(entities.ORDER_ID, text) == "#W3426084"
    assert entities.address(text) == {"address1": "14 Maple Avenue", "address2": "Floor 3", "city": "Boston",
                                      "state": "MA", "zip": "02110", "country": "USA"}  # fmt: skip
    assert entities.address("Send it to 5 Elm Street, Denver, CO 80202, USA.")["address2"] == ""  # type: ignore[index]
    assert entities.address("Send it somewhere nice.") is None
    assert entities.name_and_zip("Hi, I'm Yusuf Rossi and my zip code is 19122.") == {
        "first_name": "Yusuf", "last_name": "Rossi", "zip": "19122"}  # fmt: skip
    assert entities.name_and_zip("Hi, my zip code is 19122.") is None
    assert entities.cancel_reason("I ordered it by mistake") == "ordered by mistake"
    assert entities.cancel_reason("I no longer need it") == "no longer needed"
    assert entities.payment_kind("refund it to my PayPal please") == "paypal"
    assert entities.payment_kind("put it on my gift card") == "gift_card"
    assert entities.YES.search("Yes, go ahead") and not entities.YES.search("yesterday's order")
    assert entities.mask("order #W1234567 for jo@x.com, pay with gift_card_1234567", ("Desk Lamp",)) == (
        "order order for email address, pay with payment method")  # fmt: skip
    assert entities.mask("exchange the desk lamp", ("Desk Lamp",)) == "exchange the item"


def test_variant_choice_follows_the_named_options_and_keeps_the_rest() -> None:
    item = {"item_id": "1", "name": "T-Shirt", "options": {"color": "blue", "size": "M"}}
    variants = {
        "1": {"item_id": "1", "options": {"color": "blue", "size": "M"}, "available": True},
        "2": {"item_id": "2", "options": {"color": "red", "size": "L"}, "available": True},
        "3": {"item_id": "3", "options": {"color": "red", "size": "M"}, "available": True},
        "4": {"item_id": "4", "options": {"color": "black", "size": "M"}, "available": False},
    }
    product = {"variants": variants}
    assert choose_variant("exchange the T-Shirt for a red one", item, product) == "3"
    assert choose_variant("exchange the T-Shirt for a red one in L", item, product) == "2"
    assert choose_variant("exchange the T-Shirt for a black one", item, product) is None  # out of stock
    assert choose_variant("exchange the T-Shirt please", item, product) is None  # nothing named


@pytest.fixture(scope="module")
def classifier(encoder) -> IntentClassifier:  # type: ignore[no-untyped-def]
    return IntentClassifier(encoder, tool_schemas(), tenant="test", products=("Desk Lamp", "Headphones", "Backpack"))


# Requests worded unlike the example requests in intents.json: the classifier must generalise, not look up.
HELD_OUT = {
    "Good morning! You can look me up with sam.lee4411@example.com": "find_user_id_by_email",
    "This is Dana Ito, I live in zip 60614.": "find_user_id_by_name_zip",
    "Has #W7777777 left the warehouse yet?": "get_order_details",
    "Kindly call off order #W1212121, I don't need it any more.": "cancel_pending_order",
    "The Headphones from #W1212121 arrived broken; I'd like to send them back.": "return_delivered_order_items",
    "Could I swap the Backpack I got in #W1212121 for the large size?": "exchange_delivered_order_items",
    "I'd like #W1212121 delivered to my office at 8 Pine Lane, Chicago, IL 60601.": "modify_pending_order_address",
    "Please charge #W1212121 to my PayPal rather than my card.": "modify_pending_order_payment",
    "My new home address is 3 Oak Street, Columbus, OH 43210; update my profile.": "modify_user_address",
    "Which cards and gift cards are saved on my account?": "get_user_details",
    "How much is 19.99 times 3?": "calculate",
    "Get me a real person on the line.": "transfer_to_human_agents",
}


def test_intent_is_the_nearest_tool_on_held_out_requests(classifier: IntentClassifier) -> None:
    wrong = {text: classifier.classify(text).tool for text, tool in HELD_OUT.items()}
    wrong = {text: got for text, got in wrong.items() if got != HELD_OUT[text]}
    # measured: 9 of 12 (the misses confuse neighbouring write tools); the demo's scripts stay within what it gets
    # right, and an application that needs more plugs a real LLM agent in through the Agent protocol
    assert len(wrong) <= 3, wrong


def test_intent_reports_its_margin(classifier: IntentClassifier) -> None:
    intent = classifier.classify("Please cancel order #W1234567, I ordered it by mistake.")
    assert intent.tool == "cancel_pending_order" and intent.margin > 0.1 and intent.runner_up != intent.tool
