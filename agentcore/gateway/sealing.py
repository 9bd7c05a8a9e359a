"""Personal data in audit records, encrypted per data subject so that erasure never rewrites the chain.

The principal, agent and session ids and the detail (arguments, reasons, errors) of a record are sealed with
AES-GCM under a key of the record's subject: its principal in its tenant (ids are unique within a tenant only, so
acme's bob and globex's bob have keys of their own). The chain hashes the ciphertext. ``forget`` deletes the
subject's keys: the records stay, still verify, and can no longer be read (crypto-shredding).

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
from agentcore.gateway.identity import ANY_TENANT, TenantFilter
from agentcore.text import canonical_text

SEALED = "sealed:"  # prefix of a sealed ``detail`` column: sealed:<key id>:<base64 of nonce + ciphertext>
_IDS = canonical.compact_encoder(sort_keys=False)
_decode_prefix = json.JSONDecoder().raw_decode


class SubjectKeyRow(SQLModel, table=True):
    """One data key of one subject (a subject may get several, e.g. from processes starting together)."""

    __tablename__ = "gateway_audit_subjects"

    id: str = Field(primary_key=True)
    subject: str = Field(index=True)  # subject_ref(), never the id or the tenant itself
    key: str  # hex of 32 random bytes
    created: float


def subject_ref(subject: str, tenant: str | None = None) -> str:
    """How keys name their subject: a SHA-256 of the id (without a tenant: as keys always were); in a tenant, that
    same digest, ``:`` and a SHA-256 of the JSON array [tenant, id], which no other pair of strings encodes. The
    shared prefix finds a subject's keys in every tenant without knowing the tenants."""
    plain = hashlib.sha256(b"agentcore audit subject\0" + subject.encode("utf-8")).hexdigest()
    if tenant is None:
        return plain
    pair = hashlib.sha256(b"agentcore audit tenant subject\0" + _IDS([tenant, subject]).encode("utf-8"))
    return f"{plain}:{pair.hexdigest()}"


class Sealer:
    """Seals and opens audit fields; caches each subject's key for the life of the process."""

    def __init__(self, db: Database) -> None:
        self.db = db
        db.create([SubjectKeyRow])
        # (tenant, principal) as records name them -> key id, its cipher, the id as bytes
        self._by_subject: dict[tuple[str | None, str], tuple[str, AESGCM, bytes]] = {}
        self._by_id: dict[str, AESGCM | None] = {}
        self._lock = threading.Lock()
        self._find = db.sql("SELECT id, key FROM gateway_audit_subjects WHERE subject = ? ORDER BY created LIMIT 1")
        self._get = db.sql("SELECT key FROM gateway_audit_subjects WHERE id = ?")
        self._add = db.sql("INSERT INTO gateway_audit_subjects (id, subject, key, created) VALUES (?, ?, ?, ?)")

    def seal(self, principal: str, agent: str | None, session: str | None, detail: str, *, tenant: str | None) -> str:
        """The sealed ``detail`` column of a record whose subject is ``principal`` in ``tenant``."""
        found = self._by_subject.get((tenant, principal))
        key_id, aead, aad = found if found is not None else self._key_of(tenant, principal)
        nonce = os.urandom(12)
        plaintext = (_IDS([principal, agent, session]) + detail).encode("utf-8")
        sealed = binascii.b2a_base64(nonce + aead.encrypt(nonce, plaintext, aad), newline=False).decode("ascii")
        return f"{SEALED}{key_id}:{sealed}"

    def known(self, subject: str, tenant: str | None) -> bool:
        """Is the key of ``subject`` in ``tenant`` at hand, so that sealing its record writes nothing else?"""
        return (tenant, subject) in self._by_subject

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

    def key_ids(self, cursor: Any, subject: str, tenant: TenantFilter = ANY_TENANT) -> list[str]:
        """Ids of the keys of ``subject`` in ``tenant`` (both canonical; ``ANY_TENANT``: in every tenant and
        without one), read in the caller's transaction."""
        plain = subject_ref(subject)
        if tenant is ANY_TENANT:  # its keys of every tenant start with its ref without one
            where, params = "subject = ? OR subject LIKE ?", [plain, f"{plain}:%"]
        else:
            where, params = "subject = ?", [subject_ref(subject, tenant)]
        cursor.execute(self.db.sql(f"SELECT id FROM gateway_audit_subjects WHERE {where}"), params)
        return [str(row[0]) for row in cursor.fetchall()]

    def destroy(self, cursor: Any, key_ids: list[str]) -> int:
        """Delete these keys inside the caller's write transaction (their records can no longer be read) and drop
        them from this process's cache; returns how many there were."""
        cursor.executemany(self.db.sql("DELETE FROM gateway_audit_subjects WHERE id = ?"), [(k,) for k in key_ids])
        gone = set(key_ids)
        with self._lock:
            for name in [name for name, found in self._by_subject.items() if found[0] in gone]:
                del self._by_subject[name]
            self._by_id.clear()
        return len(gone)

    def _key_of(self, tenant: str | None, subject: str) -> tuple[str, AESGCM, bytes]:
        """Find or create the key under the canonical spelling, the one ``forget`` reads: a record of a call refused
        before its ids were canonicalised (it names them as sent) is under its subject's key all the same."""
        ref = subject_ref(canonical_text(subject), None if tenant is None else canonical_text(tenant))
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
            found = self._by_subject[(tenant, subject)] = (key_id, AESGCM(secret), key_id.encode())
        return found

    def _load(self, key_id: str) -> AESGCM | None:
        with self.db.read() as cur:
            cur.execute(self._get, (key_id,))
            row = cur.fetchone()
        aead = AESGCM(bytes.fromhex(row[0])) if row else None
        with self._lock:
            self._by_id[key_id] = aead
        return aead
