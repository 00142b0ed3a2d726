"""Memory items with the exact quotes that support them: listing (live, or with their
history, or as they stood at a time), lookup, ranked full-text candidates, vectors,
forgetting with tombstones, import; the evidence marks a transcript shows; and the
per-project memory switches. :func:`memory_parts` builds memory's parts over a store's
connections, once per store."""

from __future__ import annotations

import threading
import weakref
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from memoir.errors import MemoirError, NotFound
from memoir.memory.item_rows import ITEM_COLS, MemoryItemRow, evidence_fingerprint, standing_key
from memoir.memory.item_sql import (
    NEWEST,
    PAGE,
    ImportCounts,
    ItemWriter,
    add_tombstones_in,
    all_tombstoned,
    by_ids_plan,
    by_operation_plan,
    close_ended,
    items_in,
    limit_clause,
    predecessors_in,
    project_disabled_plan,
    put_vectors_plan,
    select_plan,
    tombstoned_in,
    tombstoned_plan,
    with_sources,
)
from memoir.memory.lane_store import KeyedItemsPart, MemoryPart
from memoir.store.db import Db, Part, Plan, Stmt, Tx, run_plan
from memoir.store.parts import CheckpointsPart, EventsPart, SessionsPart
from memoir.store.search_sql import ItemText
from memoir.store.search_text import ParsedQuery
from memoir.store.values import ItemFilter

if TYPE_CHECKING:
    import numpy as np

    from memoir.llm.port import UsageSink
    from memoir.store.port import Store

__all__ = ["MAX_ID_CHARS", "MIN_PREFIX", "MemoryItemsPart", "MemoryParts", "memory_parts"]

_VECTOR_MODELS = (  # the smallest embedder, then each next one: a seek each in its index
    "WITH RECURSIVE m(e) AS (SELECT min(embedder) FROM memory_vectors UNION ALL SELECT "
    "(SELECT min(embedder) FROM memory_vectors WHERE embedder > m.e) FROM m WHERE m.e IS "
    "NOT NULL) SELECT e FROM m WHERE e IS NOT NULL"
)

MIN_PREFIX = 4  # an item id prefix names an item from this many characters on
MAX_ID_CHARS = 64  # no item id is longer: a longer reference names nothing
VECTOR_CACHE = 50_000  # item vectors a process keeps per embedder (~75 MB at 384 dims)


class MemoryItemsPart(Part):
    def __init__(self, db: Db, text: ItemText, writer: ItemWriter) -> None:
        super().__init__(db)
        self.text = text
        self.writer = writer
        # an item's vector never changes (its content never does): a long-lived process
        # keeps the ones it read, at most VECTOR_CACHE per embedder, oldest read dropped
        self._vector_cache: dict[str, dict[str, np.ndarray]] = {}

    # reads -----------------------------------------------------------------------------
    def find(
        self,
        *,
        project: str | None = None,
        session_id: str | None = None,
        kind: str | None = None,
        limit: int | None = None,
        history: bool = False,
        owner: str | None = None,
    ) -> list[MemoryItemRow]:
        """Live items (with ``history``: superseded ones too), newest first, with their
        sources."""
        f = ItemFilter(
            owner=owner,
            project=project,
            session_id=session_id,
            kinds=(kind,) if kind else (),
            history=history,
        )
        return self.select(f, limit=limit)

    def select(
        self, f: ItemFilter, *, limit: int | None = None, standing: Sequence[str] = ()
    ) -> list[MemoryItemRow]:
        """Items within ``f``, newest first. With ``standing`` (kinds in priority order):
        the newest ``limit`` of each kind in that order until ``limit`` items are read,
        then by kind, the most quoted, the most recently said (what a context block
        takes: a budget holds a few dozen lines, so the newest of each kind suffice)."""
        if not standing:
            return self._select(f, NEWEST, limit)
        rows: list[MemoryItemRow] = []
        for kind in standing:
            left = None if limit is None else limit - len(rows)
            if left is not None and left <= 0:
                break
            rows += self._select(replace(f, kinds=(kind,)), NEWEST, left)
        return sorted(rows, key=lambda i: standing_key(i, standing))

    def _select(self, f: ItemFilter, order: str, limit: int | None) -> list[MemoryItemRow]:
        return self._db.snapshot(select_plan(f, order, limit))

    def by_ids(self, ids: Sequence[str]) -> dict[str, MemoryItemRow]:
        return self._db.snapshot(by_ids_plan(ids))

    def get(self, item_id: str, *, owner: str | None = None) -> MemoryItemRow | None:
        """The item ``item_id`` names: itself, or the one item it is a literal,
        case-sensitive prefix of (at least :data:`MIN_PREFIX` characters); only
        ``owner``'s when given. None when there is none; a ``MemoirError`` listing them
        when the prefix names several."""
        if not item_id or len(item_id) > MAX_ID_CHARS or "\x00" in item_id:
            return None  # no item has such an id (and the database never sees it)
        mine, params = (" AND owner = ?", [owner]) if owner is not None else ("", [])
        with self._db.ro() as tx:
            rows = tx.run(
                f"SELECT {ITEM_COLS} FROM memory_items WHERE id = ?{mine}", [item_id, *params]
            )
            if not rows and len(item_id) >= MIN_PREFIX:
                rows = tx.run(
                    f"SELECT {ITEM_COLS} FROM memory_items WHERE substr(id, 1, ?) = ?{mine} "
                    "ORDER BY id LIMIT 6",
                    [len(item_id), item_id, *params],
                )
            if len(rows) > 1:
                shown = ", ".join(str(r[0]) for r in rows[:5]) + (", …" if len(rows) > 5 else "")
                many = f"{len(rows)}+" if len(rows) > 5 else str(len(rows))
                raise MemoirError(
                    f"memory item prefix {item_id!r} matches {many} items ({shown}); "
                    "give more of the id"
                )
            found = with_sources(tx, rows)
        return found[0] if found else None

    def chain(self, item_id: str) -> list[MemoryItemRow]:
        """The item with every item it superseded (directly or through others) and every
        item that superseded it, oldest first."""
        ids = {item_id}
        frontier = [item_id]
        with self._db.ro() as tx:
            while frontier:
                marks = ", ".join("?" for _ in frontier)
                rows = tx.run(
                    f"SELECT id, superseded_by FROM memory_items WHERE superseded_by IN ({marks}) "
                    f"OR id IN ({marks})",
                    (*frontier, *frontier),
                )
                found = {str(r[0]) for r in rows} | {str(r[1]) for r in rows if r[1]}
                frontier = sorted(found - ids)
                ids |= found
        items = list(self.by_ids(sorted(ids)).values())
        items.sort(key=lambda i: (i.valid_from or i.created_at, i.created_at, i.id))
        return items

    def rank_text(self, query: ParsedQuery, f: ItemFilter, limit: int) -> list[str]:
        """Ids of the items matching the full-text query within ``f``, best first."""
        with self._db.ro() as tx:
            where, params = f.sql(tx)
            return self.text.rank(tx, query, where, params, limit, f.owner)

    def ids(self, f: ItemFilter, limit: int | None = None) -> list[str]:
        """Ids within ``f``, newest first."""
        page = limit_clause(limit)
        with self._db.ro() as tx:
            where, params = f.sql(tx)
            rows = tx.run(
                f"SELECT i.id FROM memory_items i WHERE {where} "
                f"ORDER BY i.created_at DESC, i.id{page}",
                params,
            )
        return [str(r[0]) for r in rows]

    def cited(self, session_id: str) -> dict[int, list[str]]:
        """Per event ordinal of the session: the live items quoting it."""
        rows = self._db.rows(
            "SELECT s.ordinal, s.item_id FROM memory_sources s JOIN memory_items i "
            "ON i.id = s.item_id WHERE s.session_id = ? AND i.superseded_by IS NULL "
            "ORDER BY s.ordinal, s.item_id",
            (session_id,),
        )
        out: dict[int, list[str]] = defaultdict(list)
        for ordinal, item_id in rows:
            if item_id not in out[int(ordinal)]:
                out[int(ordinal)].append(item_id)
        return dict(out)

    def by_operation(self, operation_id: str) -> list[MemoryItemRow]:
        """The items holding a quote the operation added (saved by it or merged into)."""
        return self._db.snapshot(by_operation_plan(operation_id))

    def evidence_exchanges(self, item_ids: Sequence[str]) -> dict[str, list[str]]:
        """Per item: the exchanges holding its quotes (in quote order, each once)."""
        out: dict[str, list[str]] = defaultdict(list)
        with self._db.ro() as tx:
            for start in range(0, len(item_ids), PAGE):
                chunk = list(item_ids[start : start + PAGE])
                marks = ", ".join("?" for _ in chunk)
                for item_id, exchange in tx.run(
                    "SELECT s.item_id, x.id FROM memory_sources s JOIN exchanges x ON "
                    "x.session_id = s.session_id AND x.first_ordinal = (SELECT "
                    "max(y.first_ordinal) FROM exchanges y WHERE y.session_id = s.session_id "
                    f"AND y.first_ordinal <= s.ordinal) WHERE s.item_id IN ({marks}) "
                    "ORDER BY s.item_id, s.n",
                    chunk,
                ):
                    if exchange not in out[item_id]:
                        out[item_id].append(str(exchange))
        return dict(out)

    def any_live(self) -> bool:
        return bool(self._db.rows("SELECT 1 FROM memory_items WHERE superseded_by IS NULL LIMIT 1"))

    def count(self) -> int:
        live = "SELECT count(*) FROM memory_items WHERE superseded_by IS NULL"
        return int(self._db.rows(live)[0][0])

    # vectors ---------------------------------------------------------------------------
    def vector_models(self) -> list[str]:
        """The embedders items have vectors of: a seek per embedder in its index (v24)."""
        return sorted(str(r[0]) for r in self._db.rows(_VECTOR_MODELS))

    def vectors(self, embedder: str, ids: Sequence[str]) -> dict[str, np.ndarray]:
        return self._db.snapshot(self.vectors_plan(embedder, ids))

    def vectors_plan(self, embedder: str, ids: Sequence[str]) -> Plan[dict[str, np.ndarray]]:
        """The vectors of ``ids`` by ``embedder`` that are stored (those read before, from
        this process's cache)."""
        import numpy as np

        cache = self._vector_cache.setdefault(embedder, {})
        out = {i: cache[i] for i in ids if i in cache}
        wanted = [i for i in ids if i not in out]
        for start in range(0, len(wanted), PAGE):
            chunk = list(wanted[start : start + PAGE])
            marks = ", ".join("?" for _ in chunk)
            rows = yield Stmt(
                f"SELECT item_id, vector FROM memory_vectors WHERE embedder = ? "
                f"AND item_id IN ({marks})",
                (embedder, *chunk),
            )
            for item_id, blob in rows:
                out[str(item_id)] = np.frombuffer(bytes(blob), dtype=np.float32)
        for i in wanted:
            if i in out:
                cache[i] = out[i]
        while len(cache) > VECTOR_CACHE:
            del cache[next(iter(cache))]
        return out

    def put_vectors(self, embedder: str, vectors: dict[str, np.ndarray]) -> None:
        self._db.apply(put_vectors_plan(embedder, vectors))

    # forgetting ------------------------------------------------------------------------
    def forget(self, item_id: str) -> list[MemoryItemRow]:
        """Delete the item with its history (see :meth:`forget_many`)."""
        item = self.get(item_id)
        if item is None:
            raise NotFound(f"no memory item {item_id!r}")
        return self.forget_many([item.id])

    def forget_many(self, item_ids: Iterable[str]) -> list[MemoryItemRow]:
        """Delete the items, the items they superseded (their history) and every quote
        and vector of them, and write a tombstone of each quote's evidence fingerprint
        (the same words of the same event are never extracted again). What was said stays
        in the transcript. Returns the items deleted."""
        with self._db.tx() as tx:
            return self.forget_in(tx, list(item_ids), datetime.now(UTC))

    def forget_in(self, tx: Tx, item_ids: Sequence[str], now: datetime) -> list[MemoryItemRow]:
        """:meth:`forget_many` inside ``tx`` (reading what ``tx`` already wrote)."""
        doomed: dict[str, MemoryItemRow] = {}
        for item_id in item_ids:
            if item_id in doomed:
                continue
            # it and what it superseded (not what superseded it: that stays current)
            wanted = [item_id, *predecessors_in(tx, item_id)]
            doomed.update({i.id: i for i in items_in(tx, wanted)})
        if not doomed:
            return []
        ids = list(doomed)
        for start in range(0, len(ids), PAGE):
            chunk = ids[start : start + PAGE]
            marks = ", ".join("?" for _ in chunk)
            for table, column in (
                ("memory_sources", "item_id"),
                ("memory_vectors", "item_id"),
                ("memory_items", "id"),
            ):
                tx.run(f"DELETE FROM {table} WHERE {column} IN ({marks})", chunk)
        self.text.drop(tx, ids)
        stones = [
            (item.owner, evidence_fingerprint(s.session_id, s.ordinal, s.quote))
            for item in doomed.values()
            for s in item.sources
        ]
        add_tombstones_in(tx, stones, now)
        return list(doomed.values())

    def tombstoned(self, owner: str, fingerprints: Iterable[str]) -> set[str]:
        """Which of ``fingerprints`` were forgotten by ``owner``."""
        return self._db.snapshot(tombstoned_plan(owner, fingerprints))

    def tombstones(self) -> int:
        return int(self._db.rows("SELECT count(*) FROM memory_tombstones")[0][0])

    def tombstone_rows(self, owner: str | None = None) -> list[tuple[str, str]]:
        """(owner, fingerprint) of every tombstone (of ``owner``'s only when given)."""
        where, params = ("WHERE owner = ? ", [owner]) if owner is not None else ("", [])
        rows = self._db.rows(
            f"SELECT owner, fingerprint FROM memory_tombstones {where}ORDER BY owner, fingerprint",
            params,
        )
        return [(str(r[0]), str(r[1])) for r in rows]

    def add_tombstones(self, stones: Sequence[tuple[str, str]]) -> None:
        with self._db.tx() as tx:
            add_tombstones_in(tx, stones, datetime.now(UTC))

    # import --------------------------------------------------------------------------
    def save(self, items: Sequence[MemoryItemRow]) -> list[str]:
        """Write items outside an extraction: each saved, merged or chained as a
        settlement would; the ids holding them."""
        with self._db.tx() as tx:
            return [run_plan(tx, self.writer.save(item)) for item in items]

    def import_all(
        self, items: Sequence[MemoryItemRow], stones: Sequence[tuple[str, str]]
    ) -> ImportCounts:
        """An export read into this store in ONE transaction (all or nothing): the
        tombstones written; the items here whose every quote they name forgotten; each
        item's quotes forgotten here left out (an item with none left is not written);
        the rest saved (new, merged into the live item saying the same, or already here);
        then an imported item's end (``superseded_by``, ``valid_until``) closes the live
        copy of it here. A ``superseded_by`` naming no item of the export nor of this
        store is a ``MemoirError`` (and nothing is written)."""
        now = datetime.now(UTC)
        counts = ImportCounts(tombstones=len(stones))
        with self._db.tx() as tx:
            add_tombstones_in(tx, stones, now)
            owners = sorted({o for o, _ in stones})
            if owners:  # an item here whose every quote the export forgot goes here too
                stale = [
                    i.id for i in self._owned_in(tx, owners) if i.sources and all_tombstoned(tx, i)
                ]
                counts.forgot_here = len(self.forget_in(tx, stale, now))
            ids = {r.id for r in items}
            held: dict[str, str] = {}
            for row in items:
                missing = row.superseded_by and row.superseded_by not in ids
                if missing and not tx.run(
                    "SELECT 1 FROM memory_items WHERE id = ?", (row.superseded_by,)
                ):
                    raise MemoirError(
                        f"item {row.id} is superseded by {row.superseded_by}, which is "
                        "neither in the export nor here"
                    )
                prints = {
                    evidence_fingerprint(s.session_id, s.ordinal, s.quote): s for s in row.sources
                }
                gone = tombstoned_in(tx, row.owner, prints)
                if len(gone) == len(prints):
                    counts.forgotten += 1
                    continue
                row = replace(row, sources=tuple(s for f, s in prints.items() if f not in gone))
                held[row.id] = self._import_one(tx, row, counts)
            for row in items:  # what the export says ended, ends here too
                if row.id in held and (row.superseded_by or row.valid_until):
                    close_ended(tx, held[row.id], row, held)
        return counts

    def _import_one(self, tx: Tx, row: MemoryItemRow, counts: ImportCounts) -> str:
        if tx.run("SELECT 1 FROM memory_items WHERE id = ?", (row.id,)):
            counts.already += 1
            return row.id
        scope_key = row.scope_key or (row.project if row.scope == "project" else "")
        twin = tx.run(
            "SELECT i.id, (SELECT count(*) FROM memory_sources s WHERE s.item_id = i.id) "
            "FROM memory_items i WHERE i.owner = ? AND i.scope_key = ? AND i.normalized = ? "
            "AND i.superseded_by IS NULL",
            (row.owner, scope_key, row.normalized),
        )
        got = run_plan(tx, self.writer.save(row))
        if got == row.id:
            counts.items += 1
            return got
        quotes = tx.run("SELECT count(*) FROM memory_sources WHERE item_id = ?", (got,))
        if twin and str(twin[0][0]) == got and int(twin[0][1]) == int(quotes[0][0]):
            counts.already += 1  # merged before: nothing it lacked
        else:
            counts.merged += 1
        return got

    def _owned_in(self, tx: Tx, owners: Sequence[str]) -> list[MemoryItemRow]:
        marks = ", ".join("?" for _ in owners)
        rows = tx.run(f"SELECT id FROM memory_items WHERE owner IN ({marks})", list(owners))
        return items_in(tx, [str(r[0]) for r in rows])

    # switches --------------------------------------------------------------------------
    def project_disabled(self, project: str) -> bool:
        return self._db.query(project_disabled_plan(project))

    def switch_project(self, project: str, *, disabled: bool) -> None:
        with self._db.tx() as tx:
            tx.run(
                "INSERT INTO memory_switches (project, disabled) VALUES (?, ?) ON CONFLICT "
                "(project) DO UPDATE SET disabled = excluded.disabled",
                (project, disabled),
            )

    def disabled_projects(self) -> list[str]:
        rows = self._db.rows("SELECT project FROM memory_switches WHERE disabled ORDER BY project")
        return [str(r[0]) for r in rows]


# memory's parts over a store ---------------------------------------------------------
@dataclass(frozen=True, slots=True)
class MemoryParts:
    """What memory reads and writes: the store's parts it reads (sessions, events,
    checkpoints) and its own, built over the store's connections (the lane, the items,
    the keyed items)."""

    sessions: SessionsPart
    events: EventsPart
    checkpoints: CheckpointsPart
    memory: MemoryPart
    items: MemoryItemsPart
    keyed: KeyedItemsPart
    db: Db  # the connections memory's plans run on
    usage: UsageSink  # the store's usage ledger


_PARTS: weakref.WeakKeyDictionary[Store, MemoryParts] = weakref.WeakKeyDictionary()
_PARTS_LOCK = threading.Lock()


def memory_parts(store: Store) -> MemoryParts:
    """Memory's parts over ``store``: built once per store (the items keep the vectors
    they read), the same for every caller."""
    with _PARTS_LOCK:
        found = _PARTS.get(store)
        if found is None:
            writer = ItemWriter(store.item_text, store.dialect.row_lock)
            found = _PARTS[store] = MemoryParts(
                store.sessions,
                store.events,
                store.checkpoints,
                MemoryPart(store.db, writer),
                MemoryItemsPart(store.db, store.item_text, writer),
                KeyedItemsPart(store.db, postgres=store.backend == "postgres"),
                store.db,
                store.usage,
            )
        return found
