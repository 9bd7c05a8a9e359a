"""agentcore.gateway: enforce policies on every tool call, in-process and as an MCP proxy.

Import from here or from ``agentcore``: ``from agentcore import Gateway, ToolDenied``.
"""

from __future__ import annotations

from agentcore.gateway.anchors import AnchorSink, Checkpoint, JsonlAnchorSink
from agentcore.gateway.approval_flow import Approvals
from agentcore.gateway.approvals import Approval
from agentcore.gateway.audit import AuditIntegrityError, AuditLog, VerifyResult
from agentcore.gateway.audit_keys import ChainKey, ChainKeys
from agentcore.gateway.canonical import ArgumentLimits
from agentcore.gateway.errors import (
    ApprovalError,
    ApprovalRequired,
    ErasureIncomplete,
    GatewayError,
    OutcomeNotRecorded,
    StateUnavailable,
    ToolArgumentError,
    ToolDenied,
    ToolExecutionError,
    UnknownToolError,
)
from agentcore.gateway.gateway import Gateway
from agentcore.gateway.registry import Tool

__all__ = [
    "AnchorSink",
    "Approval",
    "ApprovalError",
    "ApprovalRequired",
    "Approvals",
    "ArgumentLimits",
    "AuditIntegrityError",
    "AuditLog",
    "ChainKey",
    "ChainKeys",
    "Checkpoint",
    "ErasureIncomplete",
    "Gateway",
    "GatewayError",
    "JsonlAnchorSink",
    "OutcomeNotRecorded",
    "StateUnavailable",
    "Tool",
    "ToolArgumentError",
    "ToolDenied",
    "ToolExecutionError",
    "UnknownToolError",
    "VerifyResult",
]
