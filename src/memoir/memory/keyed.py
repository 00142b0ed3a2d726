"""Keyed memories: JSON values a program keeps for one user under a namespace (a path of
labels, ``("users", "alice", "prefs")``) and a key — what LangGraph's ``BaseStore``
holds (:mod:`memoir.integrations.langgraph`).

A value round-trips exactly (any JSON object: nested values, unicode, NUL, floats). A
put names the text a query search ranks the item on; search with a query ranks that text
as recall ranks memory items (the store's full-text index, any content word of the query
sufficing; with the home's embedder, the cosine of the query to the items' vectors too;
ranks fused with :func:`memoir.fusion.rrf`, the fused score kept). A query
ranks and never hides, as in LangGraph's stores: the items that do not match follow the
ones that do (score 0), most recently changed first — as without a query.
Filters (:func:`matches`) and namespace conditions (:func:`namespace_matches`) are pure
decisions, applied here after the SQL narrowed the items to one owner and one prefix.

Each :class:`KeyedMemories` acts for one owner: another owner's items are invisible to
every read and untouched by every write.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

import numpy as np

from memoir.errors import UsageError
from memoir.fusion import rrf
from memoir.memory.lane_store import SEP, KeyedItemsPart, KeyedRow
from memoir.memory.recall import EMBED_PER_CALL, VECTOR_FLOOR, VECTOR_POOL, ItemEmbedder
from memoir.store.search_text import MAX_QUERY_CHARS, any_content_word

__all__ = [
    "MAX_SEARCH",
    "OPERATORS",
    "KeyedItem",
    "KeyedMemories",
    "decode_namespace",
    "encode_namespace",
    "matches",
    "namespace_matches",
]

MAX_SEARCH = 1000  # the most items one search returns
_PAGE = 500  # rows read at a time while a filter is applied
_TEXT_POOL = 200  # text matches read before filtering, at least
_ID_SEP = "\x00"  # joins a stored namespace and a key into one ranked id (neither holds it)
OPERATORS = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte")


@dataclass(frozen=True, slots=True)
class KeyedItem:
    """One stored value; ``score`` is set when it answers a query (higher is better)."""

    namespace: tuple[str, ...]
    key: str
    value: dict[str, Any]
    created_at: datetime
    updated_at: datetime
    score: float | None = None


def encode_namespace(namespace: Sequence[str], *, allow_empty: bool = False) -> str:
    """The stored form of a namespace: its labels joined by ``.``. A label is a non-empty
    string without ``.`` (LangGraph's own rule), so the joined text names one namespace."""
    if not namespace and not allow_empty:
        raise UsageError("a namespace has at least one label")
    for label in namespace:
        if not isinstance(label, str) or not label or SEP in label or "\x00" in label:
            raise UsageError(f"namespace label {label!r}: a non-empty string without '.' or NUL")
    return SEP.join(namespace)


def decode_namespace(stored: str) -> tuple[str, ...]:
    return tuple(stored.split(SEP)) if stored else ()


def _id(stored_namespace: str, key: str) -> str:
    return f"{stored_namespace}{_ID_SEP}{key}"


def _dump(value: Mapping[str, Any]) -> str:
    # ASCII escapes: NUL and lone surrogates survive every backend; NaN/Infinity kept
    try:
        return json.dumps(dict(value), ensure_ascii=True, separators=(",", ":"))
    except (TypeError, ValueError) as exc:
        raise UsageError(f"a stored value must be JSON: {exc}") from exc


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _operator(value: Any, op: str, wanted: Any) -> bool:
    if op == "$eq":
        return bool(value == wanted)
    if op == "$ne":
        return bool(value != wanted)
    if op not in OPERATORS:
        raise UsageError(f"unknown filter operator {op!r}; operators: {', '.join(OPERATORS)}")
    a, b = _number(value), _number(wanted)
    if a is None or b is None:  # order is defined between numbers, or between strings
        if not (isinstance(value, str) and isinstance(wanted, str)):
            return False
        a_s, b_s = value, wanted
        return {"$gt": a_s > b_s, "$gte": a_s >= b_s, "$lt": a_s < b_s, "$lte": a_s <= b_s}[op]
    return {"$gt": a > b, "$gte": a >= b, "$lt": a < b, "$lte": a <= b}[op]


def _same(value: Any, wanted: Any) -> bool:
    """``wanted`` holds of ``value``: operators, a nested object's fields, a list's items
    in order, else equality (JSON's: 1 == 1.0, but True is not 1)."""
    if isinstance(wanted, Mapping):
        if any(isinstance(k, str) and k.startswith("$") for k in wanted):
            return all(_operator(value, k, v) for k, v in wanted.items())
        return isinstance(value, Mapping) and all(
            _same(value.get(k, _MISSING), v) for k, v in wanted.items()
        )
    if isinstance(wanted, list | tuple):
        return (
            isinstance(value, list | tuple)
            and len(value) == len(wanted)
            and all(_same(a, b) for a, b in zip(value, wanted, strict=True))
        )
    if isinstance(value, bool) != isinstance(wanted, bool):
        return False
    return bool(value == wanted)


_MISSING: Any = object()


def _field(value: Mapping[str, Any], path: str) -> Any:
    """The field a filter names: the key itself, else a dotted path into nested objects."""
    if path in value:
        return value[path]
    here: Any = value
    for part in path.split("."):
        if not isinstance(here, Mapping) or part not in here:
            return _MISSING
        here = here[part]
    return here


def matches(value: Mapping[str, Any], where: Mapping[str, Any] | None) -> bool:
    """Whether ``value`` passes the filter ``where`` (every field's condition holds)."""
    if not where:
        return True
    return all(_same(_field(value, path), wanted) for path, wanted in where.items())


def namespace_matches(namespace: tuple[str, ...], kind: str, path: tuple[str, ...]) -> bool:
    """Whether ``namespace`` starts (``kind`` "prefix") or ends ("suffix") with ``path``,
    a ``*`` label matching any one label."""
    if kind not in ("prefix", "suffix"):
        raise UsageError(f"a namespace condition is 'prefix' or 'suffix', not {kind!r}")
    if len(namespace) < len(path):
        return False
    window = namespace[: len(path)] if kind == "prefix" else namespace[len(namespace) - len(path) :]
    return all(p == "*" or p == n for n, p in zip(window, path, strict=True))


def _whole(name: str, value: int, low: int, high: int | None = None) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise UsageError(f"{name} must be a whole number of at least {low}, got {value!r}")
    if high is not None and value > high:
        raise UsageError(f"{name} must be at most {high}, got {value}")


class KeyedMemories:
    """The keyed items of one owner (see the module)."""

    def __init__(
        self,
        part: KeyedItemsPart,
        owner: str,
        *,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        embedder: Callable[[], ItemEmbedder | None] = lambda: None,
        keep_vectors: bool = True,
    ) -> None:
        self._part = part
        self.owner = owner
        self._clock = clock
        self._embedder = embedder  # asked on a query search only: a model loads when used
        self._keep_vectors = keep_vectors  # False on a read-only store: made, used, dropped

    def _item(self, row: KeyedRow, score: float | None = None) -> KeyedItem:
        return KeyedItem(
            decode_namespace(row.namespace),
            row.key,
            json.loads(row.value),
            row.created_at,
            row.updated_at,
            score,
        )

    def get(self, namespace: Sequence[str], key: str) -> KeyedItem | None:
        row = self._part.get(self.owner, encode_namespace(namespace), key)
        return None if row is None else self._item(row)

    def put(
        self, namespace: Sequence[str], key: str, value: Mapping[str, Any], *, text: str = ""
    ) -> None:
        """Store ``value`` at ``namespace``/``key`` (replacing what was there; its
        ``created_at`` kept); ``text``: what a query search ranks it on ("" : none)."""
        if not isinstance(key, str) or "\x00" in key:
            raise UsageError(f"a key is a string without NUL, not {key!r}")
        if not isinstance(value, Mapping):
            raise UsageError(f"a stored value is a JSON object, not {type(value).__name__}")
        ns = encode_namespace(namespace)
        self._part.put(self.owner, ns, key, _dump(value), text, self._clock())

    def delete(self, namespace: Sequence[str], key: str) -> bool:
        """Remove the item; whether there was one."""
        return self._part.delete(self.owner, encode_namespace(namespace), key)

    def search(
        self,
        prefix: Sequence[str] = (),
        *,
        query: str | None = None,
        where: Mapping[str, Any] | None = None,
        limit: int = 10,
        offset: int = 0,
    ) -> list[KeyedItem]:
        """Items under ``prefix`` passing ``where``: with ``query``, the ones it matches
        first, best first, scored, then the rest (score 0); else the most recently changed
        first (score None)."""
        _whole("limit", limit, 0, MAX_SEARCH)
        _whole("offset", offset, 0)
        ns = encode_namespace(prefix, allow_empty=True)
        if limit == 0:
            return []
        if query is not None and query.strip():
            return self._ranked(ns, query[:MAX_QUERY_CHARS], where, limit, offset)
        if not where:
            rows = self._part.newest(self.owner, ns, limit=limit, offset=offset)
            return [self._item(r) for r in rows]
        return self._filtered(ns, where, offset + limit)[offset:]

    def _ranked(
        self, ns: str, query: str, where: Mapping[str, Any] | None, limit: int, offset: int
    ) -> list[KeyedItem]:
        want = offset + limit
        pool = max(_TEXT_POOL, want * 5)
        text = self._part.rank_text(self.owner, ns, any_content_word(query), pool)
        rows = {_id(r.namespace, r.key): r for r in text}
        rankings = [list(rows)]
        embedder = self._embedder()
        if embedder is not None:
            rankings.append(self._vector_ranking(ns, query, embedder, pool))
        out: list[KeyedItem] = []
        fused = rrf(rankings)
        missing = [i for i, _ in fused if i not in rows]  # found by meaning alone
        for stored_ns, key in (i.split(_ID_SEP, 1) for i in missing):
            found = self._part.get(self.owner, stored_ns, key)
            if found is not None:
                rows[_id(stored_ns, key)] = found
        for joined, score in fused:
            if joined in rows:
                item = self._item(rows[joined], score)
                if matches(item.value, where):
                    out.append(item)
        if len(out) < want:  # a query ranks, it never hides: the rest follow, unscored
            seen = {(i.namespace, i.key) for i in out}
            rest = self._filtered(ns, where, want + len(seen))
            out += [replace(i, score=0.0) for i in rest if (i.namespace, i.key) not in seen]
        return out[offset:want]

    def _vector_ranking(self, ns: str, query: str, embedder: ItemEmbedder, pool: int) -> list[str]:
        """Items under ``ns`` by the cosine of their text to the query (at least
        :data:`~memoir.memory.recall.VECTOR_FLOOR`), over the newest
        :data:`~memoir.memory.recall.VECTOR_POOL`; items lacking a vector by this embedder
        get one, at most :data:`~memoir.memory.recall.EMBED_PER_CALL` per search."""
        rows = self._part.vector_candidates(self.owner, ns, VECTOR_POOL)
        stale = [r for r in rows if r.vector is None or r.vector_model != embedder.name]
        fresh: dict[str, np.ndarray] = {}
        if stale:
            todo = stale[:EMBED_PER_CALL]
            made = np.asarray(embedder.embed([r.body for r in todo]), dtype=np.float32)
            if self._keep_vectors:
                kept = [(r, made[n].tobytes()) for n, r in enumerate(todo)]
                self._part.put_vectors(self.owner, embedder.name, kept)
            fresh = {_id(r.namespace, r.key): made[n] for n, r in enumerate(todo)}
        ids: list[str] = []
        vectors: list[np.ndarray] = []
        for r in rows:
            i = _id(r.namespace, r.key)
            if i in fresh:
                vectors.append(fresh[i])
            elif r.vector is not None and r.vector_model == embedder.name:
                vectors.append(np.frombuffer(r.vector, dtype=np.float32))
            else:
                continue
            ids.append(i)
        if not ids:
            return []
        q = np.asarray(embedder.embed_query([query]), dtype=np.float32).reshape(-1)
        scores = np.stack(vectors) @ q
        order = np.lexsort((np.arange(len(ids)), -scores))
        return [ids[int(n)] for n in order[:pool] if scores[n] >= VECTOR_FLOOR]

    def _filtered(self, ns: str, where: Mapping[str, Any] | None, want: int) -> list[KeyedItem]:
        """The first ``want`` items under ``ns`` passing ``where``, newest change first."""
        if not where:
            return [self._item(r) for r in self._part.newest(self.owner, ns, limit=want, offset=0)]
        found: list[KeyedItem] = []
        start = 0
        while len(found) < want:
            rows = self._part.newest(self.owner, ns, limit=_PAGE, offset=start)
            found += [i for i in map(self._item, rows) if matches(i.value, where)]
            if len(rows) < _PAGE:
                break
            start += _PAGE
        return found[:want]

    def namespaces(
        self,
        *,
        conditions: Sequence[tuple[str, Sequence[str]]] = (),
        max_depth: int | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[tuple[str, ...]]:
        """The namespaces holding items, sorted: those meeting every ``(kind, path)``
        condition (:func:`namespace_matches`), cut to ``max_depth`` labels (deduplicated)."""
        _whole("limit", limit, 0)
        _whole("offset", offset, 0)
        if max_depth is not None:
            _whole("max_depth", max_depth, 1)
        found = [decode_namespace(n) for n in self._part.namespaces(self.owner)]
        kept = [
            n
            for n in found
            if all(namespace_matches(n, kind, tuple(path)) for kind, path in conditions)
        ]
        if max_depth is not None:
            kept = list({n[:max_depth]: None for n in kept})
        return sorted(kept)[offset : offset + limit]
