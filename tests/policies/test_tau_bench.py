"""Real-world test: the packaged retail bundle (the tau-bench retail wiki as rules), replayed against the ground truth.

Every denied ground-truth action must be a genuine violation of the wiki, confirmed here from the raw
database independently of the engine; every mutant that breaks a rule must be denied with a reason. There is
one retail bundle, the one the demo ships: the replay loads it and examples/ holds no copy.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from agentcore.demo import governance
from agentcore.policies import PolicyEngine
from agentcore.policies.checker import check
from agentcore.policies.schemas import load_tools

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
RETAIL = EXAMPLES / "retail"


@pytest.fixture(scope="module")
def replay_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("retail_replay", RETAIL / "replay.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def data(shared_data: Any) -> Path:
    return Path(shared_data("tau_bench_retail"))


def test_bundle_checks_clean_against_the_tool_schemas(data: Path) -> None:
    engine = PolicyEngine.from_paths([governance.policy_dir()])
    findings = check(engine.files, load_tools(data / "tools.json"))
    assert [f for f in findings if f.severity == "error"] == []
    assert {f.code for f in findings} <= {"excluded-by-schema"}


def test_one_retail_bundle_and_the_replay_loads_it(replay_module: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    """A second copy of the retail rules would drift from the packaged one (issue #18)."""
    policies = EXAMPLES.rglob("*.policy")
    copies = [p for p in policies if "retail" in p.relative_to(EXAMPLES).parts or "retail" in p.read_text()]
    assert copies == [] and not list(RETAIL.rglob("*.tests.toml"))
    assert replay_module.policy_dir is governance.policy_dir

    class Loaded(Exception):
        pass

    def packaged() -> Path:
        raise Loaded

    monkeypatch.setattr(replay_module, "policy_dir", packaged)
    monkeypatch.setattr("sys.argv", ["replay.py", str(RETAIL / "no-data-needed")])
    with pytest.raises(Loaded):
        replay_module.main()


def _violates_wiki(action: dict[str, Any], orders: dict[str, Any], users: dict[str, Any]) -> bool:
    """An independent reading of the wiki on the raw database: is this call a violation?"""
    name, args = action["name"], action["arguments"]
    order = orders.get(args.get("order_id"))
    if "order_id" in args and order is None:
        return True  # no such order: nothing to act on or show
    methods = {m: p for u in users.values() for m, p in u["payment_methods"].items()}
    method = methods.get(args.get("payment_method_id"), {})
    original = order["payment_history"][0]["payment_method_id"] if order else None
    if name.startswith(("return_", "exchange_")) and order["status"] != "delivered":
        return True
    if name.startswith(("cancel_", "modify_pending")) and order["status"] != "pending":
        return True
    if name == "return_delivered_order_items":
        return args["payment_method_id"] != original and method.get("source") != "gift_card"
    if name == "modify_pending_order_payment" and method.get("source") == "gift_card":
        return method["balance"] < sum(item["price"] for item in order["items"])
    return False


def test_replay_ground_truth_and_mutants(data: Path, replay_module: ModuleType) -> None:
    engine = PolicyEngine.from_paths([governance.policy_dir()])
    shop = replay_module.Shop(data)
    tasks = replay_module.load_tasks(data)
    result = replay_module.replay(engine, shop, tasks)
    originals, mutants = result["originals"], result["mutants"]
    assert originals["allow"] > 10 * originals.get("deny", 0) and originals.get("skipped", 0) < originals["allow"]
    denied = [p for p in result["problems"] if "original" in p]
    assert len(denied) == originals.get("deny", 0)
    for problem in denied:  # each denial is a real violation of the wiki in the ground truth
        assert _violates_wiki(problem["original"], shop.orders, shop.users), json.dumps(problem)
        assert problem["reasons"]
    cancellations = {t["task_id"]: sum(a["name"] == "cancel_pending_order" for a in t["actions"]) for t in tasks}
    for stopped in result["limited"]:  # the bundle's own cap, not a wiki rule: a task cancelling three orders
        assert stopped["reasons"] == ["cancellations-per-day"], json.dumps(stopped)
        assert cancellations[stopped["task"]] > 2
    assert originals.get("limited", 0) == len(result["limited"]) <= 3
    assert originals["needs_approval"] > 100  # refunds over $1,000 go to a supervisor, a human step
    escaped = [p for p in result["problems"] if "mutant" in p]
    assert escaped == [] and set(mutants) == {"deny"}
    kinds = {kind.split(":")[0] for kind in result["mutants_by_kind"]}
    assert kinds == {"wrong-order-status", "other-users-order", "bad-cancel-reason", "other-users-payment-method",
                     "refund-to-forbidden-method", "same-payment-method", "other-users-profile",
                     "items-not-one-for-one", "not-authenticated"}  # fmt: skip
