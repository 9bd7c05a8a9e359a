"""Signing in with the gateway's bearer JWT, and CSRF protection of every form.

The session cookie holds the JWT itself (HttpOnly, SameSite=Strict) and every request verifies it with the MCP
proxy's :class:`~agentcore.gateway.mcp.auth.JwtVerifier`, so an approver's identity and roles are exactly the ones
the gateway API would see, and an expired token signs the approver out. Each form carries a CSRF token derived
from the session (HMAC with a per-process secret); before sign-in, a random double-submit cookie plays that part.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass

from starlette.exceptions import HTTPException
from starlette.requests import Request

from agentcore.gateway.identity import canonical_tenant
from agentcore.gateway.mcp.auth import AuthError, JwtVerifier
from agentcore.gateway.mcp.config import Auth
from agentcore.policies.model import Principal

SESSION_COOKIE = "agentcore_console"
LOGIN_COOKIE = "agentcore_console_login"


@dataclass(frozen=True)
class Approver:
    """Who is signed in (as the gateway would see them: id, roles and tenant) and the CSRF token of their forms.

    ``tenant`` is the token's claim in canonical form, the spelling requests, audit records and receipts store, so
    every page compares like with like; None: no claim (a viewer who sees what was done without a tenant)."""

    principal: Principal
    csrf: str
    tenant: str | None


class Authenticator:
    def __init__(self, auth: Auth) -> None:
        self.verifier = JwtVerifier(auth)
        self._secret = secrets.token_bytes(32)

    def sign_in(self, token: str) -> Approver:
        """The approver a pasted token names; AuthError says what is wrong with it."""
        principal, _, tenant = self.verifier.verify(f"Bearer {token.strip()}")
        return Approver(principal, self._csrf(token.strip()), canonical_tenant(tenant))

    def approver(self, request: Request) -> Approver | None:
        token = request.cookies.get(SESSION_COOKIE)
        if not token:
            return None
        try:
            return self.sign_in(token)
        except AuthError:
            return None

    def _csrf(self, token: str) -> str:
        return hmac.new(self._secret, token.encode(), hashlib.sha256).hexdigest()[:40]

    async def checked_form(self, request: Request) -> tuple[Approver, dict[str, str]]:
        """The signed-in approver and the form of a POST whose CSRF token matches; 401 / 403 otherwise."""
        approver = self.approver(request)
        if approver is None:
            raise HTTPException(401, "sign in first: your session is missing or its token expired")
        form = await _form(request)
        if not hmac.compare_digest(form.get("csrf", ""), approver.csrf):
            raise HTTPException(403, "the form's CSRF token is missing or wrong: reload the page and try again")
        return approver, form

    @staticmethod
    async def login_form(request: Request) -> dict[str, str]:
        """The sign-in form, whose CSRF token must match the double-submit cookie set with the form."""
        form = await _form(request)
        expected = request.cookies.get(LOGIN_COOKIE, "")
        if not expected or not hmac.compare_digest(form.get("csrf", ""), expected):
            raise HTTPException(403, "the sign-in form's CSRF token is missing or wrong: reload the page")
        return form


def new_login_token() -> str:
    return secrets.token_urlsafe(24)


async def _form(request: Request) -> dict[str, str]:
    data = await request.form()
    return {key: value for key, value in data.items() if isinstance(value, str)}
