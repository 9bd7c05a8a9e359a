"""``agentcore console``: a local web console over the gateway's database (approvals, audit, evaluations, spend).

See docs/console.md. Needs the ``console`` extra (Starlette, Jinja2, uvicorn).
"""

from __future__ import annotations

from agentcore.console.app import create_app
from agentcore.console.settings import ConsoleSettings

__all__ = ["ConsoleSettings", "create_app"]
