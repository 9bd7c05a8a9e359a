"""Caller identity from a verified bearer JWT: ``sub`` is the principal, a claim holds roles, the rest are
attributes that policies can test."""

from __future__ import annotations

import time
from typing import Any

import jwt
from pydantic import ValidationError

from agentcore.gateway.errors import GatewayError
from agentcore.gateway.mcp.config import Auth
from agentcore.policies.model import AgentInfo, Principal

_RESERVED = {"sub", "exp", "iat", "nbf", "iss", "aud", "jti"}
Caller = tuple[Principal, AgentInfo, str | None]


class AuthError(GatewayError):
    """The bearer token is missing, malformed, expired or not signed by the configured key."""


class JwtVerifier:
    """Verifies signature, expiry, audience and issuer; maps claims to Principal/AgentInfo/tenant.

    A client sends the same token on every request, so tokens that verified are remembered (at most
    ``cache_size``, keyed by the exact token string) until they expire: a hit costs a dict lookup and an expiry
    check instead of a signature check and claim mapping. Failures are never remembered. Only expiry can turn a
    verified token bad later (the key, audience and issuer are fixed; ``nbf``/``iat`` can only become valid), so
    a hit re-checks ``exp`` with the same leeway PyJWT applies.
    """

    def __init__(self, settings: Auth, cache_size: int = 1024) -> None:
        self.settings = settings
        self._key = settings.key()
        self._cache_size = cache_size
        self._verified: dict[str, tuple[float, Caller]] = {}  # token -> (exp, caller)

    def verify(self, authorization: str | None) -> Caller:
        if not authorization or not authorization.lower().startswith("bearer "):
            raise AuthError("missing bearer token: send `Authorization: Bearer <JWT>`")
        token = authorization[7:].strip()
        hit = self._verified.get(token)
        if hit is not None:
            if hit[0] > time.time() - self.settings.leeway_s:
                return hit[1]
            del self._verified[token]  # expired: verify again, which raises the usual error
        claims = self._decode(token)
        caller = self._caller(claims)
        if len(self._verified) >= self._cache_size:
            del self._verified[next(iter(self._verified))]  # oldest first
        self._verified[token] = (int(claims["exp"]), caller)
        return caller

    def _decode(self, token: str) -> dict[str, Any]:
        s = self.settings
        try:
            claims: dict[str, Any] = jwt.decode(
                token,
                self._key,
                algorithms=list(s.algorithms),
                audience=s.audience,
                issuer=s.issuer,
                leeway=s.leeway_s,
                options={"require": ["sub", "exp"], "verify_aud": s.audience is not None},
            )
        except jwt.PyJWTError as error:
            raise AuthError(f"invalid bearer token: {error}") from None
        return claims

    def _caller(self, claims: dict[str, Any]) -> Caller:
        """The caller a validly signed token names; claims of the wrong shape are the token's fault (401)."""
        s = self.settings
        raw_roles = claims.get(s.roles_claim, [])
        if isinstance(raw_roles, str):
            roles = raw_roles.split()
        elif isinstance(raw_roles, list) and all(isinstance(r, str) for r in raw_roles):
            roles = raw_roles
        else:
            raise AuthError(f"invalid bearer token: the {s.roles_claim!r} claim must be a list of strings")
        attributes = {k: v for k, v in claims.items() if k not in _RESERVED}
        try:
            principal = Principal(id=str(claims["sub"]), roles=frozenset(roles), attributes=attributes)
            agent = AgentInfo(id=str(claims.get(s.agent_claim, "mcp-client")) if s.agent_claim else "mcp-client")
        except ValidationError as error:
            raise AuthError(
                f"invalid bearer token: its claims do not name a caller: {error.errors()[0]['msg']}"
            ) from None
        tenant = claims.get(s.tenant_claim) if s.tenant_claim else None
        return principal, agent, None if tenant is None else str(tenant)
