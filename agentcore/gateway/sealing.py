"""Personal data in audit records, encrypted per data subject so that erasure never rewrites the chain.

The principal, agent and session ids and the detail (arguments, reasons, errors) of a record are sealed with
AES-GCM under a key of the record's subject (its principal); the chain hashes the ciphertext. ``forget`` deletes
the subject's keys: the records stay, still verify, and can no longer be read (crypto-shredding).

Keys live in ``gateway_audit_subjects``, apart from the records. Each key has a random id, which is all a record
names; the subject is found by a SHA-256 of its id, so neither records nor keys hold the id in plaintext, and once
the keys are gone nothing links a record to anyone. This protects erasure, not confidentiality: whoever reads the
database reads the keys too.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import os
import threading
import time
from typing import Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from sqlmodel import Field, SQLModel

from agentcore.gateway import canonical
from agentcore.gateway.db import Database

SEALED = "sealed:"  # prefix of a sealed ``detail`` column: sealed:<key id>:<base64 of nonce + ciphertext>
_IDS = canonical.compact_encoder(sort_keys=False)
_decode_prefix = json.JSONDecoder().raw_decode


class SubjectKeyRow(SQLModel, table=True):
    """One data key of one subject (a subject may get several, e.g. from processes starting together)."""

    __tablename__ = "gateway_audit_subjects"

    id: str = Field(primary_key=True)
    subject: str = Field(index=True)  # subject_ref(), never the id itself
    key: str  # hex of 32 random bytes
    created: float


def subject_ref(subject: str) -> str:
    return hashlib.sha256(b"agentcore audit subject\0" + subject.encode("utf-8")).hexdigest()


class Sealer:
    """Seals and opens audit fields; caches each subject's key for the life of the process."""

    def __init__(self, db: Database) -> None:
        self.db = db
        db.create([SubjectKeyRow])
        self._by_subject: dict[str, tuple[str, AESGCM, bytes]] = {}  # subject -> key id, its cipher, id as bytes
        self._by_id: dict[str, AESGCM | None] = {}
        self._lock = threading.Lock()
        self._find = db.sql("SELECT id, key FROM gateway_audit_subjects WHERE subject = ? ORDER BY created LIMIT 1")
        self._get = db.sql("SELECT key FROM gateway_audit_subjects WHERE id = ?")
        self._add = db.sql("INSERT INTO gateway_audit_subjects (id, subject, key, created) VALUES (?, ?, ?, ?)")

    def seal(self, principal: str, agent: str | None, session: str | None, detail: str) -> str:
        """The sealed ``detail`` column of a record whose subject is ``principal``."""
        found = self._by_subject.get(principal)
        key_id, aead, aad = found if found is not None else self._key_of(principal)
        nonce = os.urandom(12)
        plaintext = (_IDS([principal, agent, session]) + detail).encode("utf-8")
        sealed = binascii.b2a_base64(nonce + aead.encrypt(nonce, plaintext, aad), newline=False).decode("ascii")
        return f"{SEALED}{key_id}:{sealed}"

    def known(self, subject: str) -> bool:
        """Is ``subject``'s key at hand, so that sealing its record writes nothing else?"""
        return subject in self._by_subject

    def open(self, sealed: str) -> tuple[str, str | None, str | None, str] | None:
        """(principal, agent, session, detail) of a sealed column; ``None`` when it cannot be read: the subject was
        forgotten, or the ciphertext was edited (which verify reports as a modified record)."""
        key_id, _, body = sealed[len(SEALED) :].partition(":")
        aead = self._by_id[key_id] if key_id in self._by_id else self._load(key_id)
        if aead is None:
            return None
        try:
            raw = base64.b64decode(body, validate=True)
            text = aead.decrypt(raw[:12], raw[12:], key_id.encode()).decode("utf-8")
        except (InvalidTag, ValueError):
            return None
        (principal, agent, session), end = _decode_prefix(text)
        return principal, agent, session, text[end:]

    def forget(self, subject: str, cursor: Any) -> int:
        """Delete ``subject``'s keys inside the caller's write transaction; returns how many."""
        cursor.execute(self.db.sql("DELETE FROM gateway_audit_subjects WHERE subject = ?"), (subject_ref(subject),))
        with self._lock:
            self._by_subject.pop(subject, None)
            self._by_id.clear()
        return int(cursor.rowcount)

    def _key_of(self, subject: str) -> tuple[str, AESGCM, bytes]:
        ref = subject_ref(subject)
        with self.db.read() as cur:
            cur.execute(self._find, (ref,))
            row = cur.fetchone()
        if row is None:
            key_id, secret = os.urandom(16).hex(), os.urandom(32)
            with self.db.write("gateway_audit_subjects") as cur:
                cur.execute(self._add, (key_id, ref, secret.hex(), time.time()))
        else:
            key_id, secret = row[0], bytes.fromhex(row[1])
        with self._lock:
            found = self._by_subject[subject] = (key_id, AESGCM(secret), key_id.encode())
        return found

    def _load(self, key_id: str) -> AESGCM | None:
        with self.db.read() as cur:
            cur.execute(self._get, (key_id,))
            row = cur.fetchone()
        aead = AESGCM(bytes.fromhex(row[0])) if row else None
        with self._lock:
            self._by_id[key_id] = aead
        return aead
