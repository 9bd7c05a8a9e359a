"""Entity patterns: the ids, names, addresses and choices a customer's message carries, found by regex.

The scripted agent pairs these with the encoder's intent match; everything here is deterministic so that a
demo run, and its evaluation, is reproducible.
"""

from __future__ import annotations

import re

ORDER_ID = re.compile(r"#W\d{7}\b")
EMAIL = re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b")
USER_ID = re.compile(r"\b[a-z]+_[a-z]+_\d{4}\b")
PAYMENT_ID = re.compile(r"\b(?:gift_card|credit_card|paypal)_\d{7}\b")
ZIP = re.compile(r"\b\d{5}\b")
NAME = re.compile(r"\b(?:I am|I'm|my name is|this is)\s+([A-Z][a-z]+)\s+([A-Z][a-z]+)")
ADDRESS = re.compile(
    r"(?<![\w#])(?P<address1>\d+ [A-Za-z][A-Za-z0-9 .]*?),\s*(?:(?P<address2>(?:Suite|Apt|Unit|Floor) [^,]+),\s*)?"
    r"(?P<city>[A-Za-z .]+?),\s*(?P<state>[A-Z]{2})\s+(?P<zip>\d{5})(?:,\s*(?P<country>[A-Za-z ]+?))?(?=[.!?]?(?:\s|$))"
)
ARITHMETIC = re.compile(r"[\d.]+(?:\s*[-+*/]\s*\(?\s*[\d.]+\s*\)?)+")
YES = re.compile(r"^\s*(?:yes|yep|yeah|sure|confirm(?:ed)?|go ahead|please do|ok(?:ay)?)\b", re.IGNORECASE)
NO = re.compile(r"^\s*(?:no|nope|cancel that|don't|do not|stop)\b", re.IGNORECASE)
CANCEL_REASONS = {
    "ordered by mistake": ("by mistake", "mistake", "accident"),
    "no longer needed": ("no longer", "don't need", "do not need", "not needed"),
}
PAYMENT_WORDS = {
    "gift_card": ("gift card", "giftcard"),
    "credit_card": ("credit card", "card ending", "visa", "mastercard"),
    "paypal": ("paypal",),
}
ORIGINAL_PAYMENT = ("original payment", "same card", "same payment", "how i paid", "original method")
REMEMBERED = ("usual", "last time", "same as before", "as before", "my default")


_MASKS = ((EMAIL, "email address"), (ORDER_ID, "order"), (PAYMENT_ID, "payment method"), (USER_ID, "user"))


def mask(text: str, products: tuple[str, ...] = ()) -> str:
    """The text with ids, emails and product names replaced by what they are: intent lies in the other words."""
    for pattern, word in _MASKS:
        text = pattern.sub(word, text)
    for name in products:
        text = re.sub(rf"(?<![\w-]){re.escape(name)}(?![\w-])", "item", text, flags=re.IGNORECASE)
    return text


def first(pattern: re.Pattern[str], text: str) -> str | None:
    match = pattern.search(text)
    return match.group(0) if match else None


def name_and_zip(text: str) -> dict[str, str] | None:
    """First name, last name and zip code, when the customer introduces themselves with all three."""
    name, zip_code = NAME.search(text), ZIP.search(text)
    if not name or not zip_code:
        return None
    return {"first_name": name.group(1), "last_name": name.group(2), "zip": zip_code.group(0)}


def address(text: str) -> dict[str, str] | None:
    """A US postal address written ``1 Main St, Suite 2, City, ST 12345[, Country]``."""
    match = ADDRESS.search(text)
    if not match:
        return None
    parts = {key: (value or "").strip() for key, value in match.groupdict().items()}
    parts["country"] = parts["country"] or "USA"
    return parts


def cancel_reason(text: str) -> str | None:
    lowered = text.lower()
    return next((reason for reason, cues in CANCEL_REASONS.items() if any(cue in lowered for cue in cues)), None)


def payment_kind(text: str) -> str | None:
    """Which kind of payment method the customer names (gift card, credit card, PayPal), if any."""
    lowered = text.lower()
    return next((kind for kind, cues in PAYMENT_WORDS.items() if any(cue in lowered for cue in cues)), None)


def mentions_any(text: str, cues: tuple[str, ...]) -> bool:
    lowered = text.lower()
    return any(cue in lowered for cue in cues)


def mentioned_names(text: str, names: list[str]) -> list[str]:
    """The names (product names, option values) the text mentions, case-insensitively, in the text's order."""
    lowered = text.lower()
    found = [(lowered.find(name.lower()), name) for name in names if _word_in(name.lower(), lowered)]
    return [name for _, name in sorted(found)]


def _word_in(needle: str, haystack: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(needle)}(?![\w-])", haystack) is not None
