"""``url host``: every spelling of a host reads as one, and a URL clients read differently is unevaluable."""

from __future__ import annotations

import ipaddress

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentcore import Effect, PolicyEngine, Request
from agentcore.policies import Principal
from agentcore.policies.hosts import host_of, host_text
from agentcore.policies.quantities import Unevaluable


def _decide(policy: str, url: str) -> Effect:
    engine = PolicyEngine.from_text(policy, "h.policy")
    return engine.decide(Request(principal=Principal(id="a"), action="http.get", args={"url": url})).effect


@pytest.mark.parametrize(
    ("url", "host"),
    [
        ("https://API.Example.COM./v1", "api.example.com"),
        ("https://u:p@api.example.com:8443/x?y#z", "api.example.com"),
        ("http://xn--bcher-kva.DE/", "bücher.de"),
        ("http://BÜCHER.de/", "bücher.de"),
        ("http://a\uff61b\u3002c/", "a.b.c"),
        ("http://127.1/", "127.0.0.1"),
        ("http://10.1.258/", "10.1.1.2"),
        ("http://0x0A.0.0.010/", "10.0.0.8"),
        ("http://3232235777/", "192.168.1.1"),
        ("http://[0:0:0:0:0:0:0:1]:80/", "::1"),
        ("http://[::FFFF:7f00:1]/", "127.0.0.1"),
        ("http://my_host-1.example/", "my_host-1.example"),
    ],
)
def test_one_spelling_of_each_host(url: str, host: str) -> None:
    assert host_of(url, "`url`") == host


@pytest.mark.parametrize(
    "url",
    [
        "https://evil.com\\@good.com/",  # the host ends at the backslash for a browser, at the "@" for urlsplit
        "https://ev%69l.com/",
        "https://a..b/",
        "https://evil.com;good.com/",
        "https://xn--zz-.com/",  # a punycode label that decodes to nothing
        "http://1.2.3.256/",
        "http://0x1g.0.0.1/",
        "http://1_0.0.0.1/",  # int() would read "1_0" as 10
        "http://\u0661\u0662\u0667.0.0.1/",  # Arabic-Indic digits: int() reads them, clients do not
        "http://[v1.x]/",
        "http://[::1%25eth0]/",
        "evil.com/path",
        "http:evil.com",
    ],
)
def test_a_host_clients_read_differently_is_unevaluable(url: str) -> None:
    with pytest.raises(Unevaluable):
        host_of(url, "`url`")
    assert _decide('allow http.get.\ndeny http.get when url host is "evil.com".\n', url) is Effect.DENY
    assert _decide('allow http.get when url host is not "evil.com".\n', url) is Effect.DENY


def test_literals_compared_with_a_host_are_spelt_as_hosts() -> None:
    assert host_text("Evil.COM.") == "evil.com"
    assert host_text("xn--bcher-kva.de") == "bücher.de"
    assert host_text("0x7f.1") == "127.0.0.1"
    assert host_text("[0::1]") == "::1"
    assert host_text(".Internal", whole=False) == ".internal"
    assert host_text("10.0.", whole=False) == "10.0."  # a prefix is not read as an address
    policy = (
        'allow http.get.\ndeny http.get when url host ends with ".XN--BCHER-KVA.de".\n'
        'deny http.get when url host starts with "10.".\n'
    )
    assert _decide(policy, "https://shop.bücher.de/") is Effect.DENY
    assert _decide(policy, "http://012.0.0.1/") is Effect.DENY  # 10.0.0.1
    assert _decide(policy, "http://bücher.de/") is Effect.ALLOW


def _spellings(address: ipaddress.IPv4Address) -> st.SearchStrategy[str]:
    """Forms that ``inet_aton`` and WHATWG parsers read as ``address``."""
    a, b, c, d = address.packed
    value = int(address)
    return st.sampled_from(
        [
            str(address),
            str(value),
            hex(value),
            f"{a}.{(b << 16) | (c << 8) | d}",
            f"{a}.{b}.{(c << 8) | d}",
            ".".join(f"0{n:o}" for n in (a, b, c, d)),
            ".".join(hex(n).upper().replace("0X", "0x") for n in (a, b, c, d)),
            f"[::ffff:{address}]",
            f"{address}.",
        ]
    )


@settings(max_examples=60, deadline=None)
@given(data=st.data(), address=st.ip_addresses(v=4))
def test_a_denied_address_is_denied_in_every_form(data: st.DataObject, address: ipaddress.IPv4Address) -> None:
    spelling = data.draw(_spellings(address))
    policy = f'allow http.get.\ndeny http.get when url host is "{address}".\n'
    assert _decide(policy, f"http://{spelling}:8080/path") is Effect.DENY


@settings(max_examples=60, deadline=None)
@given(
    labels=st.lists(st.from_regex(r"[a-z][a-z0-9-]{0,8}[a-z0-9]", fullmatch=True), min_size=2, max_size=4),
    upper=st.lists(st.booleans(), min_size=40, max_size=40),
    dot=st.booleans(),
)
def test_a_denied_name_is_denied_in_any_case_and_with_a_root_dot(
    labels: list[str], upper: list[bool], dot: bool
) -> None:
    name = ".".join(labels)
    spelt = "".join(ch.upper() if up else ch for ch, up in zip(name, upper + [False] * len(name), strict=False))
    policy = f'allow http.get.\ndeny http.get when url host is "{name}".\n'
    assert _decide(policy, f"https://{spelt}{'.' if dot else ''}/x") is Effect.DENY
