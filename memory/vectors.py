"""Vector nomination for actors with many rows: pick the few candidates worth scoring exactly.

Exact search reads every embedding of the actor; past a few thousand rows that read (1.5 KB per row) is
most of a query. A :class:`Nominator` returns the ids of the rows nearest the query, at most ``limit``,
or ``None`` when the actor is small enough that reading everything is cheaper. The store then loads only
those rows *through its usual scoped SQL* (actor, expiry, namespace, filters) and re-ranks them exactly
from the stored float32 embeddings, so a nomination can make results miss a row but never add a foreign
or expired one.

On SQLite the nominator is :class:`ActorMatrixCache`: the actor's embedding matrix, kept in process
memory and invalidated by a per-actor version that triggers bump on every insert, update and delete
(any process, any code path). Below ``PROJECT_MIN_ROWS`` rows a nomination scores the whole matrix, so it
is exact. Above, reading a 100,000 x 384 float32 matrix (150 MB) per query is most of the query's time, so
the cache also keeps the matrix projected onto its 64 main directions (a sixth of the bytes): the
projection picks a pool of ``COARSE_FACTOR`` x ``limit`` rows, and those are re-scored exactly from the
float32 rows. Only a row whose projection ranks outside that pool can be missed (recall@10 1.0 on
bench/memory.py's heavy actor). PostgreSQL with pgvector nominates through an HNSW index instead
(:mod:`agentcore.memory.pgvector`).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Protocol

import numpy as np
from sqlalchemy import text
from sqlalchemy.engine import Connection

from agentcore.memory.fulltext import FULLTEXT_TABLES
from agentcore.memory.search import Scope

VERSIONS_TABLE = "memory_vector_versions"
# Below this many embedded rows an actor's exact search reads its rows directly (~1 ms per 1,000 rows).
CACHE_MIN_ROWS = 2000
DEFAULT_CACHE_BYTES = 512 * 1024 * 1024
PROJECT_MIN_ROWS = 20_000
PROJECTED_DIMENSIONS = 64
COARSE_FACTOR = 5
COARSE_MIN = 1000
BASIS_SAMPLE_ROWS = 10_000


class Nominator(Protocol):
    def nominate(self, connection: Connection, scope: Scope, query: np.ndarray, limit: int) -> list[int] | None:
        """Ids of up to ``limit`` rows nearest ``query`` (best first), or ``None``: score every row."""


@dataclass(frozen=True)
class _Matrix:
    version: int
    ids: np.ndarray
    vectors: np.ndarray
    basis: np.ndarray | None = None  # [d, k] main directions of ``vectors`` (large matrices only)
    projected: np.ndarray | None = None  # [n, k] = vectors @ basis

    @property
    def nbytes(self) -> int:
        return self.vectors.nbytes + (0 if self.projected is None else self.projected.nbytes)

    def scores(self, query: np.ndarray, limit: int) -> tuple[np.ndarray, np.ndarray]:
        """(row positions, exact cosine) of the rows worth ranking for ``query``: all, or the projection's pool."""
        width = max(COARSE_FACTOR * limit, COARSE_MIN)
        if self.basis is None or self.projected is None or width >= len(self.ids):
            return np.arange(len(self.ids)), self.vectors @ query
        # einsum: one thread; BLAS's threads spin on a busy machine and cost more CPU than these products
        # (the pool's re-score: 5.4 ms CPU through BLAS, 0.5 ms through einsum, at 2,000 x 384)
        coarse = np.einsum("ij,j->i", self.projected, query @ self.basis)
        pool = np.argpartition(-coarse, width)[:width]
        return pool, np.einsum("ij,j->i", self.vectors[pool], query)


def _main_directions(vectors: np.ndarray) -> np.ndarray:
    """The top right-singular vectors of (a strided sample of) ``vectors``: the best rank-k dot products."""
    sample = vectors[:: max(1, len(vectors) // BASIS_SAMPLE_ROWS)]
    _, directions = np.linalg.eigh(sample.T @ sample)
    return np.ascontiguousarray(directions[:, ::-1][:, :PROJECTED_DIMENSIONS], dtype=np.float32)


class ActorMatrixCache:
    """Per-actor embedding matrices of one SQLite database (keyed by table, tenant and actor), least recently used
    first out."""

    def __init__(
        self,
        max_bytes: int = DEFAULT_CACHE_BYTES,
        min_rows: int = CACHE_MIN_ROWS,
        project_min_rows: int = PROJECT_MIN_ROWS,
    ) -> None:
        self.max_bytes = max_bytes
        self.min_rows = min_rows
        self.project_min_rows = project_min_rows
        self._lock = threading.Lock()
        self._matrices: OrderedDict[tuple[str, str, str], _Matrix] = OrderedDict()
        self._bytes = 0

    def __contains__(self, key: object) -> bool:
        """Whether ``(table name, tenant, actor id)`` has a cached matrix."""
        with self._lock:
            return key in self._matrices

    def forget(self, tenant: str | None, actor_id: str) -> None:
        """Drop ``actor_id``'s matrices in ``tenant`` (``None``: every tenant): ``forget`` leaves no copy of the
        actor's vectors in this process (the random first version, :func:`sqlite_version_triggers`, keeps any other
        process's copy from matching)."""
        with self._lock:
            for key in [key for key in self._matrices if key[2] == actor_id and tenant in (None, key[1])]:
                self._bytes -= self._matrices.pop(key).nbytes

    def nominate(self, connection: Connection, scope: Scope, query: np.ndarray, limit: int) -> list[int] | None:
        key = (scope.table.name, scope.tenant, scope.actor_id)
        state = connection.execute(
            text(f"SELECT version, rows FROM {VERSIONS_TABLE} WHERE table_name = :t AND tenant = :n AND actor_id = :a"),
            {"t": key[0], "n": key[1], "a": key[2]},
        ).first()
        if state is None or state.rows < self.min_rows or state.rows * query.nbytes > self.max_bytes:
            return None
        matrix = self._get(key, state.version) or self._load(connection, key, state.version)
        if len(matrix.ids) <= limit:
            return None
        pool, scores = matrix.scores(query, limit)
        best = np.argpartition(-scores, limit)[:limit]
        return matrix.ids[pool[best[np.argsort(-scores[best], kind="stable")]]].tolist()

    def _get(self, key: tuple[str, str, str], version: int) -> _Matrix | None:
        with self._lock:
            matrix = self._matrices.get(key)
            if matrix is None or matrix.version != version:
                return None
            self._matrices.move_to_end(key)
            return matrix

    def _load(self, connection: Connection, key: tuple[str, str, str], version: int) -> _Matrix:
        """Read the actor's embeddings in the caller's read transaction, the one that read ``version``."""
        rows = connection.exec_driver_sql(
            f"SELECT id, embedding FROM {key[0]} WHERE tenant = ? AND actor_id = ? AND embedding IS NOT NULL "
            "ORDER BY id",
            key[1:],
        ).all()
        ids = np.fromiter((row[0] for row in rows), dtype=np.int64, count=len(rows))
        vectors = np.frombuffer(b"".join(row[1] for row in rows), dtype="<f4").reshape(len(rows), -1)
        matrix = _Matrix(version, ids, vectors)
        if len(rows) >= self.project_min_rows:
            basis = _main_directions(vectors)
            matrix = _Matrix(version, ids, vectors, basis, np.ascontiguousarray(vectors @ basis))
        with self._lock:
            old = self._matrices.pop(key, None)
            self._bytes -= 0 if old is None else old.nbytes
            self._matrices[key] = matrix
            self._bytes += matrix.nbytes
            while self._bytes > self.max_bytes and len(self._matrices) > 1:
                _, evicted = self._matrices.popitem(last=False)
                self._bytes -= evicted.nbytes
        return matrix


def sqlite_version_triggers(*, backfill: bool = True, tenant: bool = False) -> list[str]:
    """The versions table, its backfill, and triggers bumping an actor's version on any embedding change.

    An actor's first version is random, not 1: ``forget`` deletes the version row, and an actor who writes again
    would otherwise count up through the versions a matrix cached by another process still carries (with the
    forgotten rows' vectors and ids, which SQLite reuses). ``tenant``: versions per tenant and actor (schema
    version 8; the earlier migrations build them per actor, as they did)."""
    key = "tenant, actor_id" if tenant else "actor_id"
    statements = [
        f"CREATE TABLE IF NOT EXISTS {VERSIONS_TABLE} (table_name TEXT NOT NULL, "
        + ("tenant TEXT NOT NULL, " if tenant else "")
        + f"actor_id TEXT NOT NULL, version INTEGER NOT NULL, rows INTEGER NOT NULL, PRIMARY KEY (table_name, {key}))"
    ]
    first = "(random() >> 2)"  # 62 random bits: no version another process saw comes back
    for table in FULLTEXT_TABLES:

        def bump(row: str, delta: str, table: str = table) -> str:
            values = ", ".join(f"{row}.{column.strip()}" for column in key.split(","))
            return (
                f"INSERT INTO {VERSIONS_TABLE} (table_name, {key}, version, rows) "
                f"VALUES ('{table}', {values}, {first}, {delta}) ON CONFLICT (table_name, {key}) "
                f"DO UPDATE SET version = version + 1, rows = rows + ({delta});"
            )

        if backfill:
            statements.append(
                f"INSERT INTO {VERSIONS_TABLE} SELECT '{table}', {key}, {first}, count(*) FROM {table} "
                f"WHERE embedding IS NOT NULL GROUP BY {key}"
            )
        statements += [
            f"DROP TRIGGER IF EXISTS {table}_vv_insert",
            f"DROP TRIGGER IF EXISTS {table}_vv_update",
            f"DROP TRIGGER IF EXISTS {table}_vv_delete",
            f"CREATE TRIGGER {table}_vv_insert AFTER INSERT ON {table} WHEN new.embedding IS NOT NULL BEGIN "
            f"{bump('new', '1')} END",
            f"CREATE TRIGGER {table}_vv_update AFTER UPDATE OF embedding, {key} ON {table} BEGIN "
            f"{bump('old', '-(old.embedding IS NOT NULL)')} "
            f"{bump('new', 'new.embedding IS NOT NULL')} END",
            f"CREATE TRIGGER {table}_vv_delete AFTER DELETE ON {table} WHEN old.embedding IS NOT NULL BEGIN "
            f"{bump('old', '-1')} END",
        ]
    return statements
