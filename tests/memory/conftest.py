"""Fixtures for the memory tests: one store per test on each backend (SQLite file, PostgreSQL schema)."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, make_url, text

from agentcore.memory import MemoryStore


@pytest.fixture(scope="session")
def memory_postgres_url(postgres_url: str) -> Iterator[str]:
    """A throwaway database on the test PostgreSQL server, created for this run and dropped after it."""
    url = make_url(postgres_url)
    name = f"agentcore_memtest_{uuid.uuid4().hex[:12]}"
    admin = create_engine(url.set(database="postgres"), isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(text(f"CREATE DATABASE {name}"))
    database = create_engine(url.set(database=name), isolation_level="AUTOCOMMIT")
    with database.connect() as connection:
        if connection.execute(text("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")).first():
            # in its own schema, on every per-test store's search_path (public is not: it may hold tables)
            connection.execute(text("CREATE SCHEMA extensions"))
            connection.execute(text("CREATE EXTENSION vector SCHEMA extensions"))
    database.dispose()
    try:
        yield url.set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as connection:
            connection.execute(text(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
        admin.dispose()


@pytest.fixture
def make_store(
    request: pytest.FixtureRequest, tmp_path: Path, accelerator: object
) -> Iterator[Callable[..., MemoryStore]]:
    """``make_store(**kwargs)`` on the backend the test is parametrised with (default SQLite).

    Modules run on both backends with ``pytestmark = pytest.mark.parametrize("make_store", ["sqlite",
    "postgresql"], indirect=True)``.

    PostgreSQL stores each get a schema in the run's throwaway database, so tests never see each other.
    """
    backend = getattr(request, "param", "sqlite")
    stores: list[MemoryStore] = []
    schemas: list[str] = []
    admin_url = request.getfixturevalue("memory_postgres_url") if backend == "postgresql" else None

    def make(**kwargs: object) -> MemoryStore:
        kwargs.setdefault("accelerator", accelerator)
        if admin_url is None:
            store = MemoryStore(f"sqlite:///{tmp_path / 'memory.db'}", **kwargs)  # type: ignore[arg-type]
        else:
            schema = f"memtest_{uuid.uuid4().hex[:12]}"
            with create_engine(admin_url).begin() as connection:
                connection.execute(text(f"CREATE SCHEMA {schema}"))
            schemas.append(schema)
            engine = create_engine(admin_url, connect_args={"options": f"-csearch_path={schema},extensions"})
            store = MemoryStore(engine=engine, **kwargs)  # type: ignore[arg-type]
        stores.append(store)
        return store

    yield make
    for store in stores:
        store.close()
    if admin_url is not None and schemas:
        engine = create_engine(admin_url)
        with engine.begin() as connection:
            for schema in schemas:
                connection.execute(text(f"DROP SCHEMA {schema} CASCADE"))
        engine.dispose()


@pytest.fixture
def store(make_store: Callable[..., MemoryStore]) -> MemoryStore:
    return make_store()
