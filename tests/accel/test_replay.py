"""The ledger's recorded work replayed on Trn2 and Trn3: embeddings, a task head and LLM tokens, per tenant."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from agentcore import Accelerator
from agentcore.accel.errors import ProfileError
from agentcore.accel.ledger import Ledger
from agentcore.accel.replay import onnx_resolver, replay
from agentcore.accel.runtime import Receipt
from agentcore.accel.serving.usage import record_llm_usage, shipped_card

HEADS = Path(__file__).resolve().parents[2] / "evaluations" / "heads"


@pytest.fixture
def ledger(tmp_path: Path) -> Ledger:
    """Encoder and head calls that ran on a trn2.48xlarge, LLM calls served on trn3 and on trn2, two tenants."""
    book = Ledger(f"sqlite:///{tmp_path / 'ledger.db'}")
    accelerator = Accelerator(device="trn2.48xlarge", ledger=book)
    accelerator.embed(["where is my refund", "order status", "cancel my order please"], tenant="acme")
    accelerator.embed(["hello there"] * 40, tenant="globex")
    accelerator.infer(HEADS / "helpfulness.onnx", {"features": np.zeros((5, 7), np.float32)}, tenant="acme")
    record_llm_usage(book, "llama-3.1-70b", 2000, 300, device="trn3", tenant="acme")
    record_llm_usage(book, "llama-3.1-70b", 2000, 300, device="trn3", tenant="acme")
    record_llm_usage(book, "llama-3.1-8b", 500, 50, device="trn2", tenant="globex")
    book.record(Receipt(model="retired-encoder", variant="fp32", tenant="acme", items=2, batches=1, cpu_seconds=0.0))
    book.record(Receipt(model="minilm", variant="fp32", tenant="acme", items=9, batches=1, cpu_seconds=0.0,
                        rejected=True))  # fmt: skip
    book.flush()
    return book


def test_the_same_work_is_priced_on_both_devices(ledger: Ledger) -> None:
    result = replay(ledger, ("trn2", "trn3"), onnx_resolver([HEADS]))
    assert result.simulated and result.devices == ["trn2", "trn3"]
    assert result.skipped == {"retired-encoder (fp32): no ONNX file for it here": 1}, "counted, never guessed"
    assert result.recorded.calls == 7 and result.recorded.items == 3 + 40 + 5 + 3 + 2, "rejected calls never ran"
    for device in ("trn2", "trn3"):
        assert result.totals[device].calls == 6 and result.totals[device].items == 3 + 40 + 5 + 3
        per_tenant = sum(spend[device].usd for spend in result.tenants.values())
        assert per_tenant == pytest.approx(result.totals[device].usd)
        assert result.kinds["llm"][device].usd == pytest.approx(
            2 * shipped_card("llama-3.1-70b", device).price(2000, 300).usd
            + shipped_card("llama-3.1-8b", device).price(500, 50).usd
        )
    # the encoder and head calls replayed on a Trn2 chip cost what they were charged on the Trn2 instance (within
    # the error of rebuilding batches at the mean length), and the LLM calls served on trn3 cost what they did
    recorded_onnx = sum(r.usd for r in ledger.report(by=("kind", "profile")) if r.group["profile"] == "trn2.48xlarge")
    assert result.kinds["embedding"]["trn2"].usd == pytest.approx(recorded_onnx, rel=0.05)
    assert result.tenants["globex"]["trn3"].usd < result.tenants["globex"]["trn2"].usd, "LLM serving gains on Trn3"
    assert result.totals["trn3"].usd < result.totals["trn2"].usd
    assert result.kinds["embedding"]["trn3"].device_seconds < result.kinds["embedding"]["trn2"].device_seconds


def test_without_the_heads_folder_the_head_calls_are_skipped_and_unknown_devices_fail(ledger: Ledger) -> None:
    result = replay(ledger)
    assert result.devices == ["trn2", "trn3"] and result.skipped["helpfulness (fp32): no ONNX file for it here"] == 1
    with pytest.raises(ProfileError, match="tpu9"):
        replay(ledger, ("trn2", "tpu9"))


def test_one_tenants_work_is_replayed_alone(ledger: Ledger) -> None:
    everyone = replay(ledger, ("trn2", "trn3"), onnx_resolver([HEADS]))
    globex = replay(ledger, ("trn2", "trn3"), onnx_resolver([HEADS]), tenant="globex")
    assert globex.tenants.keys() == {"globex"} and not globex.skipped, "acme's retired encoder is not counted"
    assert globex.recorded.calls == 2 and globex.recorded.items == 40 + 1
    for device in ("trn2", "trn3"):
        assert globex.totals[device].usd == pytest.approx(everyone.tenants["globex"][device].usd)
    assert replay(ledger, tenant="initech").totals["trn2"].calls == 0
