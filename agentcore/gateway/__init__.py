"""agentcore.gateway: enforce policies on every tool call, in-process and as an MCP proxy.

Import from here or from ``agentcore``: ``from agentcore import Gateway, ToolDenied``.
"""

from __future__ import annotations

from agentcore.gateway.approval_flow import Approvals
from agentcore.gateway.approvals import Approval
from agentcore.gateway.audit import AuditLog, VerifyResult
from agentcore.gateway.canonical import ArgumentLimits
from agentcore.gateway.errors import (
    ApprovalError,
    ApprovalRequired,
    GatewayError,
    ToolArgumentError,
    ToolDenied,
    ToolExecutionError,
    UnknownToolError,
)
from agentcore.gateway.gateway import Gateway
from agentcore.gateway.registry import Tool

__all__ = [
    "Approval",
    "ApprovalError",
    "ApprovalRequired",
    "Approvals",
    "ArgumentLimits",
    "AuditLog",
    "Gateway",
    "GatewayError",
    "Tool",
    "ToolArgumentError",
    "ToolDenied",
    "ToolExecutionError",
    "UnknownToolError",
    "VerifyResult",
]
