"""Metering of real calls: charge each batch to the simulated fleet, stamp the receipt, write the ledger.

The ``Accelerator`` asks for a :class:`~agentcore.accel.sim.device.Charge` before it runs anything, so a
call the simulated device rejects (full queue) never runs on the CPU; it is recorded as a rejection and
raised as :class:`~agentcore.accel.errors.AdmissionError`.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from agentcore.accel.errors import AdmissionError
from agentcore.accel.ledger import Ledger
from agentcore.accel.sim.device import Charge, SimulatedDevice
from agentcore.accel.sim.models import model_from_file
from agentcore.accel.telemetry import record_receipt

if TYPE_CHECKING:
    from agentcore.accel.runtime import Receipt

log = logging.getLogger(__name__)

# The int8 encoder's MatMulInteger runs at the 8-bit rate: AWS publishes no INT8 figure for Trn2/Trn3.
VARIANT_PRECISION = {"fp32": "fp32", "int8": "fp8"}


def sequence_length(inputs: Mapping[str, np.ndarray]) -> int:
    """The longest axis-1 extent among inputs (1 for inputs of rank 1): what a sequence bucket is chosen by."""
    return max((int(value.shape[1]) for value in inputs.values() if value.ndim > 1), default=1)


class Meter:
    """One Accelerator's simulated device and ledger (``ledger=None``: receipts are not persisted)."""

    def __init__(self, device: SimulatedDevice | str | None, ledger: Ledger | Literal["default"] | None) -> None:
        self._device = SimulatedDevice(device) if isinstance(device, str) else device  # a bad name fails here
        self._ledger = ledger

    @property
    def device(self) -> SimulatedDevice:
        if not isinstance(self._device, SimulatedDevice):
            self._device = SimulatedDevice(self._device)
        return self._device

    @property
    def ledger(self) -> Ledger | None:
        if self._ledger == "default":
            self._ledger = Ledger()
        return self._ledger

    def charge(self, path: Path, name: str, variant: str, batches: Sequence[tuple[int, int]]) -> Charge:
        precision = VARIANT_PRECISION.get(variant, "fp32")
        return self.device.charge(model_from_file(path, name), batches, precision)

    def fields(self, charge: Charge) -> dict[str, Any]:
        """The receipt fields a charge fills in."""
        return {
            "queue_seconds": charge.queue_seconds,
            "device_seconds": charge.device_seconds,
            "latency_seconds": charge.latency_seconds,
            "usd": charge.usd,
            "joules": charge.joules,
            "profile": self.device.profile.name,
            "devices": charge.devices,
            "rejected": charge.rejected,
        }

    def settle(self, receipt: Receipt, charge: Charge) -> Receipt:
        """Persist (and trace) the receipt; a rejected one is raised after it is recorded, never dropped."""
        record_receipt(receipt)
        ledger = self.ledger
        if ledger is not None:
            ledger.record(receipt, charge.shares)
        if charge.rejected:
            raise AdmissionError(
                f"simulated {receipt.profile} rejected {receipt.items} items of {receipt.model} for tenant "
                f"{receipt.tenant}: its queue holds {self.device.max_queue} batches; retry later or raise max_queue",
                receipt,
            )
        return receipt
