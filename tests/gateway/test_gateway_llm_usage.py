"""Gateway.record_llm_usage: LLM tokens, priced by the simulated serving model, count in budget rules."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentcore import Gateway, ToolDenied
from agentcore.accel.ledger import NO_TENANT, Ledger
from agentcore.accel.serving.usage import record_llm_usage
from agentcore.errors import ConfigError


def _echo(text: str) -> str:
    return text


def _budgeted(tmp_path: Path) -> Gateway:
    """A gateway with a ledger and a 0.01 USD daily budget per user, in ``tmp_path/shared.db``."""
    database = str(tmp_path / "shared.db")
    (tmp_path / "budget.policy").write_text(
        'policy "budget"\nallow t.echo.\ndeny any tool when accelerator spend of user today exceeds 0.01 USD.\n'
    )
    gw = Gateway(tmp_path / "budget.policy", database=database, ledger=Ledger(database))
    gw.tool(_echo, name="t.echo")
    return gw


def test_gateway_llm_usage_counts_toward_accelerator_spend_budgets(tmp_path: Path) -> None:
    gw = _budgeted(tmp_path)
    assert gw.call("t.echo", {"text": "hi"}, principal="alice") == "hi"
    spent = 0.0
    while spent <= 0.01:  # a long agent session on the largest model
        spent += gw.record_llm_usage("llama-3.1-405b", 20_000, 2_000, user="alice", device="h100").usd
    with pytest.raises(ToolDenied, match="spend"):
        gw.call("t.echo", {"text": "hi"}, principal="alice")
    assert gw.call("t.echo", {"text": "hi"}, principal="bob") == "hi"
    gw.close()
    bare = Gateway(tmp_path / "budget.policy", database=str(tmp_path / "shared.db"))
    with pytest.raises(ConfigError, match="no ledger"):
        bare.record_llm_usage("llama-3.1-8b", 10, 10, user="alice")
    bare.close()


def test_llm_usage_is_charged_to_the_tenant_its_calls_name(tmp_path: Path) -> None:
    """Budget rules read the ledger for the call's tenant; an empty tenant (a claim of "", or one of zero-width
    characters only) was filed under "default", so its budget read nothing and was never exhausted."""
    gw = _budgeted(tmp_path)
    for tenant in ("", "\u200b", "ａｃｍｅ"):
        gw.record_llm_usage("llama-3.1-405b", 200_000, 20_000, user="mallory", tenant=tenant, device="h100")
    for tenant in ("", "acme"):
        with pytest.raises(ToolDenied, match="spend"):
            gw.call("t.echo", {"text": "hi"}, principal="mallory", tenant=tenant)
    assert gw.call("t.echo", {"text": "hi"}, principal="mallory", tenant="default") == "hi"  # no one's spend
    gw.close()


def test_spend_recorded_outside_the_gateway_counts_for_the_canonical_caller(tmp_path: Path) -> None:
    """An application charging the ledger itself (its embeddings, its own LLM calls) with the ids as its users typed
    them: ``ｍａｌｌｏｒｙ`` of ``ａｃｍｅ`` is mallory of acme, whose budget rule must see that spend."""
    gw = _budgeted(tmp_path)
    assert gw.ledger is not None
    record_llm_usage(
        gw.ledger, "llama-3.1-405b", 200_000, 20_000, tenant="ａｃｍｅ", user="ｍａｌｌｏｒｙ\u200b", device="h100"
    )
    with pytest.raises(ToolDenied, match="spend"):
        gw.call("t.echo", {"text": "hi"}, principal="mallory", tenant="acme")
    gw.close()


def test_a_tenant_named_default_never_shares_the_spend_of_calls_without_a_tenant(tmp_path: Path) -> None:
    """Untenanted usage was filed under the tenant ``"default"``: a real tenant of that name had every untenanted
    caller's spend in its ``accelerator spend`` budgets (its mallory denied for spend she never made), and its
    console viewers saw that spend by user and agent. It is filed under ``NO_TENANT`` now, which only requests
    without a tenant (which count every tenant's spend) read."""
    database = str(tmp_path / "shared.db")
    (tmp_path / "budget.policy").write_text(
        'policy "budget"\nallow t.echo.\n'
        "deny any tool when accelerator spend of user today exceeds 0.01 USD.\n"
        "deny any tool when accelerator spend of tenant today exceeds 0.01 USD.\n"
    )
    gw = Gateway(tmp_path / "budget.policy", database=database, ledger=Ledger(database))
    gw.tool(_echo, name="t.echo")
    gw.record_llm_usage("llama-3.1-405b", 200_000, 20_000, user="mallory", device="h100")  # no tenant
    assert gw.call("t.echo", {"text": "hi"}, principal="mallory", tenant="default") == "hi"
    with pytest.raises(ToolDenied, match="spend"):
        gw.call("t.echo", {"text": "hi"}, principal="mallory")
    assert gw.ledger is not None
    tenants = {row.group["tenant"] for row in gw.ledger.report(by=("tenant",))}
    assert tenants == {NO_TENANT} and gw.ledger.spend(tenant="default").calls == 0
    for spelling in (NO_TENANT, "(no tenant)"):  # a tenant that spells it is "(no tenant)", a tenant like others
        assert gw.call("t.echo", {"text": "hi"}, principal="mallory", tenant=spelling) == "hi"
    assert gw.record_llm_usage("llama-3.1-8b", 10, 10, user="mallory", tenant=NO_TENANT).tenant == "(no tenant)"
    for user in ("", "\u200b", "bob\n"):
        with pytest.raises(ValueError, match="invalid owner of LLM usage: user"):
            gw.record_llm_usage("llama-3.1-8b", 10, 10, user=user)
    gw.close()
