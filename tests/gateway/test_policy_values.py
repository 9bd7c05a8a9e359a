"""False allows in how a decision reads argument values, end to end through the gateway: host spellings that reach
a denied host, sums over the history that rounded down or skipped a value, and typed tools whose JSON form was not
the number the tool received."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from agentcore import Gateway
from agentcore.gateway import ToolArgumentError, ToolDenied

Make = Callable[[str], tuple[Gateway, list[Any]]]


@pytest.fixture
def make(tmp_path: Path) -> Iterator[Make]:
    """``make(policy)``: a gateway with ``http.get`` (a typed ``url``), ``pay`` (a float ``amount``), ``loose`` (any
    JSON object) and ``dec.pay`` (a Decimal ``amount``); the list holds what the tools received."""
    made: list[Gateway] = []

    def build(policy: str) -> tuple[Gateway, list[Any]]:
        folder = tmp_path / f"p{len(made)}"
        folder.mkdir()
        (folder / "p.policy").write_text(policy, encoding="utf-8")
        gw = Gateway(folder, database=str(tmp_path / f"gw{len(made)}.db"))
        made.append(gw)
        received: list[Any] = []

        @gw.tool(name="http.get")
        def get(url: str) -> str:
            received.append(url)
            return "ok"

        @gw.tool(name="pay")
        def pay(amount: float) -> str:
            received.append(amount)
            return "ok"

        @gw.tool(name="loose", schema={"type": "object"})
        def loose(**kwargs: Any) -> str:
            received.append(kwargs)
            return "ok"

        @gw.tool(name="dec.pay")
        def dec_pay(amount: Decimal, parts: list[Decimal] | None = None) -> str:
            received.append(amount)
            return "ok"

        return gw, received

    yield build
    for gw in made:
        gw.close()


DENIED_HOSTS = 'allow http.get.\ndeny http.get when url host is one of "evil.com", "127.0.0.1", "::1", "bücher.de".\n'


@pytest.mark.parametrize(
    "url",
    [
        "https://evil.com./x",  # a trailing dot: the same name to DNS
        "https://evil.com\\@api.example.com/",  # a browser stops the host at the backslash: evil.com
        "https://ev%69l.com/",  # percent-encoded: evil.com to a WHATWG parser
        "https://evil\u3002com/",  # an ideographic full stop is a dot in IDNA
        "http://127.1/",  # inet_aton's short form of 127.0.0.1
        "http://2130706433/",  # 127.0.0.1 as one number
        "http://0x7f.0.0.1/",  # hex
        "http://0177.0.0.1/",  # octal
        "http://[0:0:0:0:0:0:0:1]/",  # ::1 written out
        "http://[::ffff:127.0.0.1]/",  # 127.0.0.1 mapped into IPv6
        "https://xn--bcher-kva.de/",  # punycode of bücher.de
    ],
)
def test_a_denied_host_is_denied_in_every_spelling(make: Make, url: str) -> None:
    gw, received = make(DENIED_HOSTS)
    with pytest.raises(ToolDenied):
        gw.call("http.get", {"url": url}, principal="alice")
    assert received == []


def test_an_allowed_host_in_another_spelling_is_still_allowed(make: Make) -> None:
    gw, received = make('allow http.get when url host is "API.example.com.".\n')  # the literal is spelt as hosts are
    for url in ("https://api.example.com/v1", "https://API.EXAMPLE.COM./v1", "https://u:p@api.example.com:8443/"):
        assert gw.call("http.get", {"url": url}, principal="alice") == "ok"
    with pytest.raises(ToolDenied, match="backslash"):
        gw.call("http.get", {"url": "https://evil.com\\@api.example.com/"}, principal="alice")
    assert len(received) == 3


CAP = (
    "allow pay, loose.\n"
    "deny pay when sum of amount over pay, loose in the last 1 hour per user plus amount is at least 1.\n"
)


def test_a_sum_over_the_history_is_exact(make: Make) -> None:
    """Nine calls of 0.1 and a tenth make 1.0, which the cap denies; summed as binary floats the history was
    0.8999999999999999 and the tenth ran."""
    gw, received = make(CAP)
    for _ in range(9):
        gw.call("pay", {"amount": 0.1}, principal="alice")
    with pytest.raises(ToolDenied, match="at least 1"):
        gw.call("pay", {"amount": 0.1}, principal="alice")
    assert len(received) == 9


def test_a_value_in_the_history_that_is_no_number_fails_the_sum_closed(make: Make) -> None:
    """An earlier call (``loose`` takes any JSON) with a text amount counted as 0: the cap never saw it."""
    gw, _ = make(CAP)
    gw.call("loose", {"amount": "0.9"}, principal="bob")
    gw.call("loose", {"note": "no amount"}, principal="carol")  # absent: counts 0
    with pytest.raises(ToolDenied, match=r"failed closed: .*\"0\.9\", not a finite number"):
        gw.call("pay", {"amount": 0.5}, principal="bob")
    assert gw.call("pay", {"amount": 0.5}, principal="carol") == "ok"
    denied = [json.loads(line) for line in gw.audit.export_jsonl() if '"denied"' in line]
    assert [(r["tool"], r["principal"]) for r in denied] == [("pay", "bob")]


def test_a_decimal_argument_is_the_number_it_is(make: Make) -> None:
    """pydantic writes a Decimal as text in JSON, so the policy saw ``"5000"``: never ``5000``, and never more than
    2000 either (the first a false allow, the second a false deny)."""
    gw, received = make(
        "allow dec.pay.\ndeny dec.pay when amount is 5000.\ndeny dec.pay when amount is more than 2000.5.\n"
        "deny dec.pay when parts is not null and parts contains 7.\n"
    )
    for amount in (5000, "5000", "5000.00", 5000.0):
        with pytest.raises(ToolDenied, match="amount is 5000"):
            gw.call("dec.pay", {"amount": amount}, principal="alice")
    with pytest.raises(ToolDenied, match=r"more than 2000\.5"):
        gw.call("dec.pay", {"amount": "2000.51"}, principal="alice")
    with pytest.raises(ToolDenied, match="contains 7"):
        gw.call("dec.pay", {"amount": 1, "parts": ["7.0"]}, principal="alice")
    assert gw.call("dec.pay", {"amount": "1999.99"}, principal="alice") == "ok"
    assert received == [Decimal("1999.99")]
    with pytest.raises(ToolDenied, match=r"failed closed"):  # more digits than a JSON number holds: text, fails closed
        gw.call("dec.pay", {"amount": "2000.0000000000000000001"}, principal="alice")


@pytest.mark.parametrize("text", ["inf", "-Infinity", "nan", "1e400"])
def test_a_float_that_pydantic_reads_from_text_must_be_finite(make: Make, text: str) -> None:
    """``float`` fields accept "inf" and "nan" as text; the decision then failed on an internal error (the audit
    cannot hold them). It is an invalid argument, named and audited like one."""
    gw, received = make("allow pay.\ndeny pay when amount is more than 2000.\n")
    with pytest.raises(ToolArgumentError, match=r"\$\.amount: .* is not a finite number"):
        gw.call("pay", {"amount": text}, principal="alice")
    record = [json.loads(line) for line in gw.audit.export_jsonl()][-1]
    assert (record["effect"], record["outcome"], received) == ("deny", "invalid", [])


def test_an_integer_past_pythons_digit_limit_is_an_invalid_argument(make: Make) -> None:
    """``10**5000`` cannot be written as JSON (Python stops at 4,300 digits): the call failed with an internal error
    whose audit record could not be written either; it is now an invalid argument, audited with a bounded preview."""
    gw, received = make("allow loose.\ndeny loose when amount is more than 2000.\n")
    with pytest.raises(ToolArgumentError, match=r"\$\.amount: an integer of more than 4000 digits"):
        gw.call("loose", {"amount": 10**5000}, principal="alice")
    record = [json.loads(line) for line in gw.audit.export_jsonl()][-1]
    assert (record["effect"], record["outcome"], received) == ("deny", "invalid", [])
    assert "<integer of 16610 bits>" in record["detail"]["args"]
    assert gw.call("loose", {"amount": -(10**3999)}, principal="alice") == "ok"
