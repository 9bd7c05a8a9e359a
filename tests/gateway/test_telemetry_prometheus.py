"""``agentcore gateway serve --metrics``: a real proxy process, driven by the official MCP client over stdio,
exposes its decisions on Prometheus ``/metrics`` (scraped over HTTP, parsed with prometheus_client's parser)."""

from __future__ import annotations

import asyncio
import os
import socket
import sys
import urllib.request
from pathlib import Path

from mcp import Client, StdioServerParameters
from prometheus_client.parser import text_string_to_metric_families

HERE = Path(__file__).parent
AGENTCORE = str(Path(sys.executable).parent / "agentcore")
POLICY = 'policy "metrics"\nallow crm.lookup for users with role "support".\n'


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _config(tmp_path: Path) -> Path:
    (tmp_path / "policies").mkdir()
    (tmp_path / "policies" / "m.policy").write_text(POLICY)
    path = tmp_path / "gateway.toml"
    path.write_text(
        f"""[gateway]
policies = ["policies"]
database = "{tmp_path / "gw.db"}"

[gateway.identity]
principal = "alice"
roles = ["support"]

[[gateway.targets]]
name = "crm"
command = "{sys.executable}"
args = ["{HERE / "mcp_upstream.py"}"]
"""
    )
    return path


def _scrape(port: int) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def test_serve_metrics_exposes_decisions_and_latency(tmp_path: Path) -> None:
    port = _free_port()
    args = ["gateway", "serve", "--config", str(_config(tmp_path)), "--metrics", "--metrics-port", str(port)]
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    params = StdioServerParameters(command=AGENTCORE, args=args, env=env)

    async def session() -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
        async with Client(params) as client:
            assert not (await client.call_tool("crm__lookup", {"customer_id": "c1"})).is_error
            assert (await client.call_tool("crm__delete_customer", {"customer_id": "c1"})).is_error
            return await asyncio.to_thread(_scrape, port)

    samples = asyncio.run(session())
    decisions = {
        (dict(labels)["effect"], dict(labels)["tool"]): value
        for (name, labels), value in samples.items()
        if name == "agentcore_gateway_decisions_total"
    }
    assert decisions[("allow", "crm.lookup")] == 1
    assert decisions[("deny", "crm.delete_customer")] == 1
    calls = [v for (name, _), v in samples.items() if name == "agentcore_gateway_call_duration_seconds_count"]
    assert sum(calls) == 2
    pending = [v for (name, _), v in samples.items() if name == "agentcore_gateway_approvals_pending"]
    assert pending == [0]
