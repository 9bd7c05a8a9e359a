"""The ONNX cost model: FLOPs against an independent analytical count, bytes, rooflines, bad input."""

from __future__ import annotations

import json

import pytest
from onnx import TensorProto, helper

from agentcore.accel.errors import CostModelError
from agentcore.accel.models.registry import ensure_built
from agentcore.accel.sim.cost import cost_graph
from agentcore.accel.sim.models import SimModel, resolve_model
from agentcore.accel.sim.profiles import load_catalog
from agentcore.accel.sim.timing import CostParameters, batch_seconds, service_table


def _analytical_bert_flops(config: dict[str, int], batch: int, seq: int) -> float:
    """Textbook forward FLOPs of a BERT encoder, from config.json alone (never from the graph).

    Per layer and token: Q, K, V and output projections 4 x 2H^2, feed-forward 2 x 2HI, attention
    scores QK^T and the weighted sum AV 2 x 2SH. Element-wise work is left out: it is under 1%.
    """
    hidden, inner, layers = config["hidden_size"], config["intermediate_size"], config["num_hidden_layers"]
    return layers * batch * seq * (8 * hidden**2 + 4 * hidden * inner + 4 * seq * hidden)


@pytest.fixture(scope="module")
def minilm_config() -> dict[str, int]:
    return json.loads((ensure_built().folder / "config.json").read_text())


@pytest.mark.parametrize(("batch", "seq"), [(1, 128), (4, 64), (32, 256)])
def test_minilm_forward_flops_match_the_analytical_count(minilm_config, batch: int, seq: int) -> None:  # type: ignore[no-untyped-def]
    cost = resolve_model("minilm").cost(batch, seq, "fp32")
    expected = _analytical_bert_flops(minilm_config, batch, seq)
    assert cost.flops == pytest.approx(expected, rel=0.02)
    assert cost.flops_on("tensor") == pytest.approx(expected, rel=1e-9)  # every MatMul, nothing else
    assert cost.unknown_ops == []


def test_int8_variant_costs_quantised_matmuls_on_the_tensor_engine(minilm_config) -> None:  # type: ignore[no-untyped-def]
    cost = resolve_model("minilm-int8").cost(2, 128, "fp8")
    ops = {node.op: node.engine for node in cost.nodes}
    assert ops["MatMulInteger"] == "tensor" and ops["DynamicQuantizeLinear"] == "vector"
    assert cost.unknown_ops == []
    assert cost.flops_on("tensor") == pytest.approx(_analytical_bert_flops(minilm_config, 2, 128), rel=1e-9)
    # int8 weights are a quarter of fp32 ones: the quantised model moves fewer weight bytes
    assert cost.weight_bytes < resolve_model("minilm").cost(2, 128, "fp32").weight_bytes / 2


def test_precision_sets_bytes_per_float_element() -> None:
    model = resolve_model("mlp-256x2")
    fp32, bf16, fp8 = (model.cost(4, 1, p) for p in ("fp32", "bf16", "fp8"))
    assert fp32.bytes == pytest.approx(2 * bf16.bytes) and bf16.bytes == pytest.approx(2 * fp8.bytes)
    assert fp32.flops == fp8.flops == 2 * 2 * 4 * 256 * 256


def _tiny(op: str, **attrs: object) -> SimModel:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 16])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    inputs = ["x", "axis"] if op == "CumSum" else ["x"]
    axis = helper.make_tensor("axis", TensorProto.INT64, [], [1])
    graph = helper.make_graph([helper.make_node(op, inputs, ["y"], **attrs)], "tiny", [x], [y], [axis])
    return SimModel(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), f"tiny-{op}")


def test_unknown_ops_get_a_bytes_only_estimate_and_are_listed() -> None:
    cost = _tiny("CumSum").cost(3, 1, "fp32")
    assert cost.unknown_ops == ["CumSum"]
    (node,) = cost.nodes
    assert node.flops == 0 and node.bytes == 2 * 3 * 16 * 4 + 8  # x read, y written, the int64 axis read


def test_gemm_counts_multiply_adds_and_bias() -> None:
    a = helper.make_tensor_value_info("a", TensorProto.FLOAT, ["batch", 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    weights = [
        helper.make_tensor("w", TensorProto.FLOAT, [8, 5], [0.0] * 40),
        helper.make_tensor("c", TensorProto.FLOAT, [5], [0.0] * 5),
    ]
    graph = helper.make_graph([helper.make_node("Gemm", ["a", "w", "c"], ["y"])], "gemm", [a], [y], weights)
    cost = SimModel(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), "gemm").cost(3, 1, "fp32")
    assert cost.flops == 3 * 5 * (2 * 8 + 1)


def test_service_table_equals_direct_costing_at_every_batch() -> None:
    profile = load_catalog().profile("trn2")
    params = CostParameters()
    model = resolve_model("minilm")
    table = service_table(model.cost(1, 64, "bf16"), model.cost(2, 64, "bf16"), 16, profile, params)
    for batch in (3, 16):
        assert table.seconds[batch] == pytest.approx(batch_seconds(model.cost(batch, 64, "bf16"), profile, params))
        assert table.memory_bytes[batch] == pytest.approx(
            model.cost(batch, 64, "bf16").weight_bytes + model.cost(batch, 64, "bf16").peak_activation_bytes
        )


def test_roofline_is_compute_bound_for_big_batches_and_memory_bound_for_one() -> None:
    profile = load_catalog().profile("trn2")
    params = CostParameters(node_overhead_s=0, launch_overhead_s=0)
    model = resolve_model("mlp-4096x8")
    big = model.cost(2048, 1, "fp8")
    assert batch_seconds(big, profile, params) == pytest.approx(
        big.flops / (profile.core_flops("fp8") * params.compute_efficiency)
    )
    one = model.cost(1, 1, "bf16")
    assert batch_seconds(one, profile, params) == pytest.approx(
        one.bytes / (profile.core_bandwidth * params.memory_efficiency)
    )


def test_bad_shapes_and_precisions_are_clear_errors() -> None:
    skeleton = resolve_model("mlp-64x1").skeleton
    with pytest.raises(CostModelError, match="missing"):
        cost_graph(skeleton, {}, "fp32")
    with pytest.raises(CostModelError, match="2 positive dims"):
        cost_graph(skeleton, {"x": (0, 64)}, "fp32")
    with pytest.raises(CostModelError, match="choose one of"):
        cost_graph(skeleton, {"x": (1, 64)}, "int4")
    with pytest.raises(CostModelError, match="unknown model"):
        resolve_model("gpt-17")


def test_a_damaged_onnx_file_is_a_clear_error(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "broken.onnx"
    path.write_bytes(b"not a protobuf at all")
    with pytest.raises(CostModelError, match="cannot read ONNX model"):
        resolve_model(str(path))
