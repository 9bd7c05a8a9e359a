"""Deferred outcome records (``outcome_delay_s``): an executed call's outcome shares the next commit instead of
paying one of its own, and is never lost: a crash before it lands leaves the call "started, outcome unknown",
``flush()``/``close()`` commit it, and a refused commit keeps it waiting in memory until storage returns."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agentcore import Gateway
from agentcore.gateway import ToolExecutionError
from agentcore.gateway.audit import AuditLog
from agentcore.gateway.db import Database

POLICY = 'policy "p"\nallow t.hit.\n'
REFUNDS = """policy "p"
allow refund.
deny refund when sum of amount over refund in the last 24 hours per user plus amount exceeds 2000.
"""
FAIL_OUTCOMES = "CREATE TRIGGER disk_full BEFORE INSERT ON gateway_audit WHEN NEW.kind = 'execution' " \
    "BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END"  # fmt: skip


def _gateway(tmp_path: Path, policy: str = POLICY, **options: Any) -> Gateway:
    (tmp_path / "p.policy").write_text(policy)
    gw = Gateway(tmp_path / "p.policy", database=str(tmp_path / "gw.db"), **options)
    gw.tool(lambda n: n, name="t.hit", schema={"type": "object"})
    return gw


def _committed(path: Path) -> list[tuple[str, str | None]]:
    """(kind, outcome) of every committed record, read on a connection of its own, as another process would."""
    with sqlite3.connect(path) as other:
        return [
            (kind, outcome) for kind, outcome in other.execute("SELECT kind, outcome FROM gateway_audit ORDER BY seq")
        ]


def _lifecycle(gw: Gateway) -> list[tuple[str, str | None]]:
    return [(r["kind"], r["outcome"]) for r in gw.audit.rows()]


def test_an_outcome_rides_in_the_next_calls_commit(tmp_path: Path) -> None:
    gw = _gateway(tmp_path, outcome_delay_s=60)  # nothing but the next commit (or a flush) writes it
    assert gw.call("t.hit", {"n": 1}, principal="ann") == 1
    assert _committed(tmp_path / "gw.db") == [("decision", "started")]  # the result was handed over first
    batches = gw.audit._group.batches
    assert gw.call("t.hit", {"n": 2}, principal="ann") == 2
    assert gw.audit._group.batches == batches + 1  # call 1's outcome and call 2's decision: one commit
    assert _committed(tmp_path / "gw.db") == [("decision", "started"), ("execution", "ok"), ("decision", "started")]
    assert gw.flush() == 0
    assert _committed(tmp_path / "gw.db")[-1] == ("execution", "ok")
    assert gw.audit.verify().ok
    gw.close()


def test_with_no_further_call_the_outcome_is_committed_within_its_delay(tmp_path: Path) -> None:
    gw = _gateway(tmp_path, outcome_delay_s=0.01)
    assert gw.call("t.hit", {"n": 1}, principal="ann") == 1
    deadline = time.monotonic() + 30  # the flusher's bound is 10 ms; a loaded machine may take longer
    while _committed(tmp_path / "gw.db") != [("decision", "started"), ("execution", "ok")]:
        assert time.monotonic() < deadline, _committed(tmp_path / "gw.db")
        time.sleep(0.01)
    gw.close()


def test_close_commits_the_deferred_outcomes(tmp_path: Path) -> None:
    gw = _gateway(tmp_path, outcome_delay_s=60)
    for n in range(3):
        gw.call("t.hit", {"n": n}, principal="ann")
    gw.close()
    assert _committed(tmp_path / "gw.db")[-1] == ("execution", "ok")
    assert [kind for kind, _ in _committed(tmp_path / "gw.db")].count("execution") == 3


EXITS = textwrap.dedent(
    """
    import sys
    from agentcore import Gateway
    gw = Gateway(sys.argv[1], database=sys.argv[2], outcome_delay_s=3600)
    gw.tool(lambda n: n, name="t.hit", schema={"type": "object"})
    gw.call("t.hit", {"n": 1}, principal="ann")
    """  # and ends without close(): the interpreter's exit commits the deferred outcome
)


def test_a_script_that_exits_without_close_still_commits_its_outcomes(tmp_path: Path) -> None:
    (tmp_path / "p.policy").write_text(POLICY)
    database = tmp_path / "gw.db"
    subprocess.run([sys.executable, "-c", EXITS, str(tmp_path / "p.policy"), str(database)], check=True, timeout=120)
    assert _committed(database) == [("decision", "started"), ("execution", "ok")]


def test_reading_the_audit_in_process_sees_every_returned_calls_outcome(tmp_path: Path) -> None:
    gw = _gateway(tmp_path, outcome_delay_s=60)
    gw.call("t.hit", {"n": 1}, principal="ann")
    assert _lifecycle(gw) == [("decision", "started"), ("execution", "ok")]
    gw.close()


def test_a_refused_deferred_outcome_waits_and_is_recorded_when_storage_returns(tmp_path: Path) -> None:
    gw = _gateway(tmp_path, outcome_delay_s=60)
    with gw.db.write("test") as cur:
        cur.execute(FAIL_OUTCOMES)
    assert [gw.call("t.hit", {"n": n}, principal="ann") for n in range(3)] == [0, 1, 2]  # the results are safe
    assert gw.flush() == 3  # every outcome's commit was refused: they wait, in order
    assert gw.flush() == 3  # retried, refused again, still waiting: never dropped
    assert _committed(tmp_path / "gw.db") == [("decision", "started")] * 3  # started, outcome unknown
    with gw.db.write("test") as cur:
        cur.execute("DROP TRIGGER disk_full")  # storage is back
    assert gw.call("t.hit", {"n": 3}, principal="ann") == 3  # the next write completes the waiting ones first
    assert gw.flush() == 0
    records = [(r["kind"], json.loads(r["detail"]).get("args", {}).get("n")) for r in gw.audit.rows()]
    assert [kind for kind, _ in records] == ["decision"] * 3 + ["execution"] * 3 + ["decision", "execution"]
    assert gw.audit.verify().ok
    gw.close()


def test_a_failed_call_that_gives_back_its_reservation_commits_its_outcome_first(tmp_path: Path) -> None:
    gw = _gateway(tmp_path, REFUNDS, outcome_delay_s=60)

    @gw.tool(name="refund")
    def refund(amount: float) -> float:
        raise RuntimeError("bank offline")

    with pytest.raises(ToolExecutionError, match="bank offline"):
        gw.call("refund", {"amount": 500}, principal="ann")
    assert _committed(tmp_path / "gw.db")[-1] == ("execution", "error")  # before the reservation was released
    with sqlite3.connect(tmp_path / "gw.db") as other:
        assert other.execute("SELECT COUNT(*) FROM gateway_calls").fetchone()[0] == 0
    gw.close()


def test_outcome_delay_must_not_be_negative(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="outcome_delay_s"):
        _gateway(tmp_path, outcome_delay_s=-1)


CALLER = textwrap.dedent(
    """
    import sys
    from agentcore import Gateway
    gw = Gateway(sys.argv[1], database=sys.argv[2], outcome_delay_s=3600)
    gw.tool(lambda n: n, name="t.hit", schema={"type": "object"})
    for n in range(1000000):
        gw.call("t.hit", {"n": n}, principal="ann")
        print(n, flush=True)  # returned: its decision is durable, its outcome waits for the next commit
    """
)


def test_a_crash_before_the_outcome_lands_leaves_the_call_started_outcome_unknown(
    tmp_path: Path, killed_after: Callable[[list[str], int], int]
) -> None:
    (tmp_path / "p.policy").write_text(POLICY)
    database = tmp_path / "gw.db"
    last = killed_after(["-c", CALLER, str(tmp_path / "p.policy"), str(database)], 20)
    records = _committed(database)
    started, finished = records.count(("decision", "started")), records.count(("execution", "ok"))
    assert started >= last + 1 and finished >= last  # every returned call's decision; all but the last outcome
    assert started == finished + 1  # the last call returned, and its outcome went down with the process
    gw = Gateway(tmp_path / "p.policy", database=str(database))  # recovery: the chain verifies and goes on
    gw.tool(lambda n: n, name="t.hit", schema={"type": "object"})
    assert gw.audit.verify().ok
    assert gw.call("t.hit", {"n": -1}, principal="ann") == -1
    gw.close()
    reader = AuditLog(Database(str(database)))
    unknown = {r["call_id"] for r in reader.rows() if r["outcome"] == "started"}
    unknown -= {r["call_id"] for r in reader.rows() if r["kind"] == "execution"}
    assert len(unknown) == 1 and reader.verify().ok  # exactly the crashed call: started, outcome unknown
    reader.db.close()


def test_with_no_delay_both_records_are_committed_before_the_call_returns(tmp_path: Path) -> None:
    gw = _gateway(tmp_path, outcome_delay_s=0)
    gw.call("t.hit", {"n": 1}, principal="ann")
    assert _committed(tmp_path / "gw.db") == [("decision", "started"), ("execution", "ok")]
    assert gw.audit._group._flusher is None  # nothing deferred: no thread started
    gw.close()
