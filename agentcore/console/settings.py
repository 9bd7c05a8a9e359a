"""What the console reads: the gateway's database, chain keys and anchors, its JWT settings, reports, ledger."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict

from agentcore.errors import ConfigError
from agentcore.gateway.mcp.config import Auth, load_config


class ConsoleSettings(BaseModel):
    """``database`` as the gateway's (SQLAlchemy URL or SQLite path); ``ledger`` defaults to the same database;
    ``reports``: a folder of the JSON reports ``agentcore eval run --report`` wrote."""

    model_config = ConfigDict(frozen=True)

    name: str = "agentcore-gateway"
    database: str | None = None
    audit_key_file: Path | None = None
    anchors: Path | None = None
    auth: Auth
    reports: Path | None = None
    ledger: str | None = None

    @classmethod
    def from_gateway_config(
        cls, path: Path, *, reports: Path | None = None, ledger: str | None = None
    ) -> ConsoleSettings:
        """The console of the gateway ``path`` (gateway.toml) configures: same database, keys and JWT settings."""
        config = load_config(path)
        if config.auth is None:
            raise ConfigError(
                f"{path}: the console signs approvers in with the gateway's JWT settings: add [gateway.auth]"
            )
        return cls(
            name=config.name,
            database=config.database,
            audit_key_file=config.audit_key_file,
            anchors=config.anchors,
            auth=config.auth,
            reports=reports,
            ledger=ledger,
        )
