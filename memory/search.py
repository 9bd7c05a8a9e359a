"""Hybrid retrieval: BM25 full-text and exact cosine over accel embeddings, fused by reciprocal rank.

Both searches run inside one :class:`Scope`, a SQL condition that always starts with the actor id, so
no query ever reads another actor's rows. Vector search is exact: the actor's embeddings are loaded and
scored with one matrix product (per-actor data is small; see docs/memory.md for the limits).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Literal

import numpy as np
from sqlalchemy import ColumnElement, Table, and_, cast, func, literal_column, or_, select
from sqlalchemy import column as sql_column
from sqlalchemy import table as sql_table
from sqlalchemy.dialects.postgresql import TSQUERY
from sqlalchemy.engine import Connection
from sqlalchemy.sql.expression import TableClause

from agentcore.memory.filters import Predicate
from agentcore.memory.fulltext import postgres_actor_lexeme, sqlite_match

SearchMode = Literal["hybrid", "vector", "fulltext"]
SEARCH_MODES: tuple[str, ...] = ("hybrid", "vector", "fulltext")
# Reciprocal rank fusion: score = sum over rankings of weight / (RRF_K + rank). A small k trusts the top of
# each list; full-text gets more weight because on conversation turns (names, rare nouns) BM25 is the
# stronger single ranker. Both were chosen on LoCoMo conv-26 and checked on the other three conversations
# (bench/memory_locomo.py); the textbook k=60 with equal weights fell below BM25 alone there.
RRF_K = 5
FULLTEXT_WEIGHT = 1.5
UNINFORMATIVE_BM25 = 1e-4
MAX_QUERY_TERMS = 64
RANK_DEPTH = 200
# FTS5's best matches read (as multiples of the ranking's length) before joining every match (see sqlite_best_matches).
FULLTEXT_FACTORS = (2, 16)
# Function words carry no topic; dropping them keeps OR-queries from matching nearly every row.
STOPWORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "been",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "for",
        "from",
        "had",
        "has",
        "have",
        "he",
        "her",
        "him",
        "his",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "me",
        "my",
        "no",
        "not",
        "of",
        "on",
        "or",
        "our",
        "she",
        "so",
        "than",
        "that",
        "the",
        "their",
        "them",
        "then",
        "there",
        "these",
        "they",
        "this",
        "to",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
    ]
)


@dataclass
class Scope:
    """The rows of one table a query may touch; the first conditions are always the actor and expiry."""

    table: Table
    actor_id: str
    now: datetime
    conditions: list[ColumnElement[bool]] = field(default_factory=list)

    def __post_init__(self) -> None:
        column = self.table.c
        self.conditions[:0] = [
            column.actor_id == self.actor_id,
            or_(column.expires_at.is_(None), column.expires_at > self.now),
        ]


@dataclass(frozen=True)
class Candidates:
    """The rows a query may return: ids, their embeddings ``[n, d]``, and creation times."""

    ids: np.ndarray
    vectors: np.ndarray
    created_at: list[datetime] | None


@dataclass(frozen=True)
class Hit:
    id: int
    score: float
    similarity: float | None


def query_terms(query: str) -> list[str]:
    """Lower-cased word tokens minus stopwords; safe to quote into FTS5 or tsquery syntax (``\\w`` only)."""
    terms = [term for term in re.findall(r"\w+", query.lower()) if term not in STOPWORDS]
    return list(dict.fromkeys(terms))[:MAX_QUERY_TERMS]


def actor_for_ids(table: Table, actor_id: str) -> ColumnElement[bool]:
    """The actor condition of a lookup by primary keys, written so that the planner uses the keys.

    With a plain ``actor_id = ?`` SQLite prefers the actor index and walks every entry of the actor
    (all 100,000 of a heavy one); ``actor_id || ''`` is the same test, kept out of index selection.
    """
    return table.c.actor_id.concat("") == actor_id


def load_candidates(
    connection: Connection,
    scope: Scope,
    keep: Predicate | None,
    *,
    with_times: bool = False,
    ids: Sequence[int] | None = None,
) -> Candidates:
    """Every in-scope row with an embedding whose metadata passes ``keep`` (only ``ids``, when given).

    Metadata and creation times are read only when needed: decoding them is most of a query's cost.
    """
    column = scope.table.c
    columns = [column.id, column.embedding]
    columns += [column.created_at] if with_times else []
    columns += [column.metadata] if keep else []
    conditions = scope.conditions
    if ids is not None:
        conditions = [
            actor_for_ids(scope.table, scope.actor_id),
            *conditions[1:],
            column.id.in_(list(dict.fromkeys(ids))),
        ]
    query = select(*columns).where(*conditions, column.embedding.is_not(None))
    kept = [row for row in connection.execute(query).all() if keep is None or keep(row.metadata or {})]
    found = np.fromiter((row.id for row in kept), dtype=np.int64, count=len(kept))
    blob = b"".join(bytes(row.embedding) for row in kept)
    vectors = np.frombuffer(blob, dtype="<f4").reshape(len(kept), -1) if kept else np.zeros((0, 1), np.float32)
    return Candidates(found, vectors, [row.created_at for row in kept] if with_times else None)


def fulltext_ranking(
    connection: Connection, scope: Scope, terms: Sequence[str], limit: int, *, informative_only: bool = False
) -> list[int]:
    """Ids ranked by BM25 (SQLite FTS5) or ``ts_rank_cd`` (PostgreSQL), best first.

    ``informative_only`` (SQLite): leave out rows that matched only terms found in half the rows or more.
    FTS5 clamps such a term's IDF to ~0, so those rows score ~0 and their order is length noise; fused
    with the vector ranking they would only push better candidates down. Alone, they are still matches.
    """
    if not terms:
        return []
    table = scope.table
    if connection.dialect.name == "postgresql":
        vector: ColumnElement[Any] = literal_column(f"{table.name}.search_vector")
        words = func.to_tsquery("english", " | ".join(terms))
        actor = cast(postgres_actor_lexeme(scope.actor_id), TSQUERY)
        query = (
            select(table.c.id)
            .where(vector.op("@@")(words.op("&&")(actor)), *scope.conditions)
            .order_by(func.ts_rank_cd(vector, words).desc(), table.c.id)
        )
    else:
        for depth in (factor * limit for factor in FULLTEXT_FACTORS):
            ranked = sqlite_best_matches(connection, scope, terms, limit, depth, informative_only)
            if ranked is not None:
                return ranked
        fts, match, bm25 = _sqlite_bm25(table, scope.actor_id, terms)
        query = (
            select(table.c.id)
            .select_from(fts.join(table, table.c.id == fts.c.rowid))
            .where(match, *scope.conditions)
            .order_by(bm25, table.c.id)
        )
        if informative_only:
            query = query.where(bm25 < -UNINFORMATIVE_BM25)
    return list(connection.execute(query.limit(limit)).scalars())


def sqlite_best_matches(
    connection: Connection, scope: Scope, terms: Sequence[str], limit: int, depth: int, informative_only: bool
) -> list[int] | None:
    """The BM25 ranking from FTS5's ``depth`` best matches alone, or ``None`` when that cannot be proven complete.

    Joining every match to its row to test the scope costs as much as scoring it, and a heavy actor matches
    tens of thousands of rows. So FTS5 ranks by itself, and only its ``depth`` best rows go through the scoped
    SQL (actor, expiry, namespace). They come in the full query's (score, id) order, so when ``limit`` of them
    survive (or every match was read), no row left unread could rank among the first ``limit``.
    """
    table = scope.table
    fts, match, bm25 = _sqlite_bm25(table, scope.actor_id, terms)
    score = bm25.label("score")
    best = select(fts.c.rowid, score).where(match).order_by(score, fts.c.rowid).limit(depth).subquery()
    in_scope = and_(table.c.id == best.c.rowid, actor_for_ids(table, scope.actor_id), *scope.conditions[1:])
    rows = connection.execute(
        select(best.c.rowid, best.c.score, table.c.id.is_not(None).label("in_scope"))
        .select_from(best.outerjoin(table, in_scope))
        .order_by(best.c.score, best.c.rowid)
    ).all()
    floor = -UNINFORMATIVE_BM25 if informative_only else math.inf
    kept = [row.rowid for row in rows if row.in_scope and row.score < floor]
    read_all = len(rows) < depth or rows[-1].score >= floor
    return kept[:limit] if read_all or len(kept) >= limit else None


def _sqlite_bm25(
    table: Table, actor_id: str, terms: Sequence[str]
) -> tuple[TableClause, ColumnElement[Any], ColumnElement[Any]]:
    """``table``'s FTS5 table, its MATCH of the actor's rows holding any of ``terms``, and their BM25."""
    fts = sql_table(f"{table.name}_fts", sql_column("rowid"))
    match = literal_column(fts.name).op("MATCH")(sqlite_match(actor_id, terms))
    return fts, match, func.bm25(literal_column(fts.name), 1.0, 0.0)  # the actor column does not score


def rank(
    candidates: Candidates,
    *,
    query_vector: np.ndarray | None,
    fulltext_ids: Sequence[int] | None,
    top_k: int,
    min_similarity: float | None = None,
    recency_half_life: timedelta | None = None,
    now: datetime | None = None,
) -> list[Hit]:
    """Fuse the vector ranking (when ``query_vector``) and the full-text ranking (when given) by RRF."""
    if len(candidates.ids) == 0:
        return []
    position = {int(row_id): index for index, row_id in enumerate(candidates.ids)}
    similarities = candidates.vectors @ query_vector if query_vector is not None else None
    rankings: list[tuple[float, list[int]]] = []
    if similarities is not None:
        order = np.argsort(-similarities, kind="stable")[:RANK_DEPTH]
        rankings.append((1.0, [int(candidates.ids[i]) for i in order]))
    if fulltext_ids is not None:
        rankings.append((FULLTEXT_WEIGHT, [row_id for row_id in fulltext_ids if row_id in position]))
    scores: dict[int, float] = {}
    for weight, ranking in rankings:
        for place, row_id in enumerate(ranking):
            scores[row_id] = scores.get(row_id, 0.0) + weight / (RRF_K + place + 1)
    hits = []
    for row_id, score in scores.items():
        similarity = float(similarities[position[row_id]]) if similarities is not None else None
        if min_similarity is not None and (similarity is None or similarity < min_similarity):
            continue
        if recency_half_life is not None and now is not None and candidates.created_at is not None:
            age = max((now - candidates.created_at[position[row_id]]).total_seconds(), 0.0)
            score *= 0.5 + 0.5 * 0.5 ** (age / recency_half_life.total_seconds())
        hits.append(Hit(row_id, score, similarity))
    hits.sort(key=lambda hit: (-hit.score, -(hit.similarity or 0.0), hit.id))
    return hits[:top_k]
