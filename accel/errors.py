"""Errors of the simulated accelerator: bad profiles, impossible placements, rejected requests."""

from __future__ import annotations

from agentcore.errors import AgentCoreError, ConfigError


class ProfileError(ConfigError):
    """A device profile is unknown, malformed, or lacks a figure that a simulation needs."""


class PlacementError(AgentCoreError):
    """A model cannot be placed: its weights plus activations fit in no NeuronCore's HBM share."""


class CostModelError(AgentCoreError):
    """An ONNX graph cannot be costed (missing shapes, unsupported precision)."""


class WorkloadError(ConfigError):
    """A workload is unknown or malformed (a preset name, a file, or a field)."""


class AdmissionError(AgentCoreError):
    """The simulated device rejected a call: its model queue is full. ``receipt`` records the rejection."""

    def __init__(self, message: str, receipt: object) -> None:
        super().__init__(message)
        self.receipt = receipt
