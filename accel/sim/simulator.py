"""The simulator's front door: run a workload on a profile, compare two profiles, plan capacity."""

from __future__ import annotations

import logging

from pydantic import BaseModel, ConfigDict

from agentcore.accel.sim.config import load_config
from agentcore.accel.sim.profiles import DeviceProfile, ProfileCatalog
from agentcore.accel.sim.report import SimulationReport, summarise
from agentcore.accel.sim.scheduler import Progress, run
from agentcore.accel.sim.service import ServiceCache
from agentcore.accel.sim.timing import CostParameters
from agentcore.accel.sim.workload import Workload, load_workload

log = logging.getLogger(__name__)


class Comparison(BaseModel):
    """Two reports of one workload; every ratio is B over A."""

    model_config = ConfigDict(frozen=True)

    a: SimulationReport
    b: SimulationReport
    throughput_ratio: float
    p99_latency_ratio: float
    usd_per_1k_ratio: float
    joules_per_1k_ratio: float


def _ratio(b: float, a: float) -> float:
    return b / a if a else float("inf")


class Simulator:
    """Simulate-only mode: no onnxruntime, just the cost model and the scheduler on a virtual clock."""

    def __init__(
        self,
        profile: str | DeviceProfile = "trn2.48xlarge",
        *,
        catalog: ProfileCatalog | None = None,
        params: CostParameters | None = None,
    ) -> None:
        self.catalog = catalog or load_config().catalog()
        self.profile = profile if isinstance(profile, DeviceProfile) else self.catalog.profile(profile)
        self.service = ServiceCache(self.profile, params)

    def run(self, workload: Workload | str, *, progress: Progress | None = None) -> SimulationReport:
        spec = load_workload(workload) if isinstance(workload, str) else workload
        simulation = run(spec, self.service, progress=progress)
        report = summarise(simulation, spec, self.profile)
        log.info(
            "simulated %d requests of %s on %s in %.2f s wall", report.requests, spec.name, self.profile.name,
            report.wall_seconds,
        )  # fmt: skip
        return report

    def compare(
        self, other: str | DeviceProfile, workload: Workload | str, *, progress: Progress | None = None
    ) -> Comparison:
        """Run ``workload`` here (A) and on ``other`` (B) with the same cost parameters."""
        b_sim = Simulator(other, catalog=self.catalog, params=self.service.params)
        a = self.run(workload, progress=progress)
        b = b_sim.run(workload, progress=progress)
        return Comparison(
            a=a,
            b=b,
            throughput_ratio=_ratio(b.throughput_rps, a.throughput_rps),
            p99_latency_ratio=_ratio(b.latency.p99_ms, a.latency.p99_ms),
            usd_per_1k_ratio=_ratio(b.usd_per_1k, a.usd_per_1k),
            joules_per_1k_ratio=_ratio(b.joules_per_1k, a.joules_per_1k),
        )
