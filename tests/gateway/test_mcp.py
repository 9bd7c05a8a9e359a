"""The MCP proxy with a real upstream MCP server subprocess, driven by the official MCP client over stdio and
streamable HTTP."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp_types import HEADER_MISMATCH

from agentcore.errors import ConfigError
from agentcore.gateway.audit import AuditLog
from agentcore.gateway.db import Database
from agentcore.gateway.mcp import McpProxy
from agentcore.gateway.mcp.auth import AuthError, JwtVerifier
from agentcore.gateway.mcp.config import Auth, load_config

HERE = Path(__file__).parent
AGENTCORE = str(Path(sys.executable).parent / "agentcore")
SECRET = "test-secret-" + "k" * 32
POLICY = """policy "mcp"
allow crm.lookup for users with role "support".
allow crm.delete_customer for users with role "admin".
allow calc.add when a is at most 100.
limit calc.add to 2 calls per minute per session.
redact email addresses in results of crm.lookup.
"""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_port(port: int, proc: subprocess.Popen[bytes], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited early with {proc.returncode}")
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise TimeoutError(f"nothing listens on port {port}")


def _config(tmp_path: Path, target: str, policy: str = POLICY) -> Path:
    (tmp_path / "policies").mkdir()
    (tmp_path / "policies" / "mcp.policy").write_text(policy)
    path = tmp_path / "gateway.toml"
    path.write_text(
        f"""[gateway]
name = "test-proxy"
policies = ["policies"]
database = "{tmp_path / "gw.db"}"
tools = ["mcp_upstream:register_local"]

[gateway.identity]
principal = "alice"
roles = ["support"]
agent = "desktop-agent"

[gateway.auth]
algorithms = ["HS256"]
secret_env = "GW_TEST_SECRET"
roles_claim = "roles"
tenant_claim = "org"

[[gateway.targets]]
name = "crm"
{target}
"""
    )
    return path


def _env() -> dict[str, str]:
    return {**os.environ, "GW_TEST_SECRET": SECRET, "PYTHONPATH": str(HERE)}


def _text(result: Any) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


def test_stdio_proxy_filters_enforces_redacts_and_audits(tmp_path: Path) -> None:
    config = _config(tmp_path, f'command = "{sys.executable}"\nargs = ["{HERE / "mcp_upstream.py"}"]')
    params = StdioServerParameters(command=AGENTCORE, args=["gateway", "serve", "--config", str(config)], env=_env())

    async def session() -> None:
        async with Client(params) as client:
            names = sorted(t.name for t in (await client.list_tools()).tools)
            assert names == ["calc_add", "crm__lookup"]  # delete_customer is admin-only: not listed for alice
            found = await client.call_tool("crm__lookup", {"customer_id": "c1"})
            assert not found.is_error and "[REDACTED:email]" in _text(found) and "jane@" not in _text(found)
            denied = await client.call_tool("crm__delete_customer", {"customer_id": "c1"})
            assert denied.is_error and "denied by policy" in _text(denied)
            added = await client.call_tool("calc_add", {"a": 2, "b": 3})
            assert not added.is_error and _text(added) == "5"
            too_big = await client.call_tool("calc_add", {"a": 1000, "b": 3})
            assert too_big.is_error
            bad = await client.call_tool("calc_add", {"a": "two", "b": 3})
            assert bad.is_error and "invalid arguments" in _text(bad)
            assert not (await client.call_tool("calc_add", {"a": 1, "b": 1})).is_error
            limited = await client.call_tool("calc_add", {"a": 1, "b": 1})  # 2 per session: the connection
            assert limited.is_error and "limit" in _text(limited)
            unknown = await client.call_tool("nope", {})
            assert unknown.is_error and "unknown tool" in _text(unknown)

    asyncio.run(session())
    log = AuditLog(Database(str(tmp_path / "gw.db")))
    assert log.verify().ok
    decisions = [(r["tool"], r["effect"]) for r in log.rows() if r["effect"]]
    assert ("crm.delete_customer", "deny") in decisions and ("crm.lookup", "allow") in decisions
    assert all(r["agent"] in ("desktop-agent", None) for r in log.rows())


REDACTING = """policy "mcp-redaction"
allow crm.card_on_file, crm.charge, pay.charge.
redact card numbers and email addresses in results of crm.card_on_file, crm.charge, pay.charge.
redact fields "customer.dob" in results of crm.card_on_file.
"""
LEAKS = ("4000000000000002", "4.000000000000002", "jane@corp", "jane\uff20corp", "1990-01-01")


def test_stdio_proxy_redacts_structured_content_and_error_text(tmp_path: Path) -> None:
    """Issue 14: a card as a JSON number or key in ``structuredContent``, and tool error text, reached the client."""
    upstream = f'command = "{sys.executable}"\nargs = ["{HERE / "mcp_upstream.py"}"]'
    config = _config(tmp_path, upstream, REDACTING)
    params = StdioServerParameters(command=AGENTCORE, args=["gateway", "serve", "--config", str(config)], env=_env())
    replies: list[Any] = []

    async def session() -> None:
        async with Client(params) as client:
            replies.append(await client.call_tool("crm__card_on_file", {"customer_id": "c1"}))
            replies.append(await client.call_tool("crm__charge", {"customer_id": "c1"}))
            replies.append(await client.call_tool("pay_charge", {"order": "o1"}))

    asyncio.run(session())
    on_file, upstream_error, local_error = replies
    assert not on_file.is_error and upstream_error.is_error and local_error.is_error
    assert on_file.structured_content["customer"] == {"id": "c1", "card": "[REDACTED:card]", "dob": "[REDACTED]"}
    assert "[REDACTED:card]" in _text(local_error) and "[REDACTED:email]" in _text(local_error)
    for reply in replies:
        dumped = reply.model_dump_json()
        assert not any(leak in dumped for leak in LEAKS), dumped
    raw = b"".join(path.read_bytes() for path in tmp_path.glob("gw.db*"))  # the audit, every column
    assert not any(leak.encode() in raw for leak in LEAKS)
    assert AuditLog(Database(str(tmp_path / "gw.db"))).verify().ok


@pytest.fixture
def http_proxy(tmp_path: Path) -> Iterator[str]:
    upstream_port, proxy_port = _free_port(), _free_port()
    upstream = subprocess.Popen([sys.executable, str(HERE / "mcp_upstream.py"), str(upstream_port)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    proxy = None
    try:
        _wait_port(upstream_port, upstream)
        config = _config(tmp_path, f'url = "http://127.0.0.1:{upstream_port}/mcp"')
        command = [AGENTCORE, "gateway", "serve", "--config", str(config), "--transport", "http", "--port"]
        proxy = subprocess.Popen([*command, str(proxy_port)], env=_env(), stderr=subprocess.DEVNULL)
        _wait_port(proxy_port, proxy)
        yield f"http://127.0.0.1:{proxy_port}/mcp"
    finally:
        for proc in (proxy, upstream):
            if proc is not None:
                proc.terminate()
                proc.wait(timeout=10)


def _token(sub: str, roles: list[str], key: str = SECRET, **claims: Any) -> str:
    return jwt.encode({"sub": sub, "roles": roles, "exp": int(time.time()) + 300, **claims}, key, algorithm="HS256")


def test_http_proxy_identity_from_jwt(http_proxy: str) -> None:
    async def tools_for(token: str) -> list[str]:
        async with (
            httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as http,
            Client(streamable_http_client(http_proxy, http_client=http)) as client,
        ):
            names = sorted(t.name for t in (await client.list_tools()).tools)
            result = await client.call_tool("crm__delete_customer", {"customer_id": "c9"})
            names.append("delete:" + ("error" if result.is_error else _text(result)))
            return names

    async def main() -> None:
        admin, support = await asyncio.gather(
            tools_for(_token("root", ["admin"], org="acme")), tools_for(_token("bob", ["support"]))
        )
        assert admin == ["calc_add", "crm__delete_customer", "delete:deleted c9"]
        assert support == ["calc_add", "crm__lookup", "delete:error"]
        async with httpx2.AsyncClient() as http:
            forged = _token("eve", ["admin"], key="wrong-key-" + "x" * 32)
            for headers in ({}, {"Authorization": "Bearer not-a-jwt"}, {"Authorization": f"Bearer {forged}"}):
                request = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
                response = await http.post(http_proxy, headers=headers, json=request)
                assert response.status_code == 401 and "invalid_token" in response.text
            malformed = await http.post(
                http_proxy,
                headers={"Authorization": f"Bearer {_token('bob', ['support'])}", "Content-Type": "application/json",
                         "Accept": "application/json, text/event-stream"},
                content=b'{"jsonrpc": "2.0", "id": 1, "method": ',
            )  # fmt: skip
            assert 400 <= malformed.status_code < 500
            body = malformed.json()
            assert body.get("error", {}).get("code") == -32700  # JSON-RPC parse error, server still up
        assert await tools_for(_token("bob", ["support"])) == support

    asyncio.run(main())


def test_jwt_verifier_rs256_expiry_and_claims(tmp_path: Path) -> None:
    private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = private.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    (tmp_path / "pub.pem").write_bytes(pem)
    verifier = JwtVerifier(Auth(algorithms=["RS256"], public_key_file=tmp_path / "pub.pem", audience="gw",
                                agent_claim="azp", tenant_claim="org"))  # fmt: skip
    claims = {"sub": "u1", "roles": "support billing", "aud": "gw", "azp": "bot-7", "org": "acme", "dept": "eu"}
    good = jwt.encode({**claims, "exp": int(time.time()) + 60}, private, algorithm="RS256")
    principal, agent, tenant = verifier.verify(f"Bearer {good}")
    assert (principal.id, sorted(principal.roles), agent.id, tenant) == ("u1", ["billing", "support"], "bot-7", "acme")
    assert principal.attributes["dept"] == "eu"
    expired = jwt.encode({**claims, "exp": int(time.time()) - 600}, private, algorithm="RS256")
    with pytest.raises(AuthError, match="expired"):
        verifier.verify(f"Bearer {expired}")
    with pytest.raises(AuthError, match=r"(?i)audience"):
        verifier.verify("Bearer " + jwt.encode({**claims, "aud": "other", "exp": int(time.time()) + 60}, private,
                                               algorithm="RS256"))  # fmt: skip
    hs = jwt.encode({**claims, "exp": int(time.time()) + 60}, "s" * 32, algorithm="HS256")
    with pytest.raises(AuthError):
        verifier.verify(f"Bearer {hs}")  # algorithm confusion is refused


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('[gateway]\n[[gateway.targets]]\nname = "crm"\n', "exactly one of `command`"),
        ('[gateway]\n[gateway.auth]\nalgorithms = ["HS256"]\n', "secret_env"),
        ("[gateway\n", "cannot read"),
        ('[gateway]\ndurability = "sometimes"\n', "durability"),
    ],
)
def test_config_errors_are_actionable(tmp_path: Path, text: str, problem: str) -> None:
    path = tmp_path / "gateway.toml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=problem):
        load_config(path)


def test_config_paths_are_relative_to_the_file(tmp_path: Path) -> None:
    path = tmp_path / "gateway.toml"
    path.write_text('[gateway]\nname = "x"\npolicies = ["p"]\n')
    assert load_config(path).policies == [tmp_path / "p"]


def test_config_durability_and_write_ahead_reach_the_gateway(tmp_path: Path) -> None:
    path = tmp_path / "gateway.toml"
    path.write_text(f'[gateway]\ndatabase = "{tmp_path / "gw.db"}"\ndurability = "power"\nwrite_ahead = true\n')
    proxy = McpProxy(load_config(path))
    try:
        assert (proxy.gateway.db.durability, proxy.gateway.write_ahead) == ("power", True)
        assert any(type(m).__name__ == "_TracedWhenConfigured" for m in proxy.server.middleware)  # SDK span found
    finally:
        proxy.gateway.close()


def test_jwt_verifier_caches_only_valid_unexpired_tokens(monkeypatch: Any) -> None:
    monkeypatch.setenv("GW_TEST_SECRET", SECRET)
    verifier = JwtVerifier(Auth(algorithms=["HS256"], secret_env="GW_TEST_SECRET", leeway_s=0), cache_size=2)
    expires = int(time.time()) + 1
    token = jwt.encode({"sub": "bob", "roles": ["support"], "exp": expires}, SECRET, algorithm="HS256")
    first = verifier.verify(f"Bearer {token}")
    assert verifier.verify(f"Bearer {token}") is first  # served from the cache
    head, payload, signature = token.split(".")
    forged = jwt.encode({"sub": "bob", "roles": ["admin"], "exp": expires}, "x" * 32, algorithm="HS256")
    for bad in (f"{head}.{forged.split('.')[1]}.{signature}", f"{head}.{payload}.{forged.split('.')[2]}"):
        with pytest.raises(AuthError, match="invalid bearer token"):
            verifier.verify(f"Bearer {bad}")  # same header and signature or payload as a cached token: refused
    others = [_token(f"user{i}", ["support"]) for i in range(3)]
    assert [verifier.verify(f"Bearer {t}")[0].id for t in others] == ["user0", "user1", "user2"]
    assert len(verifier._verified) == 2  # bounded: the oldest entries were dropped
    verifier.verify(f"Bearer {token}")  # cached again
    time.sleep(max(0.0, expires - time.time()) + 0.05)
    with pytest.raises(AuthError, match="expired"):
        verifier.verify(f"Bearer {token}")  # in the cache, but expired now


def test_param_headers_are_checked_against_what_the_caller_is_listed(tmp_path: Path, monkeypatch: Any) -> None:
    """The SDK validates ``Mcp-Param-*`` headers of a tools/call against the tool's schema, which the proxy looks up
    (instead of a tools/list per call) only among the tools this caller may see."""
    monkeypatch.setenv("GW_TEST_SECRET", SECRET)
    (tmp_path / "p.policy").write_text(
        'policy "h"\nallow geo.find for users with role "support".\nallow geo.erase for users with role "admin".\n'
    )
    config = tmp_path / "gateway.toml"
    config.write_text(
        f'[gateway]\npolicies = ["p.policy"]\ndatabase = "{tmp_path / "gw.db"}"\n'
        '[gateway.auth]\nalgorithms = ["HS256"]\nsecret_env = "GW_TEST_SECRET"\n'
    )
    proxy = McpProxy(load_config(config))
    schema = {"type": "object", "properties": {"region": {"type": "string", "x-mcp-header": "Region"}}}
    for name in ("geo.find", "geo.erase"):
        proxy.gateway.tool(lambda region: f"found {region}", name=name, schema=schema)
    app = proxy.http_app()

    def no_listing(*args: Any) -> None:
        raise AssertionError("a tools/call must not list the tools to find the schema")

    monkeypatch.setattr(proxy.gateway, "list_tools", no_listing)
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}

    async def call(http: httpx2.AsyncClient, tool: str, header: str) -> httpx2.Response:
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": tool, "arguments": {"region": "eu"}, "_meta": meta}}  # fmt: skip
        headers = {"Authorization": f"Bearer {_token('bob', ['support'])}", "Accept": "application/json",
                   "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": tool,
                   "Mcp-Param-Region": header}  # fmt: skip
        return await http.post("/mcp", json=body, headers=headers)

    async def main() -> None:
        transport = httpx2.ASGITransport(app=app)
        async with (
            proxy.server.session_manager.run(),
            httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1:8765") as http,
        ):
            matching = (await call(http, "geo_find", "eu")).json()["result"]
            assert not matching.get("isError") and matching["content"][0]["text"] == "found eu"
            mismatch = await call(http, "geo_find", "us")
            assert mismatch.status_code == 400 and mismatch.json()["error"]["code"] == HEADER_MISMATCH
            hidden = await call(http, "geo_erase", "us")  # not listed to bob: no schema, so a denial, not a 400
            assert hidden.status_code == 200 and hidden.json()["result"]["isError"] is True
            assert "denied by policy" in hidden.json()["result"]["content"][0]["text"]

    asyncio.run(main())
    proxy.gateway.close()
