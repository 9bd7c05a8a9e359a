"""Caller identity from a verified bearer JWT: ``sub`` is the principal, a claim holds roles, the rest are
attributes that policies can test."""

from __future__ import annotations

from typing import Any

import jwt

from agentcore.gateway.errors import GatewayError
from agentcore.gateway.mcp.config import Auth
from agentcore.policies.model import AgentInfo, Principal

_RESERVED = {"sub", "exp", "iat", "nbf", "iss", "aud", "jti"}


class AuthError(GatewayError):
    """The bearer token is missing, malformed, expired or not signed by the configured key."""


class JwtVerifier:
    """Verifies signature, expiry, audience and issuer; maps claims to Principal/AgentInfo/tenant."""

    def __init__(self, settings: Auth) -> None:
        self.settings = settings
        self._key = settings.key()

    def verify(self, authorization: str | None) -> tuple[Principal, AgentInfo, str | None]:
        if not authorization or not authorization.lower().startswith("bearer "):
            raise AuthError("missing bearer token: send `Authorization: Bearer <JWT>`")
        token = authorization[7:].strip()
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
        raw_roles = claims.get(s.roles_claim, [])
        roles = raw_roles.split() if isinstance(raw_roles, str) else [str(r) for r in raw_roles]
        attributes = {k: v for k, v in claims.items() if k not in _RESERVED}
        principal = Principal(id=str(claims["sub"]), roles=frozenset(roles), attributes=attributes)
        agent = AgentInfo(id=str(claims.get(s.agent_claim, "mcp-client")) if s.agent_claim else "mcp-client")
        tenant = claims.get(s.tenant_claim) if s.tenant_claim else None
        return principal, agent, None if tenant is None else str(tenant)
