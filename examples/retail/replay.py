"""Replay the tau-bench retail ground-truth actions (and rule-breaking mutants) through the packaged retail bundle.

Usage: ``python examples/retail/replay.py [../shared/data/tau_bench_retail]`` prints one JSON line of counts.
The bundle is the demo's (``agentcore/demo/policies``), with the demo's own ``order`` and ``payment_method``
resolvers over tau-bench's database loaded into the demo store. Resolvers read the initial database; writes are
not applied, so an action on an order that an earlier write of the same task touched is skipped (its legality
depends on that write). Each task is one session with its own history, as tau-bench runs them, whose principal
is the customer the task's lookup finds; every allowed or approved original that would succeed is recorded as
executed (a lookup that finds no one fails, and the gateway does not count failed calls), so sequence rules see
the history. A call that needs approval is a human step, counted apart from allow and deny. Tasks whose ground
truth omits the authentication lookup (most train tasks list only the writes) start from a recorded lookup; the
"not-authenticated" mutants replay each write in a session without one.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from agentcore.demo.database import RetailDatabase, load_json_store
from agentcore.demo.governance import customer, order_facts, payment_method_facts, policy_dir
from agentcore.policies import AgentInfo, Decision, Effect, InMemoryContext, PolicyEngine, Request, RequestContext

HERE = Path(__file__).resolve().parent
WRITES = {
    "cancel_pending_order", "modify_pending_order_address", "modify_pending_order_payment",
    "modify_pending_order_items", "return_delivered_order_items", "exchange_delivered_order_items",
    "modify_user_address",
}  # fmt: skip
START = datetime(2024, 5, 1, 10, 0, tzinfo=UTC)


class Shop:
    """The initial database (raw JSON for the mutants, the demo store for the bundle's resolvers)."""

    def __init__(self, data: Path) -> None:
        self.store = RetailDatabase()
        self.store.load(load_json_store(data / "db"))
        self.orders: dict[str, Any] = json.loads((data / "db" / "orders.json").read_text())
        self.users: dict[str, Any] = json.loads((data / "db" / "users.json").read_text())
        self.payments = {
            method_id: {**method, "user_id": user_id}
            for user_id, user in self.users.items()
            for method_id, method in user["payment_methods"].items()
        }

    def finds(self, action: dict[str, Any]) -> str | None:
        """The user an identification lookup finds, if ``action`` is one and it finds anyone."""
        args = action["arguments"]
        for user_id, user in self.users.items():
            by_email = action["name"] == "find_user_id_by_email" and user["email"] == args.get("email")
            by_name = action["name"] == "find_user_id_by_name_zip" and (
                user["name"] == {"first_name": args.get("first_name"), "last_name": args.get("last_name")}
                and user["address"]["zip"] == args.get("zip")
            )
            if by_email or by_name:
                return user_id
        return None

    def customer(self, task: dict[str, Any]) -> str:
        """The user the conversation is with: whom the task's lookup finds (some task user ids are wrong)."""
        found = (self.finds(action) for action in task["actions"])
        return next((user_id for user_id in found if user_id is not None), str(task["user_id"]))

    def context(self) -> InMemoryContext:
        """A fresh history with the resolvers the demo's gateway registers."""
        return InMemoryContext(
            resolvers={
                "order": lambda key: order_facts(self.store, key),
                "payment_method": lambda key: payment_method_facts(self.store, key),
            }
        )


def request(user: str, session: str, action: str, args: dict[str, Any], step: int) -> Request:
    return Request(
        principal=customer(user, "the task's lookup"),
        agent=AgentInfo(id="retail-agent"),
        action=action,
        args=args,
        context=RequestContext(time=START + timedelta(minutes=step), session_id=session, tenant="retail"),
    )


def mutants(shop: Shop, user: str, action: str, args: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """(kind, action, args) variants of a ground-truth call that break one rule of the wiki each."""
    order = shop.orders.get(str(args.get("order_id")))
    mine = [o for o in shop.orders.values() if o["user_id"] == user]
    wanted = {"cancel": "pending", "modify": "pending", "return": "delivered", "exchange": "delivered"}
    needed = next((status for prefix, status in wanted.items() if action.startswith(prefix)), None)
    if order is not None and needed is not None:
        wrong = next((o for o in mine if o["status"] != needed), None)
        if wrong is not None:
            yield "wrong-order-status", action, {**args, "order_id": wrong["order_id"]}
        other = next((o for o in shop.orders.values() if o["user_id"] != user and o["status"] == needed), None)
        if other is not None:
            yield "other-users-order", action, {**args, "order_id": other["order_id"]}
    if action == "cancel_pending_order":
        yield "bad-cancel-reason", action, {**args, "reason": "found it cheaper elsewhere"}
    method = args.get("payment_method_id")
    if method is not None and order is not None:
        original = order["payment_history"][0]["payment_method_id"]
        others = [m for m in shop.payments if shop.payments[m]["user_id"] != user]
        yield "other-users-payment-method", action, {**args, "payment_method_id": others[0]}
        if action == "return_delivered_order_items":
            forbidden = [m for m, p in shop.users[user]["payment_methods"].items()
                         if m != original and p["source"] != "gift_card"]  # fmt: skip
            if forbidden:
                yield "refund-to-forbidden-method", action, {**args, "payment_method_id": forbidden[0]}
        if action == "modify_pending_order_payment":
            yield "same-payment-method", action, {**args, "payment_method_id": original}
    if action in ("get_user_details", "modify_user_address"):
        stranger = next(u for u in shop.users if u != user)
        yield "other-users-profile", action, {**args, "user_id": stranger}
    if action in ("modify_pending_order_items", "exchange_delivered_order_items"):
        yield "items-not-one-for-one", action, {**args, "new_item_ids": args.get("new_item_ids", [])[:-1]}


def outcome(decision: Decision) -> str:
    """allow, needs_approval, deny, or limited: denied by rate limits alone (a deployment's choice, not the wiki's)."""
    if decision.effect is Effect.DENY and decision.reasons and all(r.effect == "limit" for r in decision.reasons):
        return "limited"
    return decision.effect.value


def replay(engine: PolicyEngine, shop: Shop, tasks: list[dict[str, Any]]) -> dict[str, Any]:
    """Counts of allowed / approval-needing / denied / skipped originals and mutants, plus the misses.

    A miss is an original that was denied or a mutant that was not: a mutant sent to a human for approval, or
    stopped only by a rate limit, still escaped the rules the mutation broke. Originals stopped by a rate limit
    alone (the packaged bundle caps cancellations per day; the wiki does not) are listed under ``limited``."""
    originals: Counter[str] = Counter()
    mutated: Counter[str] = Counter()
    by_kind: Counter[str] = Counter()
    escaped: list[dict[str, Any]] = []
    limited: list[dict[str, Any]] = []
    for task in tasks:
        user, session, context = shop.customer(task), task["task_id"], shop.context()
        touched: set[str] = set()
        if not any(a["name"].startswith("find_user_id") for a in task["actions"]):
            # Train/dev ground truth lists only the writes; a compliant conversation authenticated first.
            email = shop.users[user]["email"]
            context.record(request(user, session, "find_user_id_by_email", {"email": email}, -1))
            originals["authentication seeded"] += 1
        for step, action in enumerate(task["actions"]):
            name, args = action["name"], action["arguments"]
            if str(args.get("order_id")) in touched:
                originals["skipped"] += 1
                continue
            original = request(user, session, name, args, step)
            decision = engine.decide(original, context)
            verdict_of_original = outcome(decision)
            originals[verdict_of_original] += 1
            reasons = [r.rule_id for r in decision.reasons]
            if verdict_of_original == "deny":
                escaped.append({"task": session, "original": action, "reasons": reasons})
            elif verdict_of_original == "limited":
                limited.append({"task": session, "original": action, "reasons": reasons})
            for kind, mutant_name, mutant_args in mutants(shop, user, name, args):
                verdict = outcome(engine.decide(request(user, session, mutant_name, mutant_args, step), context))
                mutated[verdict] += 1
                by_kind[f"{kind}:{verdict}"] += 1
                if verdict != "deny":
                    escaped.append({"task": session, "mutant": kind, "action": mutant_name, "args": mutant_args})
            if name in WRITES:
                unauthenticated = request(user, f"{session}-unauthenticated", name, args, step)
                verdict = outcome(engine.decide(unauthenticated, context))
                mutated[verdict] += 1
                by_kind[f"not-authenticated:{verdict}"] += 1
            failed = name.startswith("find_user_id") and shop.finds(action) is None
            if verdict_of_original in ("allow", "needs_approval") and not failed:
                context.record(original)
                if name in WRITES and "order_id" in args:
                    touched.add(str(args["order_id"]))
    return {"originals": dict(originals), "mutants": dict(mutated), "mutants_by_kind": dict(sorted(by_kind.items())),
            "problems": escaped, "limited": limited}  # fmt: skip


def load_tasks(data: Path) -> list[dict[str, Any]]:
    tasks: list[dict[str, Any]] = []
    for split in ("test", "dev", "train"):
        lines = (data / f"tasks_{split}.jsonl").read_text().splitlines()
        tasks.extend(json.loads(line) for line in lines if line.strip())
    return tasks


def main() -> None:
    data = Path(sys.argv[1] if len(sys.argv) > 1 else HERE.parents[2] / ".." / "shared" / "data" / "tau_bench_retail")
    engine = PolicyEngine.from_paths([policy_dir()])
    result = replay(engine, Shop(data), load_tasks(data))
    result["problems"] = result["problems"][:10]
    print(json.dumps(result))


if __name__ == "__main__":
    main()
