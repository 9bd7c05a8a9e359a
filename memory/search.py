"""Hybrid retrieval: BM25 full-text and exact cosine over accel embeddings, fused by reciprocal rank.

Hybrid event search then reranks the best fused rows with their session context (see
:class:`SessionContext`). Both searches run inside one :class:`Scope`, a SQL condition that always starts
with the tenant and actor id, so no query ever reads another actor's rows (nor another tenant's actor of the
same id). Candidates are re-ranked by their exact cosine similarity to the query (:class:`Similarity`):
computed here from the stored float32 embeddings with one matrix product, or by PostgreSQL from the same values
in ``embedding_vec`` (see docs/memory.md for the limits).
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Literal, Protocol, TypeVar

import numpy as np
from sqlalchemy import (
    ColumnElement,
    FromClause,
    Row,
    Select,
    Table,
    and_,
    bindparam,
    cast,
    func,
    literal_column,
    or_,
    select,
)
from sqlalchemy import column as sql_column
from sqlalchemy import table as sql_table
from sqlalchemy.dialects.postgresql import TSQUERY
from sqlalchemy.engine import Connection
from sqlalchemy.sql.expression import Subquery

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
# An actor's full-text ranking scores at most its newest FULLTEXT_MATCH_CAP matches (MemoryStore(fulltext_match_cap=)):
# scoring costs per match, and a heavy actor matches tens of thousands of rows (see docs/memory.md, heavy actors).
FULLTEXT_MATCH_CAP = 2000
# FTS5's best matches read (as multiples of the ranking's length) before joining every match (see sqlite_best_matches).
FULLTEXT_FACTORS = (2, 16)
# Session context: a turn is often the evidence because of its neighbour (the question it answers, the line
# that names what "it" is), and a session that matches several times is likely about the topic. Each of the
# best CONTEXT_DEPTH fused events passes NEIGHBOUR_WEIGHT of its score to the previous and next event of its
# session; then each of those rows gains SESSION_WEIGHT times the sum of its session's SESSION_TOP best scores.
# Chosen on LoCoMo conv-26 and conv-44, checked on conv-49 and conv-50 (bench/memory_locomo.py).
CONTEXT_DEPTH = 50
NEIGHBOUR_WEIGHT = 0.4
SESSION_WEIGHT = 0.1
SESSION_TOP = 5
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
    """The rows of one table a query may touch; the first conditions are always the owner (tenant and actor) and
    expiry.

    The conditions compare with named bind parameters that have no value (``params`` holds the values, and every
    statement runs with them): a statement built for one query runs again for the next of the same ``shape``
    (see :func:`reused`), and one run without its values fails instead of reading another actor's rows.
    """

    table: Table
    actor_id: str
    now: datetime
    conditions: list[ColumnElement[bool]] = field(default_factory=list)
    params: dict[str, Any] = field(default_factory=dict)
    shape: list[str] = field(default_factory=list)
    tenant: str = field(kw_only=True)  # no default: a scope that forgot its tenant must not read the default one's

    def __post_init__(self) -> None:
        column = self.table.c
        self.conditions[:0] = [
            and_(column.tenant == _required(TENANT_PARAM), column.actor_id == _required(ACTOR_PARAM)),
            or_(column.expires_at.is_(None), column.expires_at > _required(NOW_PARAM)),
        ]
        self.params |= {TENANT_PARAM: self.tenant, ACTOR_PARAM: self.actor_id, NOW_PARAM: self.now}

    def narrow(self, name: str, condition: ColumnElement[bool], **params: Any) -> None:
        """Add ``condition`` (its bind parameters named ``params``' keys); ``name`` stands for it in ``shape``,
        so one name must always mean the same condition."""
        if name in self.shape or params.keys() & self.params.keys():
            raise ValueError(f"scope condition {name!r} or one of its parameters is already set")
        self.conditions.append(condition)
        self.shape.append(name)
        self.params |= params


TENANT_PARAM, ACTOR_PARAM, NOW_PARAM = "scope_tenant", "scope_actor_id", "scope_now"
_T = TypeVar("_T")
_REUSED: dict[tuple[Any, ...], Any] = {}


def _required(name: str) -> Any:
    return bindparam(name, required=True)


def reused(purpose: tuple[Any, ...], scope: Scope, build: Callable[[], _T]) -> _T:
    """``build()``'s statement for ``scope``, built once per purpose, table and shape and then run again with each
    query's parameters: building a SQLAlchemy statement costs more client CPU than running it (docs/memory.md).
    A scope whose conditions were not all added by :meth:`Scope.narrow` gets a new statement each time."""
    if len(scope.conditions) != 2 + len(scope.shape):
        return build()
    key = (*purpose, scope.table, *scope.shape)
    statement = _REUSED.get(key)
    if statement is None:
        statement = _REUSED[key] = build()
    return statement


class Similarity(Protocol):
    """How candidates' cosine similarity to the query is read: computed in this process from the stored float32
    embeddings (:class:`InProcess`), or by the database (``pgvector.InDatabase``)."""

    @property
    def query(self) -> np.ndarray:
        """The unit query vector."""
        ...

    @property
    def params(self) -> dict[str, Any]:
        """The bind parameters of :meth:`columns`."""
        ...

    def columns(self, table: Table) -> list[ColumnElement[Any]]:
        """What a candidate statement selects for each row."""
        ...

    def read(self, rows: Sequence[Row[Any]]) -> np.ndarray:
        """The similarities of ``rows``, in their order."""
        ...


@dataclass(frozen=True)
class InProcess:
    """Similarities to the unit ``query`` from the rows' float32 ``embedding``, with one matrix product here."""

    query: np.ndarray

    @property
    def params(self) -> dict[str, Any]:
        return {}

    def columns(self, table: Table) -> list[ColumnElement[Any]]:
        return [table.c.embedding]

    def read(self, rows: Sequence[Row[Any]]) -> np.ndarray:
        return scored(rows, self.query)


def scored(rows: Sequence[Row[Any]], query: np.ndarray) -> np.ndarray:
    """The similarities of ``rows``' float32 ``embedding`` to the unit ``query``, with one matrix product."""
    if not rows:
        return np.zeros(0, np.float32)
    blob = b"".join(bytes(row.embedding) for row in rows)
    return np.frombuffer(blob, dtype="<f4").reshape(len(rows), -1) @ query


@dataclass(frozen=True)
class Candidates:
    """The rows a query may return: ids, their cosine similarities to the query (``None`` without one), and
    creation times."""

    ids: np.ndarray
    similarities: np.ndarray | None
    created_at: list[datetime] | None

    def merged(self, other: Candidates) -> Candidates:
        """These rows followed by ``other``'s (loaded with the same options, none of them already here)."""
        times = None if self.created_at is None or other.created_at is None else self.created_at + other.created_at
        similarities = self.similarities
        if similarities is not None and other.similarities is not None:
            similarities = np.concatenate([similarities, other.similarities])
        return Candidates(np.concatenate([self.ids, other.ids]), similarities, times)

    def by_id(self) -> Candidates:
        """These rows in id order, as a lookup by primary key returns them (equal similarities rank by position)."""
        order = np.argsort(self.ids, kind="stable")
        times = None if self.created_at is None else [self.created_at[i] for i in order]
        similarities = None if self.similarities is None else self.similarities[order]
        return Candidates(self.ids[order], similarities, times)


@dataclass(frozen=True)
class Hit:
    id: int
    score: float
    similarity: float | None


def query_terms(query: str) -> list[str]:
    """Lower-cased word tokens minus stopwords; safe to quote into FTS5 or tsquery syntax (``\\w`` only)."""
    terms = [term for term in re.findall(r"\w+", query.lower()) if term not in STOPWORDS]
    return list(dict.fromkeys(terms))[:MAX_QUERY_TERMS]


def actor_for_ids(table: FromClause) -> ColumnElement[bool]:
    """The owner condition (``TENANT_PARAM``, ``ACTOR_PARAM``) of a lookup by primary keys, written so that the
    planner uses the keys.

    With a plain ``actor_id = ?`` SQLite prefers the actor index and walks every entry of the actor
    (all 100,000 of a heavy one); ``actor_id || ''`` is the same test, kept out of index selection.
    """
    return and_(
        table.c.tenant.concat("") == _required(TENANT_PARAM), table.c.actor_id.concat("") == _required(ACTOR_PARAM)
    )


def load_candidates(
    connection: Connection,
    scope: Scope,
    keep: Predicate | None,
    similarity: Similarity | None,
    *,
    with_times: bool = False,
    ids: Sequence[int] | None = None,
) -> Candidates:
    """Every in-scope row with an embedding whose metadata passes ``keep`` (only ``ids``, when given), with its
    ``similarity`` to the query (none without one: a full-text ranking reads only ids).

    Metadata and creation times are read only when needed: decoding them is most of a query's cost.
    """

    def build() -> Select[Any]:
        conditions = scope.conditions
        if ids is not None:
            conditions = [
                actor_for_ids(scope.table),
                *conditions[1:],
                scope.table.c.id.in_(bindparam("ids", expanding=True)),
            ]
        return candidate_query(scope, keep, with_times, similarity).where(*conditions)

    query = reused(("candidates", keep is not None, with_times, ids is None, type(similarity)), scope, build)
    params = scope.params | (similarity.params if similarity is not None else {})
    params = params if ids is None else params | {"ids": list(dict.fromkeys(ids))}
    return to_candidates(connection.execute(query, params).all(), keep, similarity, with_times=with_times)


def candidate_query(
    scope: Scope, keep: Predicate | None, with_times: bool, similarity: Similarity | None
) -> Select[Any]:
    """The columns a ranking reads (id, what ``similarity`` reads; creation time and metadata only when needed) of
    rows with an embedding; the caller adds the conditions that pick the rows."""
    column = scope.table.c
    columns = [column.id, *(similarity.columns(scope.table) if similarity is not None else [])]
    columns += [column.created_at] if with_times else []
    columns += [column.metadata] if keep else []
    return select(*columns).where(column.embedding.is_not(None))


def to_candidates(
    rows: Sequence[Row[Any]], keep: Predicate | None, similarity: Similarity | None, *, with_times: bool
) -> Candidates:
    """The rows of a :func:`candidate_query` whose metadata passes ``keep``."""
    kept = rows if keep is None else [row for row in rows if keep(row.metadata or {})]
    found = np.fromiter((row.id for row in kept), dtype=np.int64, count=len(kept))
    similarities = similarity.read(kept) if similarity is not None else None
    return Candidates(found, similarities, [row.created_at for row in kept] if with_times else None)


def fulltext_ranking(
    connection: Connection,
    scope: Scope,
    terms: Sequence[str],
    limit: int,
    *,
    informative_only: bool = False,
    match_cap: int | None = None,
) -> list[int]:
    """Ids ranked by BM25 (SQLite FTS5) or ``ts_rank`` (PostgreSQL), best first.

    ``informative_only`` (SQLite): leave out rows that matched only terms found in half the rows or more.
    FTS5 clamps such a term's IDF to ~0, so those rows score ~0 and their order is length noise; fused
    with the vector ranking they would only push better candidates down. Alone, they are still matches.
    ``match_cap``: score only the newest ``match_cap`` matches (by id), so that an actor with very many
    matching rows costs O(cap) scorings instead of one per match; ``None`` scores every match. An actor with
    at most ``match_cap`` matches gets exactly the uncapped ranking (see docs/memory.md, heavy actors).
    """
    if not terms:
        return []
    if connection.dialect.name == "postgresql":
        query = reused(("fulltext", match_cap is not None), scope, lambda: _postgres_ranking(scope, match_cap))
        words = {"words": " | ".join(terms), "actor_lexeme": postgres_actor_lexeme(scope.actor_id)}
        return list(connection.execute(query, scope.params | words | {"cap": match_cap, "limit": limit}).scalars())
    for depth in (factor * limit for factor in FULLTEXT_FACTORS):
        ranked = sqlite_best_matches(connection, scope, terms, limit, depth, informative_only, match_cap)
        if ranked is not None:
            return ranked
    scored = _sqlite_scored(scope, terms, match_cap, scoped=True)
    query = select(scored.c.rowid).order_by(scored.c.score, scored.c.rowid)
    if informative_only:
        query = query.where(scored.c.score < -UNINFORMATIVE_BM25)
    return list(connection.execute(query.limit(limit), scope.params).scalars())


def _postgres_ranking(scope: Scope, match_cap: int | None) -> Select[Any]:
    """``ts_rank`` order of the scope's rows matching ``:words`` (the newest ``:cap`` when capped), ``:limit`` ids;
    the actor's lexeme (``:actor_lexeme``) narrows the GIN index scan to its posting list.

    Words that PostgreSQL's parser drops (its stop words, characters it does not index) leave an empty tsquery, and
    ``'' && actor`` is ``actor``, which every row of the actor matches: such a query matches nothing instead."""
    table = scope.table
    vector: ColumnElement[Any] = literal_column(f"{table.name}.search_vector")
    words = func.to_tsquery("english", _required("words"))
    actor = cast(_required("actor_lexeme"), TSQUERY)
    matches = select(table.c.id, vector.label("search_vector")).where(
        func.numnode(words) > 0, vector.op("@@")(words.op("&&")(actor)), *scope.conditions
    )
    if match_cap is not None:
        matches = matches.order_by(table.c.id.desc()).limit(_required("cap"))
    found = matches.subquery()
    query = select(found.c.id).order_by(func.ts_rank(found.c.search_vector, words).desc(), found.c.id)
    return query.limit(_required("limit"))


def sqlite_best_matches(
    connection: Connection,
    scope: Scope,
    terms: Sequence[str],
    limit: int,
    depth: int,
    informative_only: bool,
    match_cap: int | None = None,
) -> list[int] | None:
    """The BM25 ranking from FTS5's ``depth`` best matches alone, or ``None`` when that cannot be proven complete.

    Joining every match to its row to test the scope costs as much as scoring it, and a heavy actor matches
    tens of thousands of rows. So FTS5 ranks by itself (the actor's newest ``match_cap`` matches when capped),
    and only its ``depth`` best rows go through the scoped SQL (actor, expiry, namespace). They come in the
    full query's (score, id) order, so when ``limit`` of them survive (or every match was read), no row left
    unread could rank among the first ``limit``. Capped, fewer than ``limit`` survivors mean ``None``: the
    scoped query then ranks the newest ``match_cap`` matches in scope.
    """
    table = scope.table
    scored = _sqlite_scored(scope, terms, match_cap, scoped=False)
    best = select(scored).order_by(scored.c.score, scored.c.rowid).limit(depth).subquery()
    in_scope = and_(table.c.id == best.c.rowid, actor_for_ids(table), *scope.conditions[1:])
    rows = connection.execute(
        select(best.c.rowid, best.c.score, table.c.id.is_not(None).label("in_scope"))
        .select_from(best.outerjoin(table, in_scope))
        .order_by(best.c.score, best.c.rowid),
        scope.params,
    ).all()
    floor = -UNINFORMATIVE_BM25 if informative_only else math.inf
    kept = [row.rowid for row in rows if row.in_scope and row.score < floor]
    # every match that could rank was read: all of them (fewer than depth, and than the cap), or down to the floor;
    # a capped window may hold too few rows in scope, and the scoped query then takes the newest ones in scope
    read_all = len(rows) < min(depth, match_cap or depth) or (match_cap is None and rows[-1].score >= floor)
    return kept[:limit] if read_all or len(kept) >= limit else None


def _sqlite_scored(scope: Scope, terms: Sequence[str], match_cap: int | None, *, scoped: bool) -> Subquery:
    """``(rowid, score)``: the BM25 of the actor's FTS5 matches of any of ``terms``, only those in ``scope``
    when ``scoped``, only the newest ``match_cap`` when capped (FTS5 walks rowids downwards and stops early;
    ``bm25()`` runs once per row produced)."""
    table = scope.table
    fts = sql_table(f"{table.name}_fts", sql_column("rowid"))
    match = literal_column(fts.name).op("MATCH")(sqlite_match(scope.actor_id, terms))
    score = func.bm25(literal_column(fts.name), 1.0, 0.0).label("score")  # the actor column does not score
    query = select(fts.c.rowid, score).where(match)
    if scoped:
        query = query.select_from(fts.join(table, table.c.id == fts.c.rowid)).where(*scope.conditions)
    if match_cap is not None:
        query = query.order_by(fts.c.rowid.desc()).limit(match_cap)
    return query.subquery()


def fuse(candidates: Candidates, fulltext_ids: Sequence[int] | None) -> dict[int, float]:
    """RRF scores of the vector ranking (when the candidates have similarities) and the full-text ranking (when
    given)."""
    rankings: list[tuple[float, list[int]]] = []
    similarities = candidates.similarities
    if similarities is not None:
        order = np.argsort(-similarities, kind="stable")[:RANK_DEPTH]
        rankings.append((1.0, [int(candidates.ids[i]) for i in order]))
    if fulltext_ids is not None:
        present = set(candidates.ids.tolist())
        rankings.append((FULLTEXT_WEIGHT, [row_id for row_id in fulltext_ids if row_id in present]))
    scores: dict[int, float] = {}
    for weight, ranking in rankings:
        for place, row_id in enumerate(ranking):
            scores[row_id] = scores.get(row_id, 0.0) + weight / (RRF_K + place + 1)
    return scores


def best_ids(scores: dict[int, float], count: int) -> list[int]:
    return sorted(scores, key=lambda row_id: (-scores[row_id], row_id))[:count]


@dataclass(frozen=True)
class SessionContext:
    """The best fused events with their in-scope session neighbours, and the session of every one of them."""

    neighbours: dict[int, tuple[int, ...]]
    sessions: dict[int, str]

    def rerank(self, scores: dict[int, float]) -> dict[int, float]:
        """``scores`` plus the neighbour and session shares described at ``CONTEXT_DEPTH``."""
        reranked = dict(scores)
        for row_id, adjacent in self.neighbours.items():
            for neighbour in adjacent:
                reranked[neighbour] = reranked.get(neighbour, 0.0) + NEIGHBOUR_WEIGHT * scores.get(row_id, 0.0)
        per_session: defaultdict[str, list[float]] = defaultdict(list)
        for row_id, session in self.sessions.items():
            per_session[session].append(reranked.get(row_id, 0.0))
        bonus = {session: SESSION_WEIGHT * sum(sorted(found)[-SESSION_TOP:]) for session, found in per_session.items()}
        for row_id, session in self.sessions.items():
            reranked[row_id] = reranked.get(row_id, 0.0) + bonus[session]
        return reranked


def session_context(
    connection: Connection,
    scope: Scope,
    candidates: Candidates,
    keep: Predicate | None,
    similarity: Similarity,
    *,
    fulltext_ids: Sequence[int],
    with_times: bool,
) -> tuple[Candidates, SessionContext]:
    """The session context of the best fused events, and ``candidates`` with the neighbours not yet in them.

    One statement finds each best row's previous and next event of its session (by id) within ``scope``,
    so a neighbour is always a row the query may return; new neighbours load like any other candidate.
    """
    if len(candidates.ids) == 0:
        return candidates, SessionContext({}, {})
    table = scope.table
    row = table.alias("best_row")

    def adjacent(before: bool) -> Any:
        edge = func.max(table.c.id) if before else func.min(table.c.id)
        bound = table.c.id < row.c.id if before else table.c.id > row.c.id
        return select(edge).where(*scope.conditions, table.c.session_id == row.c.session_id, bound).scalar_subquery()

    top = best_ids(fuse(candidates, fulltext_ids), CONTEXT_DEPTH)
    query = select(row.c.id, row.c.session_id, adjacent(True), adjacent(False)).where(
        actor_for_ids(row), row.c.id.in_(top)
    )
    found = connection.execute(query, scope.params).all()
    present = set(candidates.ids.tolist())
    missing = {int(n) for *_, before, after in found for n in (before, after) if n is not None and n not in present}
    if missing:
        candidates = candidates.merged(
            load_candidates(connection, scope, keep, similarity, with_times=with_times, ids=sorted(missing))
        )
    loaded = set(candidates.ids.tolist())
    neighbours = {
        row_id: tuple(int(n) for n in (before, after) if n is not None and n in loaded)
        for row_id, _, before, after in found
    }
    sessions = {row_id: session for row_id, session, *_ in found}
    sessions |= {n: sessions[row_id] for row_id, adjacent_ids in neighbours.items() for n in adjacent_ids}
    return candidates, SessionContext(neighbours, sessions)


def rank(
    candidates: Candidates,
    *,
    fulltext_ids: Sequence[int] | None,
    top_k: int,
    min_similarity: float | None = None,
    recency_half_life: timedelta | None = None,
    now: datetime | None = None,
    context: SessionContext | None = None,
) -> list[Hit]:
    """Fuse the vector ranking (when the candidates have similarities) and the full-text ranking (when given) by
    RRF, then rerank with the session ``context`` when given."""
    if len(candidates.ids) == 0:
        return []
    position = {int(row_id): index for index, row_id in enumerate(candidates.ids)}
    similarities = candidates.similarities
    scores = fuse(candidates, fulltext_ids)
    if context is not None:
        scores = context.rerank(scores)
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
