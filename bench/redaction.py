"""Redaction recall, false-positive rate and throughput, side by side with Microsoft Presidio's recognisers.

One generated corpus (seeded): PII variants (cards with any separator, digit script, adjacent digits or as JSON
numbers; ASCII, IDN and fullwidth-at e-mails; IBANs in any case and grouping; phone numbers; cloud keys, PEM
blocks, JWTs) and look-alike non-PII (order ids, epoch timestamps, dates, prices, IPs, UUIDs, hashes, ISBNs).
A PII sample is recalled when, once the detected spans are removed, none of its characters is left (a card's
digits, an address's local part and domain, an IBAN's account part); recall is also given for the canonical
forms alone (ASCII, one space or hyphen between groups, upper-case IBANs, no JSON numbers). A look-alike is a
false positive when anything in it is detected. Presidio runs its pattern recognisers (CreditCardRecognizer,
EmailRecognizer, IbanRecognizer, PhoneRecognizer) directly: its AnalyzerEngine insists on a spaCy model, which
cannot be downloaded here. Its e-mail recogniser's public-suffix lookup uses tldextract's bundled snapshot (no
network). Prints ONE JSON line; needs the ``bench`` extra (``pip install -e '.[bench]'``).

    python bench/redaction.py [--samples 400] [--seed 14]
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import platform
import random
import re
import string
import time
import unicodedata
from collections import Counter
from collections.abc import Callable
from typing import Any

from agentcore.gateway.redaction import Redaction
from agentcore.gateway.redaction.detectors import IBAN_LENGTHS, luhn

SHARED = ("card", "email", "iban", "phone")  # the entity types both sides detect
PRESIDIO_TYPES = {"CREDIT_CARD": "card", "EMAIL_ADDRESS": "email", "IBAN_CODE": "iban", "PHONE_NUMBER": "phone"}
SEPARATORS = (" ", "-", ".", "/", "_", "\u00a0", "\t", "\n", "\u2013", "  ", "\u200b", " - ")
SCRIPTS = (0x30,) * 6 + (0xFF10, 0x660, 0x966)  # mostly ASCII; fullwidth, Arabic-Indic, Devanagari
FILLER = ("customer", "record", "updated", "for", "order", "see", "note:", "total", "ref", "the", "and", "ok")
Sample = tuple[str, str, str]  # (kind, text, the PII value as it appears, "" for a look-alike)


# ---- the corpus ------------------------------------------------------------------------------------------------
def card(rng: random.Random) -> str:
    prefix, length = rng.choice([("4", 16), ("4", 13), ("51", 16), ("55", 16), ("2221", 16), ("34", 15),
                                 ("37", 15), ("6011", 16), ("65", 16), ("35", 16), ("36", 14), ("62", 19)])  # fmt: skip
    body = prefix + "".join(rng.choice(string.digits) for _ in range(length - len(prefix) - 1))
    return next(body + d for d in string.digits if luhn(body + d))


def printed_card(rng: random.Random, digits: str) -> str:
    form = rng.randrange(6)
    if form == 0:
        return digits
    if form == 1:
        return json.dumps({"card": int(digits)})
    if form == 2 and int(digits) < 2**53:
        return json.dumps({"amount": float(digits)})
    zero = rng.choice(SCRIPTS)
    local = "".join(chr(zero + int(d)) for d in digits)
    groups = [local[:4], local[4:10], local[10:]] if len(digits) == 15 else [local[i : i + 4] for i in range(0, 20, 4)]
    out = groups[0]
    for group in filter(None, groups[1:]):
        out += rng.choice(SEPARATORS) + group
    return out + rng.choice(["", "", " 7", " 12/27", " exp 12/27 cvv 123"])


def email(rng: random.Random) -> str:
    local = rng.choice(["jane.doe", "j.smith+bills", "müller.jürgen", "用户名", "नमस्ते", "o'brien", "ops_team"])
    local += str(rng.randrange(100, 999))
    domain = rng.choice(["corp.com", "mail.example.co.uk", "müller.de", "例子.广告", "пример.рф", "x.io"])
    return local + rng.choice("@@@@\uff20") + domain


# Each country's account-number layout (n digits, a letters), as Presidio checks it: real IBANs follow it.
IBAN_FORMATS = {"DE": "18n", "FR": "23n", "GB": "4a14n", "NL": "4a10n", "ES": "20n", "IT": "1a22n", "BE": "12n",
                "CH": "17n", "PL": "24n", "AT": "16n", "SE": "20n", "IE": "4a14n"}  # fmt: skip


def iban(rng: random.Random) -> str:
    country = rng.choice(sorted(IBAN_FORMATS))
    layout = re.findall(r"(\d+)([an])", IBAN_FORMATS[country])
    bban = "".join(rng.choice(string.ascii_uppercase if kind == "a" else string.digits)
                   for count, kind in layout for _ in range(int(count)))  # fmt: skip
    assert len(bban) == IBAN_LENGTHS[country] - 4
    check = 98 - int("".join(str(int(c, 36)) for c in bban + country + "00")) % 97
    text = f"{country}{check:02d}{bban}"
    text = rng.choice([text, text.lower(), " ".join(text[i : i + 4] for i in range(0, len(text), 4))])
    return text


def phone(rng: random.Random) -> str:
    area, mid, end = rng.randrange(201, 989), rng.randrange(200, 999), rng.randrange(0, 9999)
    return rng.choice([f"+1 ({area}) {mid}-{end:04d}", f"+1 {area} {mid} {end:04d}", f"{area}-{mid}-{end:04d}",
                       f"+44 20 {mid}{rng.randrange(0, 9)} {end:04d}", f"+49 151 {mid}{end:04d}"])  # fmt: skip


def secret(rng: random.Random) -> str:
    alnum = string.ascii_letters + string.digits
    key = "".join(rng.choice(string.ascii_uppercase + string.digits) for _ in range(16))
    body = "".join(rng.choice(alnum) for _ in range(48))
    return rng.choice([f"AKIA{key}", f"akia{key.lower()}", f"ASIA{key}", "ghp_" + body[:36], "xoxb-12345-" + body,
                       f"-----BEGIN PRIVATE KEY-----\n{body}\n{body}\n-----END PRIVATE KEY-----",
                       f"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ{body[:10]}In0.{body[:43]}",
                       f"aws_secret_access_key={body[:40]}"])  # fmt: skip


def look_alike(rng: random.Random) -> str:
    epoch = rng.randrange(946684800, 1999999999)
    return rng.choice([
        str(rng.randrange(10**7, 10**12)),  # order ids and amounts
        str(rng.randrange(10**19, 10**24)),  # long order ids
        f"ORD-{rng.randrange(2000, 2030)}-{rng.randrange(0, 999999):06d}",
        str(epoch), str(epoch * 1000 + rng.randrange(1000)), str(epoch * 10**6 + rng.randrange(10**6)),
        time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(epoch)), time.strftime("%d/%m/%Y", time.gmtime(epoch)),
        " ".join(f"{rng.randrange(1, 9999)}.{rng.randrange(100):02d}" for _ in range(4)),
        ".".join(str(rng.randrange(256)) for _ in range(4)),
        f"{rng.getrandbits(32):08x}-{rng.getrandbits(16):04x}-4{rng.getrandbits(12):03x}-a{rng.getrandbits(12):03x}-"
        f"{rng.getrandbits(48):012x}",
        f"{rng.getrandbits(160):040x}",
        f"978-{rng.randrange(10)}-{rng.randrange(100, 999)}-{rng.randrange(10000, 99999)}-{rng.randrange(10)}",
        f"v{rng.randrange(10)}.{rng.randrange(30)}.{rng.randrange(100)}",
    ])  # fmt: skip


GENERATORS: dict[str, Callable[[random.Random], str]] = {
    "card": lambda rng: printed_card(rng, card(rng)), "email": email, "iban": iban, "phone": phone,
    "secret": secret, "look_alike": look_alike,
}  # fmt: skip


def corpus(samples: int, seed: int) -> list[Sample]:
    rng = random.Random(seed)
    out = []
    for kind, make in GENERATORS.items():
        for _ in range(samples * (3 if kind == "look_alike" else 1)):
            value = make(rng)
            words = rng.sample(FILLER, 4)
            text = f"{' '.join(words[:2])} {value} {' '.join(words[2:])}"
            out.append((kind, text, "" if kind == "look_alike" else value))
    return out


# ---- scoring ---------------------------------------------------------------------------------------------------
def _digits(text: str) -> str:
    return "".join(str(unicodedata.digit(c)) for c in text if unicodedata.category(c) == "Nd")


def leaked(kind: str, value: str, out: str) -> bool:
    """Whether any identifying part of the PII value is still in ``out``."""
    if kind in ("card", "phone"):
        digits, left = _digits(value.split(" 12/27")[0].split(" exp")[0].split(" 7")[0]), _digits(out)
        return digits[:8] in left or digits[-8:] in left
    if kind == "email":
        local, _, domain = value.replace("\uff20", "@").partition("@")
        return local in out or domain in out
    if kind == "iban":
        compact = value.replace(" ", "").upper()
        return compact[4:] in out.replace(" ", "").upper()
    return value[:24] in out or value[-24:] in out


def plain(kind: str, value: str) -> bool:
    """The canonical forms: ASCII, no separator but one space or hyphen, upper-case IBANs, no JSON numbers."""
    if not value.isascii() or any(c in value for c in "{\t\n/_") or "  " in value or " - " in value:
        return False
    if kind == "card":
        return "." not in value and not value.endswith((" 7", "123"))
    return value == value.upper() if kind == "iban" else True


def masked(text: str, spans: list[tuple[int, int]]) -> str:
    for start, end in sorted(spans, reverse=True):
        text = text[:start] + "<X>" + text[end:]
    return text


def score(corpus_: list[Sample], run: Callable[[str], tuple[str, bool]], kinds: tuple[str, ...]) -> Any:
    """(recall per kind, false-positive rate, MB/s): ``run`` returns (text with PII removed, anything found)."""
    found: Counter[str] = Counter()
    total: Counter[str] = Counter()
    found_plain: Counter[str] = Counter()
    total_plain: Counter[str] = Counter()
    false_positives = look_alikes = 0
    size = sum(len(text.encode()) for _, text, _ in corpus_)
    started = time.thread_time()
    outputs = [run(text) for _, text, _ in corpus_]
    elapsed = time.thread_time() - started
    for (kind, _, value), (out, hit) in zip(corpus_, outputs, strict=True):
        if kind == "look_alike":
            look_alikes += 1
            false_positives += hit
        elif kind in kinds:
            recalled = not leaked(kind, value, out)
            total[kind] += 1
            found[kind] += recalled
            if plain(kind, value):
                total_plain[kind] += 1
                found_plain[kind] += recalled
    return {
        "recall": {k: round(found[k] / total[k], 3) for k in kinds},
        "recall_plain_forms": {k: round(found_plain[k] / total_plain[k], 3) for k in kinds if total_plain[k]},
        "false_positive_rate": round(false_positives / look_alikes, 4),
        "mb_per_s": round(size / 1e6 / elapsed, 2),
        "us_per_sample": round(elapsed / len(corpus_) * 1e6, 1),
    }


def _cpu_seconds(work: Callable[[], object]) -> float:
    started = time.thread_time()
    work()
    return time.thread_time() - started


def presidio_runner() -> tuple[Callable[[str], tuple[str, bool]], str]:
    try:
        import tldextract
        from presidio_analyzer.predefined_recognizers import (
            CreditCardRecognizer,
            EmailRecognizer,
            IbanRecognizer,
            PhoneRecognizer,
        )
    except ImportError as exc:
        missing = f"presidio-analyzer is missing ({exc}); install the bench extra: pip install -e '.[bench]'"
        raise SystemExit(missing) from None
    version = importlib.metadata.version("presidio-analyzer")
    tldextract.extract = tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None)  # the bundled snapshot
    recognizers = [(r, r.supported_entities) for r in (CreditCardRecognizer(), EmailRecognizer(), IbanRecognizer(),
                                                        PhoneRecognizer())]  # fmt: skip

    def run(text: str) -> tuple[str, bool]:
        results = [res for r, entities in recognizers for res in r.analyze(text, entities, None) if res.score > 0]
        return masked(text, [(res.start, res.end) for res in results]), bool(results)

    return run, version


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=400, help="PII samples per kind (look-alikes: 3x)")
    parser.add_argument("--seed", type=int, default=14)
    options = parser.parse_args()
    presidio, presidio_version = presidio_runner()
    samples = corpus(options.samples, options.seed)
    shared = Redaction(detectors=SHARED)
    every = Redaction(detectors=(*SHARED, "secret"))

    def ours(redaction: Redaction) -> Callable[[str], tuple[str, bool]]:
        def run(text: str) -> tuple[str, bool]:
            out, counts = redaction.apply(text)
            return out, bool(counts)

        return run

    ours_shared = score(samples, ours(shared), SHARED)
    theirs = score(samples, presidio, SHARED)
    ours_every = score(samples, ours(every), (*SHARED, "secret"))
    document = "\n".join(text for _, text, _ in samples)  # one large result instead of many small ones
    bulk = {name: len(document.encode()) / 1e6 / _cpu_seconds(lambda run=run: run(document))
            for name, run in (("agentcore", ours(shared)), ("presidio", presidio))}  # fmt: skip
    print(json.dumps({
        "bench": "redaction", "samples": dict(Counter(kind for kind, _, _ in samples)), "seed": options.seed,
        "agentcore": ours_shared, "agentcore_with_secrets": ours_every,
        "presidio": {**theirs, "version": presidio_version,
                     "recognisers": "CreditCard, Email, Iban, Phone pattern recognisers (no spaCy model)"},
        "recall_ratio": {k: round(ours_shared["recall"][k] / max(theirs["recall"][k], 1e-9), 2) for k in SHARED},
        "throughput_ratio": round(ours_shared["mb_per_s"] / theirs["mb_per_s"], 1),
        "document_mb_per_s": {name: round(rate, 2) for name, rate in bulk.items()},
        "document_throughput_ratio": round(bulk["agentcore"] / bulk["presidio"], 1),
        "clock": "thread CPU time",
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}, "
                   f"Python {platform.python_version()}",
    }))  # fmt: skip


if __name__ == "__main__":
    main()
