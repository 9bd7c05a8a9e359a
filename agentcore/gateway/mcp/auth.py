"""Caller identity from a verified bearer JWT: ``sub`` is the principal, a claim holds roles, the rest are
attributes that policies can test."""

from __future__ import annotations

import json
import time
from typing import Any

import jwt
from jwt.utils import base64url_decode
from pydantic import TypeAdapter, ValidationError

from agentcore.gateway.canonical import UnicodeMode
from agentcore.gateway.errors import GatewayError
from agentcore.gateway.mcp.config import Auth
from agentcore.policies.model import AgentInfo, Principal, TenantString

_RESERVED = {"sub", "exp", "iat", "nbf", "iss", "aud", "jti"}
Caller = tuple[Principal, AgentInfo, str | None]
_TENANT: TypeAdapter[str] = TypeAdapter(TenantString)


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

    def __init__(self, settings: Auth, cache_size: int = 1024, unicode: UnicodeMode = "canonicalize") -> None:
        self.settings = settings
        self._validation = {"unicode": unicode}  # "reject": a claim not in canonical form is refused (401)
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
        _strict_json(token.split(".")[1])
        return claims

    def _caller(self, claims: dict[str, Any]) -> Caller:
        """The caller a validly signed token names; claims of the wrong shape are the token's fault (401), never
        read as something else (``str()`` of a number, a list or null named a caller the issuer never did)."""
        s = self.settings
        raw_roles = claims.get(s.roles_claim, [])
        if isinstance(raw_roles, str):
            roles = raw_roles.split()
        elif isinstance(raw_roles, list) and all(isinstance(r, str) for r in raw_roles):
            roles = raw_roles
        else:
            raise AuthError(f"invalid bearer token: the {s.roles_claim!r} claim must be a list of strings")
        agent_id = claims.get(s.agent_claim, "mcp-client") if s.agent_claim else "mcp-client"
        tenant = claims.get(s.tenant_claim) if s.tenant_claim else None
        named = {"sub": claims["sub"]}
        if s.agent_claim is not None:
            named[s.agent_claim] = agent_id
        if s.tenant_claim is not None and s.tenant_claim in claims:  # a tenant claim of null is not "no tenant"
            named[s.tenant_claim] = tenant
        for name, value in named.items():
            if not isinstance(value, str):
                raise AuthError(f"invalid bearer token: the {name!r} claim must be a string")
        attributes = {k: v for k, v in claims.items() if k not in _RESERVED}
        try:
            fields = {"id": claims["sub"], "roles": frozenset(roles), "attributes": attributes}
            principal = Principal.model_validate(fields, context=self._validation)
        except ValidationError as error:
            field = str(error.errors()[0]["loc"][0])
            raise _no_caller({"id": "sub", "roles": s.roles_claim}.get(field, "attributes"), error) from None
        try:
            agent = AgentInfo.model_validate({"id": agent_id}, context=self._validation)
        except ValidationError as error:
            raise _no_caller(s.agent_claim, error) from None
        try:
            tenant = None if tenant is None else _TENANT.validate_python(tenant, context=self._validation)
        except ValidationError as error:
            raise _no_caller(s.tenant_claim, error) from None
        return principal, agent, tenant


def _no_caller(claim: str | None, error: ValidationError) -> AuthError:
    return AuthError(f"invalid bearer token: its claims do not name a caller: {claim!r} {error.errors()[0]['msg']}")


def _strict_json(payload: str) -> None:
    """Refuse a verified payload that is not strict JSON: a name given twice (PyJWT reads the last one, a front
    proxy or another library may read the first, so one token would name two callers), NaN or Infinity, or text
    other than UTF-8 (PyJWT also reads UTF-16 and a BOM)."""

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        names = [name for name, _ in items]
        if len(set(names)) != len(names):
            raise AuthError("invalid bearer token: a claim name appears more than once in its payload")
        return dict(items)

    def constant(name: str) -> Any:
        raise AuthError(f"invalid bearer token: its payload holds {name}, which is not JSON")

    try:
        json.loads(base64url_decode(payload).decode("utf-8"), object_pairs_hook=pairs, parse_constant=constant)
    except ValueError:  # UnicodeDecodeError, JSONDecodeError: PyJWT parsed what strict JSON does not
        raise AuthError("invalid bearer token: its payload is not JSON in UTF-8") from None
