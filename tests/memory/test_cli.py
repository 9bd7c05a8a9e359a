"""``agentcore memory``: every command against a real SQLite store."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from typer.testing import CliRunner

from agentcore.cli import app
from agentcore.memory import MemoryStore

runner = CliRunner()


def _seed(tmp_path: Path, accelerator: object) -> str:
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    with MemoryStore(url, accelerator=accelerator) as store:  # type: ignore[arg-type]
        store.add_event("alice", "s1", "user", "My cat is called Miso")
        store.add_event("alice", "s1", "assistant", "Miso is a lovely name")
        store.add_record("alice", "/users/alice/facts", "Alice's cat is called Miso")
        store.add_event("bob", "s1", "user", "I am bob", expires_at=store.list_events("alice", "s1")[0].created_at)
    return url


def test_memory_commands(tmp_path: Path, accelerator: object) -> None:
    url = _seed(tmp_path, accelerator)
    result = runner.invoke(app, ["memory", "stats", "--db", url, "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["events"] == 3 and json.loads(result.output)["expired_events"] == 1
    result = runner.invoke(app, ["memory", "events", "alice", "--db", url])
    assert result.exit_code == 0 and result.output.split() == ["s1"]
    result = runner.invoke(app, ["memory", "events", "alice", "s1", "-n", "1", "--json", "--db", url])
    assert [json.loads(line)["text"] for line in result.output.splitlines()] == ["Miso is a lovely name"]
    result = runner.invoke(app, ["memory", "search", "alice", "what is my cat's name", "--json", "--db", url])
    assert result.exit_code == 0, result.output
    assert {json.loads(line)["item"]["actor_id"] for line in result.output.splitlines()} == {"alice"}
    result = runner.invoke(
        app, ["memory", "search", "alice", "cat", "--records", "--namespace-prefix", "/users/", "--db", url]
    )
    assert result.exit_code == 0 and "Miso" in result.output
    result = runner.invoke(app, ["memory", "purge", "--db", url])
    assert result.exit_code == 0 and "purged 1 expired events" in result.output
    result = runner.invoke(app, ["memory", "forget", "alice", "--db", url], input="n\n")
    assert result.exit_code == 1  # declined: nothing erased
    result = runner.invoke(app, ["memory", "forget", "alice", "--yes", "--db", url])
    assert result.exit_code == 0 and "2 events, 1 records" in result.output
    assert json.loads(runner.invoke(app, ["memory", "stats", "--json", "--db", url]).output)["events"] == 0


def test_memory_commands_read_and_erase_one_tenant(tmp_path: Path, accelerator: object) -> None:
    """The commands named no tenant: `memory forget alice` erased every tenant's alice, and the others read the
    default tenant's only, with no way to reach acme's."""
    url = _seed(tmp_path, accelerator)
    with MemoryStore(url, tenant="acme", accelerator=accelerator) as store:  # type: ignore[arg-type]
        store.add_event("alice", "s2", "user", "acme's alice keeps a parrot")
    events = runner.invoke(app, ["memory", "events", "alice", "s2", "--json", "--tenant", "\uff41cme", "--db", url])
    assert [json.loads(line)["text"] for line in events.output.splitlines()] == ["acme's alice keeps a parrot"]
    stats = runner.invoke(app, ["memory", "stats", "--json", "--tenant", "acme", "--db", url])
    assert (json.loads(stats.output)["tenant"], json.loads(stats.output)["events"]) == ("acme", 1)
    found = runner.invoke(app, ["memory", "search", "alice", "cat", "--json", "--tenant", "acme", "--db", url])
    assert found.exit_code == 0 and "Miso" not in found.output
    forgot = runner.invoke(app, ["memory", "forget", "alice", "--yes", "--tenant", "acme", "--db", url])
    assert forgot.exit_code == 0 and "forgot 'alice' in tenant 'acme': 1 events" in forgot.output
    assert json.loads(runner.invoke(app, ["memory", "stats", "--json", "--db", url]).output)["events"] == 3
    bad = runner.invoke(app, ["memory", "stats", "--tenant", "", "--db", url])
    assert bad.exit_code == 1 and "tenant must have 1 to 255 characters" in bad.output


def test_bad_input_is_an_error_line_and_exit_code_1(tmp_path: Path, accelerator: object) -> None:
    url = _seed(tmp_path, accelerator)
    result = runner.invoke(app, ["memory", "search", "alice", "cat", "--mode", "sql", "--db", url])
    assert result.exit_code == 1 and "mode must be one of" in result.output
    result = runner.invoke(app, ["memory", "stats", "--db", "nosuch://host/db"])
    assert result.exit_code == 1 and "is not a database URL" in result.output


def test_db_takes_a_path_like_the_gateway_commands(tmp_path: Path) -> None:
    """A bare path opens that file; one that does not exist is refused (exit 2), not created and read as empty."""
    path = tmp_path / "mem" / "agentcore.db"
    result = runner.invoke(app, ["memory", "stats", "--json", "--db", str(path)])
    assert result.exit_code == 2 and "no database at" in result.stderr and not path.parent.exists()
    MemoryStore(str(path)).close()
    result = runner.invoke(app, ["memory", "stats", "--json", "--db", str(path)])
    assert result.exit_code == 0 and json.loads(result.output)["events"] == 0


def test_what_users_and_agents_said_is_shown_escaped(
    tmp_path: Path, accelerator: object, hostile_text: tuple[str, ...], shown_safely: Callable[..., None]
) -> None:
    """Events and records hold whatever a user or an agent said: ``x[/]`` stopped `memory events` and `memory search`
    with a MarkupError, ``[bold red]`` restyled the table, and escapes, newlines and a bidi override reached the
    terminal; an actor named ``x[/]`` crashed `memory forget` after the erasure. ``--json`` keeps the exact text."""
    url = f"sqlite:///{tmp_path / 'hostile.db'}"
    with MemoryStore(url, accelerator=accelerator) as store:  # type: ignore[arg-type]
        for index, text in enumerate(hostile_text):
            store.add_event("x[/]", "s1", "user", text)
            store.add_record("x[/]", f"/facts/{index}", f"fact {text}")
        store.add_event("x[/]", "\u202eevil[/]", "user", "hello")
    wide = {"COLUMNS": "250"}
    events = runner.invoke(app, ["memory", "events", "x[/]", "s1", "--db", url], env=wide)
    assert events.exit_code == 0, events.output
    shown_safely(events.output, *hostile_text)
    sessions = runner.invoke(app, ["memory", "events", "x[/]", "--db", url])
    assert sessions.exit_code == 0 and sorted(sessions.output.split()) == ["\\u202eevil[/]", "s1"]
    search = ["memory", "search", "x[/]", "fact", "--records", "--mode", "fulltext", "-k", "20", "--db", url]
    found = runner.invoke(app, search, env=wide)
    assert found.exit_code == 0, found.output
    shown_safely(found.output, *(f"fact {text}" for text in hostile_text))
    as_json = runner.invoke(app, ["memory", "events", "x[/]", "s1", "--json", "--db", url])
    shown_safely(as_json.output)
    assert as_json.output.isascii()
    assert [json.loads(line)["text"] for line in as_json.output.splitlines()] == list(hostile_text)
    forgot = runner.invoke(app, ["memory", "forget", "x[/]", "--yes", "--db", url])
    assert forgot.exit_code == 0 and "forgot 'x[/]' in tenant 'default': 8 events" in forgot.output, forgot.output
