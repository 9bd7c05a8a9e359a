"""``url host``: the host a client would connect to, in one spelling, or unevaluable where clients disagree.

``urlsplit`` alone reads ``http://evil.com\\@good.com`` as ``good.com`` (a browser goes to ``evil.com``), keeps
``evil.com.`` (the same name to DNS), ``ev%69l.com`` (``evil.com`` to a browser), ``127.1`` and ``0x7f.0.0.1``
(``127.0.0.1`` to ``inet_aton``), ``[0:0:0:0:0:0:0:1]`` and ``xn--bcher-kva.de``: each a different text from the
policy's literal for the same destination, so a deny on that literal did not apply. Here the spellings meet:
lower case, no trailing dot, IDNA's other full stops as dots, punycode labels decoded, IP addresses in their
standard form; a URL whose host cannot be read one way (a backslash or ``%`` in it, an invalid label or address)
is :class:`Unevaluable`, which fails closed. Literals compared with a host are spelt the same way
(:func:`host_text`). No DNS: ``localhost`` and ``127.0.0.1.nip.io`` are names, not the address they resolve to.
"""

from __future__ import annotations

import ipaddress
import re
from urllib.parse import urlsplit

from agentcore.policies.quantities import Unevaluable, show
from agentcore.text import canonical_text

__all__ = ["host_of", "host_text"]

_NUMBER = re.compile(r"0x[0-9a-f]*|0[0-7]*|[1-9][0-9]*").fullmatch  # hex, octal, decimal: no signs, no "_"
_DOTS = str.maketrans({"\u3002": ".", "\uff61": ".", "\uff0e": "."})  # UTS 46 maps these full stops to "."


def host_of(url: str, what: str) -> str:
    """The host of ``url`` as :func:`host_text` spells it, or raise :class:`Unevaluable`."""
    try:
        parts = urlsplit(url)
        name = parts.hostname
    except ValueError as error:
        raise Unevaluable(f"{what} is not a valid URL: {error}") from error
    if not name:
        raise Unevaluable(f"{what} ({show(url)}) has no host")
    if "\\" in parts.netloc:  # WHATWG parsers end the host at a backslash; urlsplit reads on to the "@"
        raise Unevaluable(f"{what} ({show(url)}) has a backslash before its path, which clients read differently")
    if "[" in parts.netloc:
        return _ipv6(name, url, what)
    host = _name(name, url, what)
    if host is None:
        raise Unevaluable(f"{what} ({show(url)}) has no valid host name")
    return host


def host_text(text: str, whole: bool = True) -> str:
    """A literal compared with ``url host`` spelt as hosts are (``"Evil.COM."`` is ``"evil.com"``, ``"127.1"`` is
    ``"127.0.0.1"``). Part of a host (``whole=False``: a suffix such as ``".internal"``), or text that is no host,
    has only its case, full stops and punycode labels rewritten."""
    if whole:
        try:
            return _ipv6(text.strip("[]"), text, "") if ":" in text else _name(text, text, "") or _labels(text)
        except Unevaluable:
            pass
    return _labels(text)


def _ipv6(name: str, url: str, what: str) -> str:
    try:
        address = ipaddress.IPv6Address(name)
    except ValueError:
        raise Unevaluable(f"{what} ({show(url)}) has no valid IPv6 address") from None
    if address.scope_id is not None:  # [fe80::1%eth0]: the address on one interface, unlike any literal
        raise Unevaluable(f"{what} ({show(url)}) has an IPv6 zone")
    mapped = address.ipv4_mapped  # ::ffff:127.0.0.1 reaches 127.0.0.1 on a dual-stack socket
    return str(mapped) if mapped is not None else address.compressed


def _labels(text: str) -> str:
    """Lower case, the other full stops as dots, punycode labels decoded (kept when they are not punycode)."""
    labels = canonical_text(text).translate(_DOTS).lower().split(".")
    return ".".join(_decoded(label) or label for label in labels)


def _decoded(label: str) -> str | None:
    if not label.startswith("xn--"):
        return label
    try:
        return canonical_text(label.encode("ascii").decode("idna")).lower()
    except (UnicodeError, ValueError):
        return None


def _name(name: str, url: str, what: str) -> str | None:
    """A host name or IPv4 address in one spelling; None when it is neither."""
    text = canonical_text(name).translate(_DOTS).lower()
    if text.endswith("."):
        text = text[:-1]  # the root's empty label: "evil.com." is "evil.com"
    labels = text.split(".")
    if not all(labels):
        return None
    if labels[-1].isascii() and (labels[-1].isdigit() or labels[-1].startswith("0x")):
        return _ipv4(labels, url, what)  # a last label that is a number makes the host an address (WHATWG)
    decoded = [_decoded(label) for label in labels]
    if any(label is None or not label.replace("-", "").replace("_", "").isalnum() for label in decoded):
        return None
    return ".".join(label for label in decoded if label is not None)


def _ipv4(labels: list[str], url: str, what: str) -> str:
    """``127.1``, ``2130706433``, ``0x7f.0.0.1``, ``0177.0.0.1``: ``inet_aton``'s and WHATWG's forms, dotted."""
    numbers: list[int] = []
    for label in labels:
        if not _NUMBER(label):
            raise Unevaluable(f"{what} ({show(url)}) has no valid IPv4 address")
        base, digits = (16, label[2:]) if label.startswith("0x") else (8, label[1:]) if label[0] == "0" else (10, label)
        numbers.append(int(digits, base) if digits else 0)
    *leading, last = numbers
    if len(numbers) > 4 or any(n > 255 for n in leading) or last >= 256 ** (5 - len(numbers)):
        raise Unevaluable(f"{what} ({show(url)}) has no valid IPv4 address")
    value = sum(n << (8 * (3 - i)) for i, n in enumerate(leading)) + last
    return str(ipaddress.IPv4Address(value))
