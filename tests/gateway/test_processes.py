"""Several gateway processes share one database (and Redis): limits stay exact, the audit chain stays whole,
and acknowledged calls survive kill -9."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from agentcore.gateway.audit import AuditLog
from agentcore.gateway.db import Database

POLICY = 'policy "limits"\nallow t.hit.\nlimit t.hit to 10 calls per minute per user.\n'


WORKER = textwrap.dedent(
    """
    import os, sys
    from agentcore import Gateway, ToolDenied
    policies, database, state, user = sys.argv[1:5]
    gw = Gateway(policies, database=database, state=state or None, name=f"worker-{os.getpid()}")
    gw.tool(lambda n: n, name="t.hit", schema={"type": "object"})
    allowed = 0
    for _ in range(25):
        try:
            gw.call("t.hit", {"n": 1}, principal=user)
            allowed += 1
        except ToolDenied:
            pass
    gw.close()
    print(allowed)
    """
)


@pytest.mark.parametrize("backend", ["sqlite", "redis"])
def test_four_gateway_processes_allow_exactly_ten(backend: str, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    (tmp_path / "limits.policy").write_text(POLICY)
    database = str(tmp_path / "shared.db")
    state = request.getfixturevalue("redis_url") if backend == "redis" else ""
    user = f"user-{uuid.uuid4().hex}"
    Database(database).close()
    args = [str(tmp_path), database, state, user]
    procs = [
        subprocess.Popen([sys.executable, "-c", WORKER, *args], stdout=subprocess.PIPE, text=True) for _ in range(4)
    ]
    allowed = [int(proc.communicate(timeout=120)[0]) for proc in procs]
    assert sum(allowed) == 10, allowed
    result = AuditLog(Database(database)).verify()
    assert result.ok and result.records == 110  # 90 denials, 10 decisions and their outcomes
    if state:
        import redis

        client = redis.Redis.from_url(state)
        keys = list(client.scan_iter(f"*{user}*"))
        if keys:
            client.delete(*keys)


CALLER = textwrap.dedent(
    """
    import sys
    from agentcore import Gateway
    gw = Gateway(sys.argv[1], database=sys.argv[2], outcome_delay_s=0)  # outcomes committed before returning
    gw.tool(lambda n: n, name="t.hit", schema={"type": "object"})
    i = 0
    while True:
        gw.call("t.hit", {"n": i}, principal="u" + str(i))
        print(i, flush=True)  # the caller has its result: both audit records were committed before
        i += 1
    """
)


def test_acknowledged_calls_survive_kill_9(tmp_path: Path, killed_after: Callable[[list[str], int], int]) -> None:
    (tmp_path / "limits.policy").write_text(POLICY)
    database = str(tmp_path / "crash.db")
    returned = killed_after(["-c", CALLER, str(tmp_path), database], 100)
    log = AuditLog(Database(database))
    assert log.verify().ok
    executed = [r for r in log.rows() if r["kind"] == "execution" and r["outcome"] == "ok"]
    assert len(executed) >= returned + 1
