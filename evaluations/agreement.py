"""Readers for the public labelled data sets the evaluators are measured (and some heads trained) on.

Shared by ``scripts/train_eval_heads.py``, ``bench/evaluator_agreement.py`` and the tests, so all three split
and read the data the same way. No data ships with the package; each reader takes the data folder.
"""

from __future__ import annotations

import csv
import hashlib
import json
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from agentcore.evaluations.trace import (
    ExpectedCall,
    Session,
    SessionReference,
    ToolCall,
    ToolSpec,
    Trace,
    TraceReference,
)


def split_of(key: str) -> str:
    """``"train"`` or ``"test"``: a stable half split by a record's group key (question, instruction...)."""
    return "train" if hashlib.sha256(key.encode()).digest()[0] % 2 == 0 else "test"


def read_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                yield json.loads(line)


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def halueval_qa(data: Path, split: str | None = None) -> list[dict[str, Any]]:
    """HaluEval QA rows (knowledge, question, right_answer, answer, label), optionally one half by question."""
    rows = read_jsonl(data / "halueval" / "halueval_qa.jsonl")
    return [row for row in rows if split is None or split_of(row["question_id"]) == split]


def halueval_general(data: Path, split: str | None = None) -> list[dict[str, Any]]:
    rows = read_jsonl(data / "halueval" / "halueval_general.jsonl")
    return [row for row in rows if split is None or split_of(str(row["id"])) == split]


def pandalm_pairs(data: Path, split: str | None = None) -> list[dict[str, Any]]:
    """PandaLM pairs with a majority preference (ties dropped): request, better, worse."""
    pairs = []
    for row in read_jsonl(data / "pandalm_human" / "pandalm_testset.jsonl"):
        if row["majority_label"] == 0 or (split is not None and split_of(row["instruction"]) != split):
            continue
        request = (row["instruction"] + "\n\n" + row["input"]).strip()
        better, worse = (
            (row["response1"], row["response2"]) if row["majority_label"] == 1 else (row["response2"], row["response1"])
        )
        pairs.append({"request": request, "better": better, "worse": worse})
    return pairs


def tulu_pairs(data: Path) -> list[dict[str, Any]]:
    """Tülu 1 pairs with an expert preference (ties dropped): request, better, worse."""
    pairs = []
    for row in read_jsonl(data / "tulu1_human_eval" / "tulu1_annotations.jsonl"):
        if row["preference"] == "tie":
            continue
        a_better = row["preference"].startswith("a-")
        better, worse = (row["completion_a"], row["completion_b"])[:: 1 if a_better else -1]
        pairs.append({"request": row["prompt"], "better": better, "worse": worse})
    return pairs


def llmbar_pairs(data: Path) -> list[dict[str, Any]]:
    """LLMBar pairs: request, better, worse, ``group`` (Natural, Adversarial, MT-Bench, FairEval, LLMEval^2) and
    ``split``, the half of its instruction (``split_of``)."""
    pairs = []
    for row in read_jsonl(data / "llmbar" / "llmbar_pairs.jsonl"):
        parts = row["subset"].split("/")
        better, worse = (row["output_1"], row["output_2"])[:: 1 if row["label"] == 1 else -1]
        group = parts[1] if parts[0] == "LLMBar" else parts[-1]
        pairs.append(
            {"request": row["input"], "better": better, "worse": worse, "group": group, "split": split_of(row["input"])}
        )
    return pairs


_HH_SPEAKER = re.compile(r"\n\n(Human|Assistant): ")


def hh_session(pair: dict[str, Any], key: str, session_id: str) -> Session:
    """An HH-RLHF pair's conversation as a session whose last turn carries the reply under test (``key``).

    Earlier Human/Assistant exchanges become earlier turns, so the last reply is judged with its history.
    """
    parts = _HH_SPEAKER.split("\n\n" + pair["context"].strip())
    said = [(role, text.strip()) for role, text in zip(parts[1::2], parts[2::2], strict=True)]
    turns: list[Trace] = []
    for role, text in said:
        if role == "Human":
            turns.append(Trace(id=f"{session_id}/t{len(turns)}", input=text))
        elif turns:
            turns[-1] = turns[-1].model_copy(update={"output": text})
    turns[-1] = turns[-1].model_copy(update={"output": pair[key].strip()})
    return Session(id=session_id, traces=turns)


def auroc(positive: Sequence[float], negative: Sequence[float]) -> float:
    """Probability that a random positive scores above a random negative (ties count half)."""
    pos = np.asarray(positive, dtype=np.float64)[:, None]
    neg = np.asarray(negative, dtype=np.float64)[None, :]
    if pos.size == 0 or neg.size == 0:
        raise ValueError("AUROC needs at least one positive and one negative")
    return float(((pos > neg).sum() + 0.5 * (pos == neg).sum()) / (pos.size * neg.size))


def spearman(left: Sequence[float], right: Sequence[float]) -> float:
    """Spearman rank correlation (average ranks for ties)."""

    def ranks(values: Sequence[float]) -> np.ndarray:
        array = np.asarray(values, dtype=np.float64)
        order = array.argsort(kind="stable")
        ranked = np.empty(len(array))
        ranked[order] = np.arange(len(array))
        for value in np.unique(array):
            tied = array == value
            ranked[tied] = ranked[tied].mean()
        return ranked

    a, b = ranks(left), ranks(right)
    return float(np.corrcoef(a, b)[0, 1])


def _first_value(options: list[Any]) -> tuple[bool, Any]:
    """(present, value): the first acceptable value, or absent when only ``""`` (may be omitted) is listed."""
    for option in options:
        if option != "":
            return True, option
    return False, None


def _materialise(value: Any) -> Any:
    """A concrete value from BFCL's acceptable-values form (nested dicts list options per key)."""
    if isinstance(value, dict):
        chosen = {
            key: _first_value(options if isinstance(options, list) else [options]) for key, options in value.items()
        }
        return {key: _materialise(item) for key, (present, item) in chosen.items() if present}
    if isinstance(value, list):
        return [_materialise(item) for item in value]
    return value


def _ground_truth_call(name: str, params: dict[str, list[Any]], call_id: str) -> ToolCall:
    arguments = {}
    for param, options in params.items():
        present, value = _first_value(options)
        if present:
            arguments[param] = _materialise(value)
    return ToolCall(id=call_id, name=name, arguments=arguments)


def _wrong_value(value: Any) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return value * 2 + 7
    if isinstance(value, str):
        return value + " (altered)"
    if isinstance(value, list):
        return [*value, "extra"]
    return {"unexpected": True}


def _wrong_type(value: Any) -> Any:
    return str(value) if not isinstance(value, str) else 12345


def bfcl_cases(data: Path, every: int = 1) -> list[tuple[str, Session, bool]]:
    """BFCL rows as (mutation, session, should_pass): ground-truth calls and systematically mutated ones.

    Mutations: ``wrong_function``, ``missing_argument``, ``extra_argument``, ``wrong_type``, ``wrong_value``
    (each applied where the row allows it) and ``irrelevant_call`` for rows where no function fits.
    ``every`` keeps every n-th row (a quick, category-spanning sample).
    """
    cases: list[tuple[str, Session, bool]] = []
    for row in list(read_jsonl(data / "bfcl" / "bfcl.jsonl"))[::every]:
        tools = [
            ToolSpec(name=f["name"], description=f.get("description", ""), parameters=f.get("parameters", {}))
            for f in row["function"]
        ]
        question = row["question"][0][-1]["content"] if row["question"] and row["question"][0] else ""
        if not row["expect_function_call"]:
            if not tools:
                continue
            call = ToolCall(id="c0", name=tools[0].name, arguments={})
            reference = TraceReference(expected_tool_calls=[])
            cases.append(("irrelevant_call", _one_call_session(row["id"], question, tools, [call], reference), False))
            continue
        if not row["ground_truth"]:
            continue
        expected = [
            ExpectedCall(name=name, arguments=params) for item in row["ground_truth"] for name, params in item.items()
        ]
        reference = TraceReference(expected_tool_calls=expected)
        gold = expected[0]
        call = _ground_truth_call(gold.name, gold.arguments, "c0")
        cases.append(("ground_truth", _one_call_session(row["id"], question, tools, [call], reference), True))
        others = [tool.name for tool in tools if tool.name not in {item.name for item in expected}]
        if others:
            wrong = call.model_copy(update={"name": others[0]})
            cases.append(("wrong_function", _one_call_session(row["id"], question, tools, [wrong], reference), False))
        required = [name for name, options in gold.arguments.items() if "" not in options and name in call.arguments]
        if required:
            dropped = {k: v for k, v in call.arguments.items() if k != required[0]}
            missing = call.model_copy(update={"arguments": dropped})
            cases.append(
                ("missing_argument", _one_call_session(row["id"], question, tools, [missing], reference), False)
            )
            typed = call.model_copy(
                update={"arguments": {**call.arguments, required[0]: _wrong_type(call.arguments[required[0]])}}
            )
            cases.append(("wrong_type", _one_call_session(row["id"], question, tools, [typed], reference), False))
            valued = call.model_copy(
                update={"arguments": {**call.arguments, required[0]: _wrong_value(call.arguments[required[0]])}}
            )
            cases.append(("wrong_value", _one_call_session(row["id"], question, tools, [valued], reference), False))
        extra = call.model_copy(update={"arguments": {**call.arguments, "unrequested_option": True}})
        cases.append(("extra_argument", _one_call_session(row["id"], question, tools, [extra], reference), False))
    return cases


def _one_call_session(
    case_id: str, question: str, tools: list[ToolSpec], calls: list[ToolCall], reference: TraceReference
) -> Session:
    trace = Trace(id=f"{case_id}/turn", input=question, tools=tools, spans=list(calls), reference=reference)
    return Session(id=case_id, traces=[trace])


TAU_READ_TOOLS = frozenset(
    {
        "calculate",
        "find_user_id_by_email",
        "find_user_id_by_name_zip",
        "get_order_details",
        "get_product_details",
        "get_user_details",
        "list_all_product_types",
        "think",
        "transfer_to_human_agents",
    }
)


def tau_bench_cases(data: Path, split: str = "test") -> list[tuple[str, Session, bool]]:
    """τ-bench retail tasks as (mutation, session, should_succeed): the replayed ground truth succeeds;
    dropping a write action, altering one of its arguments, or leaving out a required output fails."""
    cases: list[tuple[str, Session, bool]] = []
    tools = [
        ToolSpec(
            name=t["function"]["name"], description=t["function"]["description"], parameters=t["function"]["parameters"]
        )
        for t in json.loads((data / "tau_bench_retail" / "tools.json").read_text(encoding="utf-8"))
    ]
    for task in read_jsonl(data / "tau_bench_retail" / f"tasks_{split}.jsonl"):
        actions = task["actions"]
        writes = [a for a in actions if a["name"] not in TAU_READ_TOOLS]
        if not writes and not task["outputs"]:
            continue
        reference = SessionReference(
            expected_actions=[
                ExpectedCall(name=a["name"], arguments={k: [v] for k, v in a["arguments"].items()}) for a in writes
            ],
            expected_outputs=list(task["outputs"]),
            expected_trajectory=[a["name"] for a in actions],
        )
        reply = "Done. " + " ".join(f"The answer is {value}." for value in task["outputs"])

        def session(calls: list[dict[str, Any]], output: str, suffix: str) -> Session:
            return _tau_session(task, tools, reference, calls, output, suffix)  # noqa: B023  (called at once)

        cases.append(("ground_truth", session(actions, reply, ""), True))
        if writes:
            last = max(i for i, a in enumerate(actions) if a["name"] not in TAU_READ_TOOLS)
            cases.append(("dropped_action", session(actions[:last] + actions[last + 1 :], reply, "#dropped"), False))
            altered = dict(actions[last])
            key = sorted(altered["arguments"])[0]
            altered["arguments"] = {**altered["arguments"], key: _wrong_value(altered["arguments"][key])}
            cases.append(
                (
                    "altered_argument",
                    session([*actions[:last], altered, *actions[last + 1 :]], reply, "#altered"),
                    False,
                )
            )
        if task["outputs"]:
            cases.append(("missing_output", session(actions, "Done.", "#silent"), False))
    return cases


def _tau_session(
    task: dict[str, Any],
    tools: list[ToolSpec],
    reference: SessionReference,
    calls: list[dict[str, Any]],
    output: str,
    suffix: str,
) -> Session:
    spans = [ToolCall(id=f"c{i}", name=a["name"], arguments=a["arguments"], result="ok") for i, a in enumerate(calls)]
    trace = Trace(id=f"{task['task_id']}/turn", input=task["instruction"], output=output, spans=list(spans))
    return Session(id=f"{task['task_id']}{suffix}", traces=[trace], tools=tools, reference=reference)
