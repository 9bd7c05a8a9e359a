"""Service times of models on one device profile, cached per (model, sequence bucket, precision, max batch)."""

from __future__ import annotations

import threading

from agentcore.accel.sim.models import SimModel
from agentcore.accel.sim.profiles import DeviceProfile
from agentcore.accel.sim.timing import CostParameters, ServiceTable, service_table


class ServiceCache:
    """Everything the scheduler asks the cost model, answered once per shape and then from memory."""

    def __init__(self, profile: DeviceProfile, params: CostParameters | None = None) -> None:
        self.profile = profile
        self.params = params or CostParameters()
        self._tables: dict[tuple[str, int, str, int], ServiceTable] = {}
        self._lock = threading.Lock()

    def table(self, model: SimModel, seq: int, precision: str, max_batch: int) -> ServiceTable:
        """Device seconds for batches 1..max_batch at ``seq`` tokens (padded to its bucket)."""
        self.profile.chip.tflops(precision)  # fail early, naming the precisions this chip has
        bucket = self.params.bucket(seq)
        key = (model.name, bucket, precision, max_batch)
        with self._lock:
            table = self._tables.get(key)
        if table is None:
            one, two = model.cost(1, bucket, precision), model.cost(2, bucket, precision)
            table = service_table(one, two, max_batch, self.profile, self.params)
            with self._lock:
                self._tables[key] = table
        return table
