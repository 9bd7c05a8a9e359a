"""Real Accelerator calls charged to the simulated fleet: receipts, queueing, rejection, the ledger."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from agentcore import Accelerator
from agentcore.accel.errors import AdmissionError
from agentcore.accel.ledger import Ledger
from agentcore.accel.sim.device import SimulatedDevice

TEXTS = [f"agent {i} asked the refund tool for order {i * 7}" for i in range(40)]


@pytest.fixture
def ledger(tmp_path: Path) -> Ledger:
    return Ledger(f"sqlite:///{tmp_path / 'agentcore.db'}")


def test_embed_receipts_carry_simulated_device_cost_next_to_cpu_time(ledger: Ledger) -> None:
    accelerator = Accelerator(device="trn2.48xlarge", ledger=ledger, batch_size=16)
    receipt = accelerator.embed(TEXTS, tenant="acme", agent="triage", user="ann").receipt
    assert receipt.profile == "trn2.48xlarge" and receipt.batches == 3
    assert len(receipt.devices) == 3 and all(d.startswith("trn2.48xlarge/chip0/core") for d in receipt.devices)
    assert receipt.cpu_seconds > 0 and receipt.device_seconds > 0 and receipt.usd > 0 and receipt.joules > 0
    assert receipt.latency_seconds <= receipt.device_seconds
    spend = accelerator.ledger.spend(tenant="acme", user="ann", window=timedelta(minutes=5))  # type: ignore[union-attr]
    assert spend.usd == pytest.approx(receipt.usd) and spend.calls == 1 and spend.items == 40


def test_trn3_runs_the_same_call_in_less_device_time(ledger: Ledger) -> None:
    trn2 = Accelerator(device="trn2", ledger=None).embed(TEXTS).receipt
    trn3 = Accelerator(device="trn3", ledger=None).embed(TEXTS).receipt
    assert trn3.device_seconds < trn2.device_seconds


def test_concurrent_calls_queue_behind_each_other_on_a_busy_chip() -> None:
    device = SimulatedDevice("trn2", clock=lambda: 0.0)  # frozen clock: every call arrives at the same instant
    accelerator = Accelerator(device=device, ledger=None, batch_size=5)
    first = accelerator.embed(TEXTS).receipt  # 8 batches fill the chip's 8 cores
    second = accelerator.embed(TEXTS[:5]).receipt
    assert first.queue_seconds == 0 and second.queue_seconds > 0


def test_a_full_device_queue_rejects_with_a_recorded_receipt(ledger: Ledger) -> None:
    device = SimulatedDevice("trn2", clock=lambda: 0.0, max_queue=8)
    accelerator = Accelerator(device=device, ledger=ledger, batch_size=5)
    accelerator.embed(TEXTS, tenant="acme")
    accelerator.embed(TEXTS, tenant="acme")  # 8 more batches wait behind the first 8: queue now full
    with pytest.raises(AdmissionError, match="queue holds 8 batches") as raised:
        accelerator.embed(TEXTS[:1], tenant="acme")
    assert raised.value.receipt.rejected and raised.value.receipt.batches == 0
    rows = {row.group["tenant"]: row.calls for row in ledger.report(by=["tenant"])}
    assert rows == {"acme": 3}


def test_infer_charges_any_onnx_model(tmp_path: Path, ledger: Ledger) -> None:
    weight = numpy_helper.from_array(np.ones((384, 2), dtype=np.float32), "w")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["logits"])],
        "head",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 384])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 2])],
        [weight],
    )
    path = tmp_path / "head.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    result = Accelerator(device="trn3", ledger=ledger).infer(path, {"x": np.ones((4, 384), np.float32)}, tenant="t")
    assert result.outputs["logits"].shape == (4, 2)
    assert result.receipt.device_seconds > 0 and result.receipt.profile == "trn3"
    assert ledger.spend(tenant="t", model="head").calls == 1
