"""``gateway.toml``: the proxy's policies, database, identity (stdio), JWT settings (HTTP) and upstream targets."""

from __future__ import annotations

import logging
import os
import re
import tomllib
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from agentcore.errors import ConfigError
from agentcore.policies.model import IdentityString, TenantString

log = logging.getLogger(__name__)
TARGET_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9-]{0,39}$")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Target(_Strict):
    """One upstream MCP server: a stdio subprocess (``command``/``args``) or a streamable HTTP ``url``."""

    name: str = Field(description="prefix of its tools: `crm` exposes `crm__lookup`, policies see `crm.lookup`")
    command: str | None = None
    args: list[str] = []
    env: dict[str, str] = {}
    url: str | None = None
    headers: dict[str, str] = {}

    @model_validator(mode="after")
    def _one_transport(self) -> Target:
        if not TARGET_NAME.match(self.name):
            raise ValueError(f"target name {self.name!r}: use a letter then letters, digits or '-' (max 40)")
        if (self.command is None) == (self.url is None):
            raise ValueError(f"target {self.name!r}: set exactly one of `command` (stdio) or `url` (HTTP)")
        return self


class Identity(_Strict):
    """Who the caller is on stdio (there is no token to read): ids as the gateway takes them (printable, not empty
    in canonical form), checked when the file is read rather than at every call."""

    principal: IdentityString
    roles: list[IdentityString] = []
    attributes: dict[str, object] = {}
    agent: IdentityString = "mcp-client"
    tenant: TenantString | None = None


class Auth(_Strict):
    """Bearer JWT verification for HTTP. HS256 needs a secret; RS256 a PEM public key."""

    algorithms: list[Literal["HS256", "HS384", "HS512", "RS256", "RS384", "RS512", "ES256"]] = ["HS256"]
    secret_env: str | None = Field(None, description="environment variable holding the HMAC secret")
    public_key_file: Path | None = None
    audience: str | None = None
    issuer: str | None = None
    roles_claim: str = "roles"
    agent_claim: str | None = None
    tenant_claim: str | None = None
    leeway_s: float = 30.0
    resource: str | None = Field(
        None, description="this gateway's MCP URL in RFC 9728 metadata (default: as requested)"
    )
    authorization_servers: list[str] = Field([], description="where clients get tokens (RFC 9728; default: issuer)")

    @model_validator(mode="after")
    def _has_key(self) -> Auth:
        hmac = any(a.startswith("HS") for a in self.algorithms)
        public = any(not a.startswith("HS") for a in self.algorithms)
        if hmac and public:
            raise ValueError("do not mix HMAC (HS*) and public-key algorithms in one gateway")
        if hmac and not self.secret_env:
            raise ValueError("HS* algorithms need `secret_env`, the variable that holds the secret")
        if public and not self.public_key_file:
            raise ValueError("RS*/ES* algorithms need `public_key_file` (PEM)")
        return self

    def key(self) -> str:
        if self.public_key_file is not None:
            return self.public_key_file.read_text(encoding="utf-8")
        secret = os.environ.get(self.secret_env or "")
        if not secret:
            raise ConfigError(
                f"environment variable {self.secret_env} (the JWT secret for HTTP) is not set; a client that starts "
                "the server passes only the environment its server entry names (`env` of the official client)"
            )
        return secret


class ProxyConfig(_Strict):
    """The whole file. Relative paths are relative to the file's folder."""

    name: str = "agentcore-gateway"
    policies: list[Path] = []
    database: str | None = None
    state: str | None = None
    durability: Literal["process", "power"] = Field("process", description="`power`: fsync every audit commit")
    outcome_delay_s: float = Field(
        0, ge=0, description="> 0: an executed call's outcome record rides in the next commit (opt-in, see docs)"
    )
    write_ahead: bool | None = Field(None, description="deprecated: every allowed decision is committed first")
    audit_key_file: Path | None = Field(None, description="audit chain keys (default $AGENTCORE_AUDIT_KEY_FILE)")
    anchors: Path | None = Field(None, description="JSONL file of signed audit checkpoints")
    mode: Literal["enforce", "monitor"] = "enforce"
    resolver_timeout_s: float = Field(5.0, gt=0, description="deadline of each resolver lookup; late fails closed")
    unicode: Literal["canonicalize", "reject"] = Field(
        "canonicalize", description="text not in canonical form (NFKC, no invisible characters): rewrite or refuse"
    )
    tools: list[str] = Field([], description="`module:function` callables that register in-process tools")
    identity: Identity | None = None
    dev_unauthenticated: bool = Field(False, description="HTTP without auth, every caller the identity; loopback only")
    auth: Auth | None = None
    targets: list[Target] = []

    @field_validator("write_ahead")
    @classmethod
    def _write_ahead_is_always_on(cls, value: bool | None) -> bool | None:
        if value is False:
            raise ValueError(
                "write_ahead = false is no longer possible: no tool runs before its allow decision is committed; "
                "remove the setting"
            )
        if value:
            log.warning("gateway.toml: write_ahead is deprecated (always on now); remove the setting")
        return value


def load_config(path: Path) -> ProxyConfig:
    """Parse and validate ``gateway.toml``; errors name the file and the bad setting."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise ConfigError(f"{path}: cannot read gateway config: {error}") from None
    section = data.get("gateway", data)
    try:
        config = ProxyConfig.model_validate(section)
    except ValidationError as error:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in error.errors())
        raise ConfigError(f"{path}: invalid gateway config: {problems}") from None
    base = path.parent
    policies = [p if p.is_absolute() else base / p for p in config.policies]
    files = {name: base / value for name in ("audit_key_file", "anchors")
             if (value := getattr(config, name)) is not None and not value.is_absolute()}  # fmt: skip
    return config.model_copy(update={"policies": policies, **files})
