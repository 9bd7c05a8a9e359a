"""The Ray backend: same vectors and receipts as the local run, actors restarted, failures never silent."""

from __future__ import annotations

import json
import os
import signal
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import ray

from agentcore import Accelerator
from agentcore.accel.executors import ExecutorError, RayExecutor
from agentcore.accel.tokenizer import pad_batch

TEXTS = [
    f"customer {i} asks to return order #W{1000 + i} because the {'lamp' if i % 2 else 'chair'} broke"
    for i in range(96)
]


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def _no_ledger(**kwargs: object) -> Accelerator:
    return Accelerator(ledger=None, **kwargs)  # type: ignore[arg-type]


def test_ray_backend_gives_the_same_vectors_and_receipts(local_ray: None) -> None:
    local = _no_ledger()
    remote = _no_ledger(backend="ray", workers=2)
    expected, actual = local.embed(TEXTS, tenant="t", user="u"), remote.embed(TEXTS, tenant="t", user="u")
    np.testing.assert_allclose(actual.vectors, expected.vectors, atol=1e-6)
    ignore = {"cpu_seconds"}
    assert actual.receipt.model_dump(exclude=ignore) == expected.receipt.model_dump(exclude=ignore)


def _batches(accelerator: Accelerator, count: int) -> list[dict[str, np.ndarray]]:
    tokens = accelerator._encoder_tokenizer().encode(TEXTS[:count])
    input_ids, mask = pad_batch(tokens.ids)
    return [{"input_ids": input_ids[i : i + 1], "attention_mask": mask[i : i + 1]} for i in range(count)]


def test_a_killed_actor_is_restarted_and_its_batch_retried(local_ray: None) -> None:
    accelerator = _no_ledger()
    model = accelerator.encoder.path("fp32")
    executor = RayExecutor(workers=1, max_restarts=1)
    batches = _batches(accelerator, 48) * 8
    expected = executor.run(model, batches[:48], ["embeddings"]) * 8
    (actor,) = executor.actors(model)
    killer = threading.Timer(0.2, os.kill, (ray.get(actor.pid.remote()), signal.SIGKILL))
    killer.start()  # the actor dies while its queue of 384 batches is being worked through
    results = executor.run(model, batches, ["embeddings"])
    killer.join()
    assert executor.actors(model) != [actor]  # it was replaced
    assert len(results) == 384
    for got, want in zip(results, expected, strict=True):
        np.testing.assert_allclose(got["embeddings"], want["embeddings"], atol=1e-6)


def test_a_second_failure_names_the_batch(local_ray: None) -> None:
    accelerator = _no_ledger()
    model: Path = accelerator.encoder.path("int8")
    executor = RayExecutor(workers=1, max_restarts=0)
    batches = _batches(accelerator, 4)
    (actor,) = executor.actors(model)
    os.kill(ray.get(actor.pid.remote()), signal.SIGKILL)
    with pytest.raises(ExecutorError, match=r"batch 0 of 4 for model\.int8\.onnx failed twice.*no restarts left"):
        executor.run(model, batches, ["embeddings"])


def test_memory_bulk_ingestion_embeds_through_the_ray_backend(local_ray: None, tmp_path: Path) -> None:
    from agentcore import MemoryStore
    from agentcore.memory.rows import NewEvent

    accelerator = _no_ledger(backend="ray", workers=2)
    store = MemoryStore(url=f"sqlite:///{tmp_path / 'memory.db'}", accelerator=accelerator)
    events = [NewEvent(role="user", text=text) for text in TEXTS[:40]]
    added = store.add_events_bulk("ava", "s1", events)
    assert len(added) == 40
    assert store.index_events("ava") == 0  # already embedded by the bulk call
    hits = store.search_events("ava", TEXTS[7], top_k=1, mode="vector")
    assert hits[0].event.text == TEXTS[7]


def test_backend_comes_from_agentcore_toml(local_ray: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "agentcore.toml").write_text('[accel]\nbackend = "ray"\nworkers = 1\n')
    monkeypatch.chdir(tmp_path)
    accelerator = _no_ledger()
    assert isinstance(accelerator.executor, RayExecutor) and accelerator.executor.workers == 1


def test_eval_run_on_ray_writes_the_same_json_report(local_ray: None, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from agentcore.cli import app

    suite = Path(__file__).resolve().parents[2] / "examples" / "evals" / "suite.toml"
    reports = {}
    for backend in ("local", "ray"):
        target = tmp_path / f"{backend}.json"
        command = ["eval", "run", str(suite), "--no-cache", "--backend", backend, "--report", str(target)]
        result = CliRunner().invoke(app, command)
        assert result.exit_code == 0, result.output
        report = json.loads(target.read_text(encoding="utf-8"))
        assert report.pop("timing")["duration_s"] >= 0  # when it ran differs; everything it found must not
        reports[backend] = report
    assert reports["ray"] == reports["local"]
    bad = CliRunner().invoke(app, ["eval", "run", str(suite), "--backend", "gpu"])
    assert bad.exit_code == 2
