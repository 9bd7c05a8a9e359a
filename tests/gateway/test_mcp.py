"""The MCP proxy with a real upstream MCP server subprocess, driven by the official MCP client over stdio and
streamable HTTP."""

from __future__ import annotations

import asyncio
import contextlib
import json
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
from mcp.shared.exceptions import MCPError
from mcp_types import HEADER_MISMATCH
from typer.testing import CliRunner

from agentcore.cli import app
from agentcore.errors import ConfigError
from agentcore.evaluations.importers.gateway import read_gateway_sessions
from agentcore.gateway.audit import AuditLog
from agentcore.gateway.db import Database
from agentcore.gateway.mcp import McpProxy
from agentcore.gateway.mcp.auth import AuthError, JwtVerifier
from agentcore.gateway.mcp.config import Auth, load_config
from agentcore.gateway.mcp.server import APPROVAL_META

HERE = Path(__file__).parent
AGENTCORE = str(Path(sys.executable).parent / "agentcore")
SECRET = "test-secret-" + "k" * 32
POLICY = """policy "mcp"
allow crm.lookup for users with role "support".
allow crm.delete_customer for users with role "admin".
allow calc.add when a is at most 100.
limit calc.add to 2 calls per minute per session.
allow crm.charge for users with role "billing".
require approval from role "manager" for crm.delete_customer for users with role "admin"
    when customer_id starts with "vip".
redact email addresses in results of crm.lookup.
allow resource.crm for users with role "support" when uri starts with "docs://handbook".
allow prompt.crm.greet for users with role "support".
allow crm.crash for users with role "chaos".
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


async def _calls(url: str, token: str, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    """Run ``calls`` in order over one official-client connection as the principal of ``token``."""
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        return [await client.call_tool(name, args) for name, args in calls]


def test_http_sessions_are_never_shared_between_principals(http_proxy: str, tmp_path: Path) -> None:
    """``limit calc.add to 2 calls per minute per session``: bob using up his session's budget never denies carol,
    though neither client sends an ``Mcp-Session-Id`` of its own choosing."""
    add = ("calc_add", {"a": 1, "b": 1})

    async def main() -> None:
        bob = await _calls(http_proxy, _token("bob", ["support"]), [add, add, add])
        assert [r.is_error for r in bob] == [False, False, True] and "limit" in _text(bob[2])
        carol = await _calls(http_proxy, _token("carol", ["support"]), [add, add])
        assert [r.is_error for r in carol] == [False, False]

    asyncio.run(main())
    sessions = {r["principal"]: r["session"] for r in AuditLog(Database(str(tmp_path / "gw.db"))).rows()}
    assert sessions["bob"] != sessions["carol"]


def test_an_approved_call_runs_once_when_the_mcp_client_retries_it(http_proxy: str, tmp_path: Path) -> None:
    """Pending -> the same call again is the same request -> approved from the CLI -> the next retry runs it on
    the upstream and returns its result -> the retry after that is a new request."""
    delete = ("crm__delete_customer", {"customer_id": "vip7"})
    token = _token("root", ["admin"])
    first, still = asyncio.run(_calls(http_proxy, token, [delete, delete]))
    assert first.is_error and "Pending human approval" in _text(first) and "same call again" in _text(first)
    approval_id = _text(first).split("(")[1].split(")")[0]
    assert _text(still) == _text(first)  # retried while pending: the same request, not a new one
    database = str(tmp_path / "gw.db")
    approve = ["gateway", "approvals", "approve", approval_id, "-d", database, "--by", "mona", "--role", "manager"]
    assert CliRunner().invoke(app, approve).exit_code == 0
    done, again = asyncio.run(_calls(http_proxy, token, [delete, delete]))
    assert not done.is_error and _text(done) == "deleted vip7"
    assert again.is_error and "Pending human approval" in _text(again) and approval_id not in _text(again)
    log = AuditLog(Database(database))
    ran = [r for r in log.rows() if r["kind"] == "execution" and r["tool"] == "crm.delete_customer"]
    started = [r for r in log.rows() if r["outcome"] == "started" and r["tool"] == "crm.delete_customer"]
    assert len(ran) == 1 and ran[0]["outcome"] == "ok" and ran[0]["call_id"] == started[0]["call_id"]
    assert len(started) == 1 and json.loads(started[0]["detail"])["approval_id"] == approval_id
    (signoff,) = [json.loads(r["detail"]) for r in log.rows() if r["kind"] == "approval"]
    assert (signoff["by"], signoff["role"]) == ("mona", "manager")


def test_an_approval_id_in_meta_runs_the_approved_call_for_its_requester(http_proxy: str, tmp_path: Path) -> None:
    async def call(token: str, approval_id: str | None = None) -> Any:
        async with (
            httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as http,
            Client(streamable_http_client(http_proxy, http_client=http)) as client,
        ):
            meta = {APPROVAL_META: approval_id} if approval_id else None
            return await client.call_tool("crm__delete_customer", {"customer_id": "vip8"}, meta=meta)

    root = _token("root", ["admin"], org="\uff41cme")  # tenant acme, spelt with a fullwidth a: its approvers are acme's
    pending = asyncio.run(call(root))
    approval_id = _text(pending).split("(")[1].split(")")[0]
    assert APPROVAL_META in _text(pending)
    still = asyncio.run(call(root, approval_id))
    assert still.is_error and approval_id in _text(still)  # pending: named, not run
    database = str(tmp_path / "gw.db")
    approve = ["gateway", "approvals", "approve", approval_id, "-d", database, "--by", "mona", "--role", "manager"]
    for other in ([], ["--tenant", "globex"]):  # no tenant, another tenant: refused, still pending
        assert CliRunner().invoke(app, [*approve, *other]).exit_code == 1
    assert _text(asyncio.run(call(root, approval_id))) == _text(still)
    assert CliRunner().invoke(app, [*approve, "--tenant", "acme"]).exit_code == 0
    for thief in (_token("eve", ["admin"], org="acme"), _token("root", ["admin"], org="globex")):
        stolen = asyncio.run(call(thief, approval_id))  # another principal, and the same id in another tenant
        assert stolen.is_error and "not a request of yours" in _text(stolen)
    demoted = asyncio.run(call(_token("root", ["support"], org="acme"), approval_id))  # no longer an admin
    assert demoted.is_error and "denied by policy" in _text(demoted)  # decided for the caller as they are now
    refused = [
        r for r in AuditLog(Database(database)).rows() if r["outcome"] == "invalid" and approval_id in r["detail"]
    ]
    assert sorted((r["principal"], r["tenant"], r["effect"]) for r in refused) == [
        ("eve", "acme", "deny"), ("root", "globex", "deny")
    ]  # an attempt on another's approval is audited  # fmt: skip
    assert _text(asyncio.run(call(root, approval_id))) == "deleted vip8"
    assert _text(asyncio.run(call(root, approval_id))) == "deleted vip8"  # the stored result; it ran once
    ran = [r for r in AuditLog(Database(database)).rows() if r["kind"] == "execution"]
    assert len(ran) == 1 and ran[0]["tool"] == "crm.delete_customer"


def test_resources_and_prompts_pass_through_governed_per_caller(http_proxy: str, tmp_path: Path) -> None:
    async def session(token: str) -> dict[str, Any]:
        async with (
            httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as http,
            Client(streamable_http_client(http_proxy, http_client=http)) as client,
        ):
            seen: dict[str, Any] = {
                "tools": sorted(t.name for t in (await client.list_tools()).tools),
                "resources": sorted(str(r.uri) for r in (await client.list_resources()).resources),
                "prompts": [p.name for p in (await client.list_prompts()).prompts],
            }
            if seen["resources"]:
                handbook = await client.read_resource("docs://handbook")
                seen["handbook"] = handbook.contents[0].text  # type: ignore[union-attr]
                with pytest.raises(MCPError, match="denied by policy"):
                    await client.read_resource("docs://salaries")
            if seen["prompts"]:
                prompt = await client.get_prompt("crm__greet", {"name": "Ann"})
                seen["prompt"] = prompt.messages[0].content.text  # type: ignore[union-attr]
            return seen

    support = asyncio.run(session(_token("bob", ["support"])))
    assert support == {
        "tools": ["calc_add", "crm__lookup"],  # the actions behind resources and prompts are not tools
        "resources": ["docs://handbook", "docs://salaries"],
        "prompts": ["crm__greet"],
        "handbook": "Be kind to customers.",
        "prompt": "Greet Ann warmly.",
    }
    assert asyncio.run(session(_token("root", ["admin"])))["resources"] == []  # no rule lets admins read them
    decided = [(r["tool"], r["effect"]) for r in AuditLog(Database(str(tmp_path / "gw.db"))).rows() if r["effect"]]
    assert ("resource.crm", "allow") in decided and ("resource.crm", "deny") in decided
    assert ("prompt.crm.greet", "allow") in decided


def test_upstream_is_error_is_audited_as_a_failed_execution(http_proxy: str, tmp_path: Path) -> None:
    charge = ("crm__charge", {"customer_id": "c1", "amount": 5})
    (result,) = asyncio.run(_calls(http_proxy, _token("dave", ["billing"]), [charge]))
    assert result.is_error and "declined" in _text(result)  # the upstream's own error result, passed on
    log = AuditLog(Database(str(tmp_path / "gw.db")))
    started, record = [r for r in log.rows() if r["tool"] == "crm.charge"]
    assert (started["kind"], started["effect"], started["outcome"]) == ("decision", "allow", "started")
    assert (record["kind"], record["effect"], record["outcome"]) == ("execution", None, "error")
    assert "declined" in json.loads(record["detail"])["error"]
    export = "\n".join(log.export_jsonl())
    (session,) = read_gateway_sessions(tmp_path / "audit.jsonl", export)
    (call,) = session.traces[0].spans
    assert call.name == "crm.charge" and call.error is not None and "declined" in call.error


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
        ('[gateway.identity]\nprincipal = "\\u200b"\n', "identity.principal: is empty in canonical form"),
        ('[gateway.identity]\nprincipal = "bob"\nroles = ["a\\n"]\n', "identity.roles.0: contains the non-printable"),
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


def test_config_durability_reaches_the_gateway_and_write_ahead_is_always_on(tmp_path: Path) -> None:
    path = tmp_path / "gateway.toml"
    path.write_text(f'[gateway]\ndatabase = "{tmp_path / "gw.db"}"\ndurability = "power"\nwrite_ahead = true\n')
    proxy = McpProxy(load_config(path))  # accepted (deprecated); turning it off is refused
    path.write_text(path.read_text().replace("write_ahead = true", "write_ahead = false"))
    with pytest.raises(ConfigError, match="write_ahead = false is no longer possible"):
        load_config(path)
    try:
        assert proxy.gateway.db.durability == "power"
        assert any(type(m).__name__ == "_TracedWhenConfigured" for m in proxy.server.middleware)  # SDK span found
    finally:
        proxy.gateway.close()


def test_jwt_verifier_caches_only_valid_unexpired_tokens(monkeypatch: Any) -> None:
    monkeypatch.setenv("GW_TEST_SECRET", SECRET)
    verifier = JwtVerifier(Auth(algorithms=["HS256"], secret_env="GW_TEST_SECRET", leeway_s=0), cache_size=2)
    expires = int(time.time()) + 2  # JWT times are whole seconds: valid for at least one more
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


def test_serve_without_the_mcp_extra_names_the_extra(tmp_path: Path) -> None:
    without_mcp = "import sys; sys.modules['mcp'] = None; from agentcore.cli import app; app()"
    config = tmp_path / "gateway.toml"
    config.write_text("[gateway]\n")
    done = subprocess.run([sys.executable, "-c", without_mcp, "gateway", "serve", "--config", str(config)],
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "agentcore-governance[mcp]" in done.stderr and "Traceback" not in done.stderr


def _in_process_proxy(tmp_path: Path, settings: str) -> McpProxy:
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "p.policy").write_text('policy "p"\nallow calc.add for users with role "support".\n')
    config = tmp_path / "gateway.toml"
    config.write_text(f'[gateway]\npolicies = ["p.policy"]\ndatabase = "{tmp_path / "gw.db"}"\n{settings}')
    proxy = McpProxy(load_config(config))
    proxy.gateway.tool(lambda a, b: a + b, name="calc.add", schema={"type": "object"})
    return proxy


def test_http_serves_protected_resource_metadata(tmp_path: Path, monkeypatch: Any) -> None:
    """RFC 9728: where to get a token, at the well-known URL that every 401 names."""
    monkeypatch.setenv("GW_TEST_SECRET", SECRET)
    proxy = _in_process_proxy(
        tmp_path, '[gateway.auth]\nsecret_env = "GW_TEST_SECRET"\nissuer = "https://login.example"\n'
    )

    async def main() -> None:
        transport = httpx2.ASGITransport(app=proxy.http_app())
        async with httpx2.AsyncClient(transport=transport, base_url="http://gw.test:8765") as http:
            denied = await http.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
            assert denied.status_code == 401
            challenge = denied.headers["www-authenticate"]
            assert 'resource_metadata="http://gw.test:8765/.well-known/oauth-protected-resource/mcp"' in challenge
            for path in ("/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"):
                metadata = (await http.get(path)).json()
                assert metadata["resource"] == "http://gw.test:8765/mcp"
                assert metadata["authorization_servers"] == ["https://login.example"]
                assert metadata["bearer_methods_supported"] == ["header"]

    asyncio.run(main())
    proxy.gateway.close()


def test_unauthenticated_http_is_an_explicit_loopback_only_dev_mode(tmp_path: Path) -> None:
    identity = '[gateway.identity]\nprincipal = "dev"\nroles = ["support"]\n'
    without = _in_process_proxy(tmp_path / "a", identity)
    with pytest.raises(ConfigError, match="dev_unauthenticated = true"):
        without.http_app()
    without.gateway.close()
    proxy = _in_process_proxy(tmp_path / "b", "dev_unauthenticated = true\n" + identity)
    for public in ("0.0.0.0", "192.168.1.5", "::"):
        with pytest.raises(ConfigError, match="only loopback"):
            proxy.http_app(public)
    app = proxy.http_app("127.0.0.1")

    async def main() -> None:
        async with (
            proxy.server.session_manager.run(),
            httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app)) as http,
            Client(streamable_http_client("http://127.0.0.1:8765/mcp", http_client=http)) as client,
        ):
            assert [t.name for t in (await client.list_tools()).tools] == ["calc_add"]
            assert _text(await client.call_tool("calc_add", {"a": 2, "b": 3})) == "5"

    asyncio.run(main())
    assert {r["principal"] for r in proxy.gateway.audit.rows()} == {"dev"}
    proxy.gateway.close()


def test_stdio_does_not_need_the_http_jwt_secret(tmp_path: Path, monkeypatch: Any) -> None:
    """A client starting the proxy over stdio passes only the environment it names; the HTTP secret is not in it."""
    monkeypatch.delenv("GW_UNSET_SECRET", raising=False)
    settings = '[gateway.identity]\nprincipal = "dev"\n[gateway.auth]\nsecret_env = "GW_UNSET_SECRET"\n'
    proxy = _in_process_proxy(tmp_path, settings)  # constructing it (what stdio does) needs no secret
    with pytest.raises(ConfigError, match=r"GW_UNSET_SECRET .* is not set; .*`env` of the official client"):
        proxy.http_app()
    proxy.gateway.close()


def test_a_third_party_mcp_server_from_the_package_index_behind_the_proxy(tmp_path: Path) -> None:
    """``mcp-server-time`` (the reference time server, from PyPI) as a stdio target, driven by the official client."""
    target = f'[[gateway.targets]]\nname = "time"\ncommand = "{sys.executable}"\n'
    target += 'args = ["-m", "mcp_server_time", "--local-timezone", "UTC"]\n'
    identity = '[gateway.identity]\nprincipal = "dev"\nroles = ["support"]\n'
    proxy = _in_process_proxy(tmp_path, f"dev_unauthenticated = true\n{identity}{target}")
    (tmp_path / "p.policy").write_text('policy "t"\nallow time.get_current_time when timezone is "Europe/Paris".\n')
    proxy.gateway.policy.check_now()

    async def main() -> None:
        app = proxy.http_app()
        async with (
            proxy.upstreams,
            proxy.server.session_manager.run(),
            httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app)) as http,
            Client(streamable_http_client("http://127.0.0.1:8765/mcp", http_client=http)) as client,
        ):
            assert [t.name for t in (await client.list_tools()).tools] == ["time__get_current_time"]
            paris = await client.call_tool("time__get_current_time", {"timezone": "Europe/Paris"})
            assert not paris.is_error and json.loads(_text(paris))["timezone"] == "Europe/Paris"
            tokyo = await client.call_tool("time__get_current_time", {"timezone": "Asia/Tokyo"})
            assert tokyo.is_error and "denied by policy" in _text(tokyo)
            hidden = await client.call_tool("time__convert_time", {"source_timezone": "UTC", "time": "12:00",
                                                                    "target_timezone": "Asia/Tokyo"})  # fmt: skip
            assert hidden.is_error and "denied by policy" in _text(hidden)

    asyncio.run(main())
    ran = [(r["tool"], r["outcome"]) for r in proxy.gateway.audit.rows() if r["kind"] == "execution"]
    assert ran == [("time.get_current_time", "ok")]
    proxy.gateway.close()


def test_the_upstream_receives_the_canonical_text_the_policy_decided_on(tmp_path: Path) -> None:
    config = _config(tmp_path, f'command = "{sys.executable}"\nargs = ["{HERE / "mcp_upstream.py"}"]')
    (tmp_path / "policies" / "mcp.policy").write_text('allow crm.received when url host is "api.example.com".\n')
    params = StdioServerParameters(command=AGENTCORE, args=["gateway", "serve", "--config", str(config)], env=_env())
    spoofed = "https://api.example.com\uff0f@evil.com/v1"  # FULLWIDTH SOLIDUS: a URL parser would go to evil.com

    async def session() -> list[str]:
        async with Client(params) as client:
            return [_text(await client.call_tool("crm__received", {"url": url})) for url in (spoofed, "https://x.io")]

    upstream_got, other = asyncio.run(session())
    assert upstream_got == repr("https://api.example.com/@evil.com/v1") and "denied" in other
    log = AuditLog(Database(str(tmp_path / "gw.db")))
    allowed = [r for r in log.rows() if r["effect"] == "allow"]
    assert [json.loads(r["detail"])["args"] for r in allowed] == [{"url": "https://api.example.com/@evil.com/v1"}]


def test_a_signed_token_with_claims_of_the_wrong_shape_gets_401(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setenv("GW_TEST_SECRET", SECRET)
    verifier = JwtVerifier(Auth(algorithms=["HS256"], secret_env="GW_TEST_SECRET"))
    for roles in (5, [1, 2], {"admin": True}):
        with pytest.raises(AuthError, match="'roles' claim must be a list of strings"):
            verifier.verify(f"Bearer {_token('bob', roles)}")  # type: ignore[arg-type]
    with pytest.raises(AuthError, match="do not name a caller"):
        verifier.verify("Bearer " + _token("bob\ud800", []))  # JSON can carry a lone surrogate escape
    path = tmp_path / "gateway.toml"
    path.write_text(f'[gateway]\ndatabase = "{tmp_path / "gw.db"}"\n[gateway.auth]\nalgorithms = ["HS256"]\n'
                    'secret_env = "GW_TEST_SECRET"\n')  # fmt: skip
    proxy = McpProxy(load_config(path))

    async def post(token: str) -> httpx2.Response:
        transport = httpx2.ASGITransport(app=proxy.http_app())
        async with httpx2.AsyncClient(transport=transport, base_url="http://gw") as http:
            request = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
            return await http.post("/mcp", headers={"Authorization": f"Bearer {token}"}, json=request)

    try:
        response = asyncio.run(post(_token("bob", 5)))  # type: ignore[arg-type]
        assert response.status_code == 401 and "roles" in response.json()["error_description"]
    finally:
        proxy.gateway.close()


def _signed(payload: bytes) -> str:
    """A token signed over exactly ``payload`` (duplicate names, NaN: what ``jwt.encode`` of a dict cannot write)."""
    return jwt.api_jws.PyJWS().encode(payload, SECRET, algorithm="HS256")


def test_a_signed_token_that_names_no_one_or_two_callers_gets_401(http_proxy: str) -> None:
    """Each of these tokens was accepted: ``sub`` of zero-width characters was the user ``""`` (shared by every such
    token), ``"org": 5`` the tenant ``"5"``, ``"org": null`` no tenant at all, a role ``""`` a role, a newline or
    an ANSI escape in an id went to the audit and the CLI as it was, and of two ``sub`` claims the last one
    counted (a front proxy may read the first). Now each gets 401 before the MCP layer, and the proxy serves on."""
    exp = int(time.time()) + 300
    hostile = {
        "invisible sub": _token("\u200b\u200d", ["support"]),
        "empty sub": _token("", ["support"]),
        "empty role": _token("bob", ["support", "\u200b"]),
        "tenant number": _token("bob", ["support"], org=5),
        "tenant null": _token("bob", ["support"], org=None),
        "tenant list": _token("bob", ["support"], org=["acme", "globex"]),
        "newline in sub": _token("bob\nroot", ["support"]),
        "escape in tenant": _token("bob", ["support"], org="\x1b[2Jacme"),
        "huge sub": _token("b" * 20_000, ["support"]),
        "two subs": _signed(b'{"sub":"bob","sub":"root","roles":["support"],"exp":%d}' % exp),
        "two role claims": _signed(b'{"sub":"bob","roles":["support"],"roles":["admin"],"exp":%d}' % exp),
        "NaN claim": _signed(b'{"sub":"bob","roles":["support"],"level":NaN,"exp":%d}' % exp),
    }

    async def main() -> None:
        async with httpx2.AsyncClient() as http:
            for what, token in hostile.items():
                headers = {**_JSON_RPC, "Authorization": f"Bearer {token}"}
                response = await http.post(http_proxy, headers=headers, json=_INITIALIZE)
                assert response.status_code == 401 and "invalid_token" in response.text, what
            fine = {**_JSON_RPC, "Authorization": f"Bearer {_token('bob', ['support'], org='')}"}
            assert (await http.post(http_proxy, headers=fine, json=_INITIALIZE)).status_code == 200

    asyncio.run(main())


def test_unicode_reject_refuses_a_token_claim_not_in_canonical_form(monkeypatch: Any) -> None:
    """The docs promised ``unicode = "reject"`` refuses non-canonical identities from tokens; the verifier
    canonicalised them before the gateway could see them, so ``ｒｏｏｔ`` was quietly the user ``root``."""
    monkeypatch.setenv("GW_TEST_SECRET", SECRET)
    settings = Auth(algorithms=["HS256"], secret_env="GW_TEST_SECRET", tenant_claim="org")
    strict = JwtVerifier(settings, unicode="reject")
    for token in (_token("ｒｏｏｔ", []), _token("bob", ["ａｄｍｉｎ"]), _token("bob", [], org="acme\u200b")):
        with pytest.raises(AuthError, match=r"NFKC|invisible"):
            strict.verify(f"Bearer {token}")
        principal, _, tenant = JwtVerifier(settings).verify(f"Bearer {token}")  # canonicalize: rewritten
        assert principal.id in ("root", "bob") and tenant in (None, "acme")
    assert strict.verify(f"Bearer {_token('root', ['admin'], org='acme')}")[0].id == "root"


def test_deferred_outcomes_from_gateway_toml_are_all_in_the_audit_when_the_client_is_done(tmp_path: Path) -> None:
    config = _config(tmp_path, f'command = "{sys.executable}"\nargs = ["{HERE / "mcp_upstream.py"}"]')
    config.write_text(config.read_text().replace("database = ", "outcome_delay_s = 0.05\ndatabase = ", 1))
    assert load_config(config).outcome_delay_s == 0.05  # reaching the gateway: test_config_unicode_and_...
    params = StdioServerParameters(command=AGENTCORE, args=["gateway", "serve", "--config", str(config)], env=_env())

    async def session() -> None:
        async with Client(params) as client:
            for a in range(2):  # the policy allows 2 per session
                assert _text(await client.call_tool("calc_add", {"a": a, "b": 1})) == str(a + 1)
            assert not (await client.call_tool("crm__lookup", {"customer_id": "c1"})).is_error

    asyncio.run(session())
    log = AuditLog(Database(str(tmp_path / "gw.db")))
    started = {r["call_id"] for r in log.rows() if r["kind"] == "decision" and r["outcome"] == "started"}
    executed = {r["call_id"] for r in log.rows() if r["kind"] == "execution"}
    assert len(started) == 3 and started == executed and log.verify().ok
    config.write_text(config.read_text().replace("outcome_delay_s = 0.05", "outcome_delay_s = -1"))
    with pytest.raises(ConfigError, match="outcome_delay_s"):
        load_config(config)


def test_config_unicode_and_outcome_delay_reach_the_gateway(tmp_path: Path) -> None:
    path = tmp_path / "gateway.toml"
    path.write_text(f'[gateway]\ndatabase = "{tmp_path / "gw.db"}"\nunicode = "reject"\noutcome_delay_s = 0.05\n')
    proxy = McpProxy(load_config(path))
    try:
        assert proxy.gateway.unicode == "reject" and proxy.gateway.outcome_delay_s == 0.05
    finally:
        proxy.gateway.close()
    path.write_text('[gateway]\nunicode = "nfc"\n')
    with pytest.raises(ConfigError, match="unicode"):
        load_config(path)


_JSON_RPC = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
_HELLO = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}
_INITIALIZE = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": _HELLO}
_LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}


def test_an_http_session_is_served_only_to_the_caller_who_opened_it(http_proxy: str) -> None:
    """The SDK routes a session's responses by JSON-RPC id: eve posting into bob's session (its id leaked) with
    the id of bob's call in flight received bob's result, and bob's call never returned. Now she gets 404."""

    async def main() -> None:
        bob = {**_JSON_RPC, "Authorization": f"Bearer {_token('bob', ['support'])}"}
        eve = {**_JSON_RPC, "Authorization": f"Bearer {_token('eve', ['support'])}"}
        bob_agent = {**_JSON_RPC, "Authorization": f"Bearer {_token('bob', ['support'], org='globex')}"}
        async with httpx2.AsyncClient() as http:
            opened = await http.post(http_proxy, headers=bob, json=_INITIALIZE)
            session = {"Mcp-Session-Id": opened.headers["mcp-session-id"]}
            initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
            assert (await http.post(http_proxy, headers={**bob, **session}, json=initialized)).status_code == 202
            for other in (eve, bob_agent):  # another principal; bob of another tenant
                stolen = await http.post(http_proxy, headers={**other, **session}, json=_LIST)
                assert stolen.status_code == 404 and "Session not found" in stolen.text
            listed = await http.post(http_proxy, headers={**bob, **session}, json=_LIST)
            assert listed.status_code == 200 and "crm__lookup" in listed.text

    asyncio.run(main())


def test_ambiguous_credentials_and_oversized_heads_are_refused_before_the_mcp_layer(http_proxy: str) -> None:
    """Two Authorization headers (a front may have checked the other one) get 401; a request head that does not
    end within 64 KiB is refused, unauthenticated as it is, instead of growing the proxy's memory without bound;
    smuggling framings (Content-Length with chunking, two lengths) are refused; the proxy serves on."""
    port = int(http_proxy.split(":")[2].split("/")[0])
    bob, eve = _token("bob", ["support"]), _token("eve", ["admin"])

    def raw(head: bytes, body: bytes = b"") -> bytes:
        with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
            answer = b""
            with contextlib.suppress(ConnectionError):  # refused mid-head: reset, the answer perhaps lost
                sock.sendall(head + body)
                while chunk := sock.recv(65536):
                    answer += chunk
            return answer

    async def main() -> None:
        async with httpx2.AsyncClient() as http:
            for first, second in ((bob, eve), (eve, bob)):
                headers = [*_JSON_RPC.items(), *[("Authorization", f"Bearer {token}") for token in (first, second)]]
                both = await http.post(http_proxy, headers=headers, json=_LIST)
                assert both.status_code == 401 and "more than one Authorization header" in both.text

    asyncio.run(main())
    start = b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
    refused = raw(start + b"X-Big: " + b"a" * (4 << 20))  # never ends: unbounded, this waited for more
    assert refused == b"" or refused.startswith(b"HTTP/1.1 431 Request Header Fields Too Large\r\n")  # or reset
    body = json.dumps(_LIST).encode()
    chunked = b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)
    for framing in (b"Content-Length: %d\r\nTransfer-Encoding: chunked\r\n" % len(chunked),
                    b"Content-Length: %d\r\nContent-Length: %d\r\n" % (len(body), len(body))):  # fmt: skip
        assert raw(start + framing + b"\r\n", chunked if b"chunked" in framing else body).startswith(b"HTTP/1.1 400")
    assert asyncio.run(_calls(http_proxy, bob, [("crm__lookup", {"customer_id": "c1"})]))[0].is_error is False


def test_an_upstream_that_dies_during_a_call_fails_that_call_and_the_proxy_serves_on(
    http_proxy: str, tmp_path: Path
) -> None:
    """The SDK let the dropped POST's transport error end its client's task group, and with it the proxy."""
    token = _token("bob", ["support", "chaos"])
    (crashed,) = asyncio.run(_calls(http_proxy, token, [("crm__crash", {})]))
    assert crashed.is_error and "the upstream did not answer" in _text(crashed)
    added, gone = asyncio.run(
        _calls(http_proxy, token, [("calc_add", {"a": 1, "b": 2}), ("crm__lookup", {"customer_id": "c1"})])
    )
    assert _text(added) == "3" and gone.is_error  # the in-process tool runs; the dead upstream's tools fail
    ran = [
        (r["tool"], r["outcome"])
        for r in AuditLog(Database(str(tmp_path / "gw.db"))).rows()
        if r["kind"] == "execution"
    ]
    assert ("crm.crash", "error") in ran and ("calc.add", "ok") in ran
