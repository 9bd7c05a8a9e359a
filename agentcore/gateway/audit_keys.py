"""Secrets of the audit chain, kept out of the database: HMAC chain keys and the anchor signing key derived from them.

Someone who can write the database can recompute plain SHA-256 hashes; they cannot recompute an HMAC without the
key. Keys carry an id, stored in every record, so a new key can take over while older records still verify.

A key source is a text of ``KEY_ID:SECRET`` lines (``#`` comments allowed; the first key signs new records, the
others only verify) read from a key file, the ``AGENTCORE_AUDIT_KEY`` environment variable (lines or commas), or
returned by a callback (e.g. a secrets-manager client). ``AGENTCORE_AUDIT_KEY_FILE`` names the default key file.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from agentcore.errors import ConfigError

KEY_ENV = "AGENTCORE_AUDIT_KEY"
KEY_FILE_ENV = "AGENTCORE_AUDIT_KEY_FILE"
MIN_SECRET_BYTES = 32
_KEY_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")


@dataclass(frozen=True, slots=True)
class ChainKey:
    """One HMAC key: ``id`` goes into each record it hashes, ``secret`` never leaves the process."""

    id: str
    secret: bytes = field(repr=False)
    _keyed: Any = field(init=False, repr=False, compare=False)  # HMAC with the key already absorbed

    def __post_init__(self) -> None:
        if not _KEY_ID.fullmatch(self.id):
            raise ConfigError(f"audit key id {self.id!r} must be 1-64 letters, digits, '.', '_' or '-'")
        if len(self.secret) < MIN_SECRET_BYTES:
            raise ConfigError(f"audit key {self.id!r} is too short: use at least {MIN_SECRET_BYTES} bytes of secret")
        object.__setattr__(self, "_keyed", hmac.new(self.secret, digestmod=hashlib.sha256))

    def mac(self, message: bytes) -> str:
        """HMAC-SHA-256 of ``message``: a copy of the keyed state skips the key setup (runs on every call)."""
        state = self._keyed.copy()
        state.update(message)
        return str(state.hexdigest())

    def signing_key(self) -> Ed25519PrivateKey:
        """The anchor signing key: an Ed25519 key derived from this secret, so one secret configures both."""
        seed = hmac.new(self.secret, b"agentcore audit anchor signing key v1", hashlib.sha256).digest()
        return Ed25519PrivateKey.from_private_bytes(seed)


class ChainKeys:
    """The keys a gateway or verifier holds: ``current`` hashes new records, every key verifies its records."""

    def __init__(self, keys: Sequence[ChainKey]) -> None:
        if not keys:
            raise ConfigError("an audit key source holds no keys; write KEY_ID:SECRET lines")
        self._by_id = {key.id: key for key in keys}
        if len(self._by_id) != len(keys):
            raise ConfigError("an audit key source names the same key id twice")
        self.current = keys[0]

    def get(self, key_id: str) -> ChainKey | None:
        return self._by_id.get(key_id)

    def public_keys(self) -> dict[str, Ed25519PublicKey]:
        """Anchor signer id (hex of the raw public key) -> public key, for every key held."""
        publics = [key.signing_key().public_key() for key in self._by_id.values()]
        return {signer_id(public): public for public in publics}

    @classmethod
    def parse(cls, text: str, source: str) -> ChainKeys:
        keys = []
        for number, line in enumerate(text.replace(",", "\n").splitlines(), 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            key_id, colon, secret = line.partition(":")
            if not colon:
                raise ConfigError(f"{source}:{number}: expected KEY_ID:SECRET")
            keys.append(ChainKey(key_id.strip(), secret.strip().encode("utf-8")))
        return cls(keys)

    @classmethod
    def from_file(cls, path: str | Path) -> ChainKeys:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as error:
            raise ConfigError(f"cannot read the audit key file {path}: {error.strerror or error}") from error
        return cls.parse(text, str(path))


KeySource = ChainKeys | str | Path | Callable[[], "ChainKeys | str"]


def load_chain_keys(source: KeySource | None = None) -> ChainKeys | None:
    """Keys from ``source`` (keys, a key file path, or a callback), else from the environment, else ``None``."""
    if isinstance(source, ChainKeys):
        return source
    if isinstance(source, str | Path):
        return ChainKeys.from_file(source)
    if source is not None:
        if not callable(source):
            raise TypeError(f"audit_key must be ChainKeys, a key file path or a callable, not {type(source).__name__}")
        got = source()
        return got if isinstance(got, ChainKeys) else ChainKeys.parse(got, "audit key callback")
    if os.environ.get(KEY_FILE_ENV):
        return ChainKeys.from_file(os.environ[KEY_FILE_ENV])
    if os.environ.get(KEY_ENV):
        return ChainKeys.parse(os.environ[KEY_ENV], KEY_ENV)
    return None


def signer_id(public: Ed25519PublicKey) -> str:
    return public.public_bytes(Encoding.Raw, PublicFormat.Raw).hex()
