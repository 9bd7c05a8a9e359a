"""The ONNX encoder against its numpy oracle, sentence-level behaviour, and human similarity judgements."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

from agentcore import Accelerator
from agentcore.accel.models.bert import BertConfig, load_weights
from agentcore.accel.models.reference import encode_reference
from agentcore.accel.tokenizer import pad_batch


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman's rho with average ranks for ties."""

    def ranks(values: np.ndarray) -> np.ndarray:
        order = np.argsort(values, kind="stable")
        ranked = np.empty(len(values))
        ranked[order] = np.arange(len(values), dtype=float)
        for value in np.unique(values):
            tied = values == value
            ranked[tied] = ranked[tied].mean()
        return ranked

    return float(np.corrcoef(ranks(a), ranks(b))[0, 1])


def test_spearman_helper_matches_known_values() -> None:
    assert spearman(np.array([1.0, 2, 3, 4]), np.array([10.0, 20, 30, 40])) == pytest.approx(1.0)
    assert spearman(np.array([1.0, 2, 3, 4]), np.array([4.0, 3, 2, 1])) == pytest.approx(-1.0)
    assert spearman(np.array([1.0, 2, 2, 3]), np.array([1.0, 2, 3, 4])) == pytest.approx(0.9486833, abs=1e-6)


def test_fp32_graph_matches_numpy_reference(
    accelerator: Accelerator, model_source: Path, sick_pairs: list[tuple[str, str, float]]
) -> None:
    sentences = [a for a, _, _ in sick_pairs[:100]]
    config = BertConfig.from_folder(model_source)
    weights = load_weights(model_source)
    tokens = accelerator._encoder_tokenizer().encode(sentences)
    expected = np.concatenate(
        [encode_reference(config, weights, *pad_batch(tokens.ids[i : i + 25])) for i in range(0, 100, 25)]
    )
    actual = accelerator.embed(sentences).vectors
    assert actual.shape == (100, 384)
    assert np.abs(actual - expected).max() < 1e-4


def test_vectors_are_unit_norm_and_in_input_order(accelerator: Accelerator) -> None:
    texts = ["a much longer sentence about refunding a delivered order to a gift card", "hi", "refund"]
    together = accelerator.embed(texts).vectors
    alone = np.stack([accelerator.embed([text]).vectors[0] for text in texts])
    np.testing.assert_allclose(np.linalg.norm(together, axis=1), 1.0, atol=1e-5)
    # Padding inside a batch must not change any sentence's vector.
    np.testing.assert_allclose(together, alone, atol=1e-5)


def test_receipt_describes_the_call(accelerator: Accelerator) -> None:
    result = accelerator.embed(["one", "two three"] * 40, tenant="acme", agent="bot", user="u1")
    receipt = result.receipt
    assert (receipt.tenant, receipt.agent, receipt.user) == ("acme", "bot", "u1")
    assert receipt.model == "all-MiniLM-L6-v2" and receipt.variant == "fp32"
    assert receipt.items == 80 and receipt.batches == 3  # batch size 32
    assert receipt.tokens == 40 * 3 + 40 * 4  # [CLS] w [SEP] and [CLS] w w [SEP]
    assert receipt.truncated == 0 and receipt.cpu_seconds > 0


def test_long_texts_are_truncated_and_counted(accelerator: Accelerator) -> None:
    long_text = "refund " * 400
    result = accelerator.embed([long_text, "short"])
    assert result.receipt.truncated == 1
    assert result.receipt.tokens == 256 + 3
    assert np.isfinite(result.vectors).all()


def test_empty_input_gives_empty_result(accelerator: Accelerator) -> None:
    result = accelerator.embed([])
    assert result.vectors.shape == (0, 384) and result.receipt.items == 0 and result.receipt.batches == 0


def test_non_strings_are_rejected_with_their_index(accelerator: Accelerator) -> None:
    with pytest.raises(TypeError, match=r"texts\[2\] is int"):
        accelerator.embed(["a", "b", 3])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="single str"):
        accelerator.embed("not a list")


def test_concurrent_calls_from_threads_give_the_same_vectors(accelerator: Accelerator) -> None:
    texts = [f"order {i} needs a refund to the original card" for i in range(24)]
    expected = accelerator.embed(texts).vectors
    results: list[np.ndarray] = []
    errors: list[BaseException] = []

    def work() -> None:
        try:
            results.append(accelerator.embed(texts).vectors)
        except BaseException as error:  # collected and re-raised in the main thread
            errors.append(error)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors and len(results) == 4
    for vectors in results:
        np.testing.assert_allclose(vectors, expected, atol=1e-5)


@pytest.fixture(scope="module")
def sick_sample(sick_pairs: list[tuple[str, str, float]]) -> list[tuple[str, str, float]]:
    """A fixed random 2,000 of SICK's 4,934 pairs: enough for a stable rho, small enough to stay fast."""
    rng = np.random.default_rng(14)
    return [sick_pairs[i] for i in rng.choice(len(sick_pairs), 2000, replace=False)]


def _sick_rho(accelerator: Accelerator, pairs: list[tuple[str, str, float]], variant: str) -> float:
    a = accelerator.embed([p[0] for p in pairs], variant=variant).vectors
    b = accelerator.embed([p[1] for p in pairs], variant=variant).vectors
    return spearman((a * b).sum(axis=1), np.array([p[2] for p in pairs]))


def test_sick_relatedness_spearman_fp32_and_int8(
    accelerator: Accelerator, sick_sample: list[tuple[str, str, float]]
) -> None:
    fp32 = _sick_rho(accelerator, sick_sample, "fp32")
    int8 = _sick_rho(accelerator, sick_sample, "int8")
    assert fp32 >= 0.75, fp32
    assert abs(int8 - fp32) <= 0.01, (fp32, int8)


def test_int8_fidelity_against_fp32(accelerator: Accelerator, sick_pairs: list[tuple[str, str, float]]) -> None:
    sentences = [a for a, _, _ in sick_pairs[:300]] + [
        "Please cancel order #W2378156 because I no longer need the mechanical keyboard and want a refund."
    ]
    fp32 = accelerator.embed(sentences).vectors
    int8 = accelerator.embed(sentences, variant="int8").vectors
    cosines = (fp32 * int8).sum(axis=1)
    assert cosines.mean() >= 0.99 and cosines.min() >= 0.98, (cosines.mean(), cosines.min())
