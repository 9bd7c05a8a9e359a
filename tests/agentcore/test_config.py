"""One discovery rule for the database: agentcore.toml (or [tool.agentcore]) upward, then the environment, then the
default; every API that opens the database follows it."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

from agentcore import ConfigError, Gateway, Ledger, MemoryStore
from agentcore.config import database_url as discovered
from agentcore.config import find_config


def _file(url: str) -> Path:
    return Path(str(make_url(url).database)).resolve()


def test_agentcore_toml_is_found_from_a_sub_folder_and_its_path_is_relative_to_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "agentcore.toml").write_text('database = "state/app.db"\n')
    deep = tmp_path / "src" / "pkg"
    deep.mkdir(parents=True)
    monkeypatch.setenv("AGENTCORE_DATABASE_URL", f"sqlite:///{tmp_path / 'env.db'}")  # the file wins over it
    monkeypatch.chdir(deep)
    assert _file(discovered()) == (tmp_path / "state" / "app.db").resolve()


def test_pyproject_table_then_environment_then_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AGENTCORE_DATABASE_URL", raising=False)
    monkeypatch.chdir(tmp_path)
    assert _file(discovered()) == (tmp_path / ".agentcore" / "agentcore.db").resolve()
    monkeypatch.setenv("AGENTCORE_DATABASE_URL", "other.db")
    assert _file(discovered()) == (tmp_path / "other.db").resolve()
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n')  # no [tool.agentcore]: not a config
    assert find_config() is None
    (tmp_path / "pyproject.toml").write_text('[tool.agentcore]\ndatabase = "postgresql://db/agentcore"\n')
    assert make_url(discovered()).database == "agentcore"


def test_a_broken_config_file_is_a_config_error_naming_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "agentcore.toml").write_text("database = \n")
    with pytest.raises(ConfigError, match=r"agentcore\.toml: invalid TOML"):
        discovered()
    (tmp_path / "agentcore.toml").write_text("database = 3\n")
    with pytest.raises(ConfigError, match="database must be a URL or a path"):
        discovered()


def test_gateway_memory_and_ledger_share_one_database(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "agentcore.toml").write_text('database = "shared.db"\n')
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path / "sub")
    gateway = Gateway()
    with MemoryStore() as memory:
        files = {_file(gateway.db.url), _file(str(memory.engine.url)), _file(str(Ledger().engine.url))}
    assert files == {(tmp_path / "shared.db").resolve()}
    assert not (tmp_path / "sub" / ".agentcore").exists()


def test_gateway_on_a_missing_policy_folder_is_an_agentcore_error_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match="agentcore init"):
        Gateway("policies/")
    assert list(tmp_path.iterdir()) == []


def test_the_documented_bare_postgresql_url_connects_with_the_postgres_extra(
    postgres_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SQLAlchemy 2.1 reads ``postgresql://`` as psycopg 3, which the extra (psycopg2) does not install: every
    store failed with ModuleNotFoundError on the URL the README and the starter agentcore.toml give."""
    bare = make_url(postgres_url).set(drivername="postgresql").render_as_string(hide_password=False)
    (tmp_path / "agentcore.toml").write_text(f'database = "{bare}"\n')
    monkeypatch.chdir(tmp_path)
    with MemoryStore() as memory:
        assert memory.stats().backend == "postgresql"
    assert Gateway().db.backend == "postgresql"
    assert Ledger().engine.url.get_backend_name() == "postgresql"


@pytest.mark.parametrize("typo", ["redis:/127.0.0.1:6379/0", "postgresql:localhost/db", "sqlite:gw.db"])
def test_a_url_short_of_its_slashes_is_a_config_error_not_a_file_of_that_name(
    typo: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``redis:/x`` has no ``://``, so it was read as a path: the gateway made a SQLite file ``redis:/x`` (a folder
    ``redis:``) and kept its state there, and ``forget --state`` erased nothing from Redis."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match=r"URL without '//'"):
        Gateway(database=typo)
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "agentcore.toml").write_text('database = "./notes:v2.db"\n')  # a file of such a name, said so
    assert discovered(tmp_path) == f"sqlite:///{tmp_path / 'notes:v2.db'}"
