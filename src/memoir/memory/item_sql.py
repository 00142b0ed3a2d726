"""The memory items' SQL: how an item is written in a settlement, the reads a run makes,
and the reads and writes that forgetting and import share. Most of it is written as plans
(:data:`memoir.store.db.Plan`), run by the lane's settlement, the runner or the items
part. Ranking items by their words is each backend's (``ItemText``, in
:mod:`memoir.store.search_sql` and the two search modules).

Writes: an item is saved new, merged into the live item it duplicates, or saved as the
successor of the item it supersedes. Two live items of one owner and scope never share
their normalized content: a partial unique index says so (migration v13), so the loser of
a race between two extractions of one fact finds the winner's row and merges into it. A
merge into an item worded differently (same key set, or a near-duplicate by meaning) is
the engine's decision, handed in as ``merge_into``. On PostgreSQL the rows read to merge
into or to supersede are locked (``FOR UPDATE``); SQLite's write transaction already runs
alone.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from memoir.memory.item_rows import (
    ITEM_COLS,
    MemoryItemRow,
    MemorySourceRow,
    column_marks,
    evidence_fingerprint,
    item_from_row,
    key_sig,
)
from memoir.store.codec import dumps, from_iso
from memoir.store.db import Plan, Stmt, Tx, run_plan
from memoir.store.search_sql import ItemText
from memoir.store.values import ItemFilter

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "MAX_ROWS",
    "NEWEST",
    "PAGE",
    "ImportCounts",
    "ItemWriter",
    "add_tombstones_in",
    "all_tombstoned",
    "by_ids_plan",
    "by_operation_plan",
    "close_ended",
    "items_in",
    "limit_clause",
    "predecessors_in",
    "project_disabled_plan",
    "put_vectors_plan",
    "select_plan",
    "tombstoned_in",
    "tombstoned_plan",
    "with_sources",
    "with_sources_plan",
]


def _earliest(*values: datetime | None) -> datetime | None:
    return min((v for v in values if v is not None), default=None)


def _latest(*values: datetime | None) -> datetime | None:
    return max((v for v in values if v is not None), default=None)


class ItemWriter:
    def __init__(self, text: ItemText, row_lock: str) -> None:
        self.text = text
        self.lock = row_lock

    def save(self, item: MemoryItemRow) -> Plan[str]:
        """Write ``item`` (see the module), in a write transaction: the id of the live item
        now holding it."""
        if (yield Stmt("SELECT id FROM memory_items WHERE id = ?", (item.id,))):
            return item.id  # a replay writes nothing twice
        item = replace(
            item,
            key_sig=item.key_sig or key_sig(item.keys),
            scope_key=item.scope_key or (item.project if item.scope == "project" else ""),
        )
        head = (yield from self._head(item.supersedes)) if item.supersedes else None
        target = yield from self._merge_target(item)
        if target is not None:
            yield from self._merge(target, item)
            return target.id
        valid_from = item.valid_from or item.first_observed_at or item.created_at
        if head is not None and head.valid_from is not None and valid_from < head.valid_from:
            item = replace(item, superseded_by=head.id, valid_until=head.valid_from)  # older news
            head = None
        if head is not None:
            yield Stmt(
                "UPDATE memory_items SET superseded_by = ?, valid_until = ? WHERE id = ?",
                (item.id, valid_from, head.id),
            )
        if not (yield from self._insert(replace(item, valid_from=valid_from))):
            target = yield from self._match(item)  # a concurrent writer saved it first
            if target is None:
                return item.id  # the same operation, replayed concurrently
            yield from self._merge(target, item)
            if head is not None:
                yield Stmt(
                    "UPDATE memory_items SET superseded_by = ? WHERE id = ?", (target.id, head.id)
                )
            return target.id
        return item.id

    # reads ---------------------------------------------------------------------------
    def _row(self, item_id: str) -> Plan[MemoryItemRow | None]:
        sql = f"SELECT {ITEM_COLS} FROM memory_items WHERE id = ?{self.lock}"
        rows = yield Stmt(sql, (item_id,))
        return item_from_row(rows[0]) if rows else None

    def _head(self, item_id: str) -> Plan[MemoryItemRow | None]:
        """The live end of the chain ``item_id`` is on (locked), or None when it is gone."""
        seen: set[str] = set()
        row = yield from self._row(item_id)
        while row is not None and row.superseded_by is not None and row.id not in seen:
            seen.add(row.id)
            row = yield from self._row(row.superseded_by)
        return row if row is not None and row.live else None

    def _merge_target(self, item: MemoryItemRow) -> Plan[MemoryItemRow | None]:
        if item.merge_into:
            near = yield from self._row(item.merge_into)
            if (
                near is not None
                and near.live
                and (near.owner, near.scope_key) == (item.owner, item.scope_key)
            ):
                return near
        return (yield from self._match(item))

    def _match(self, item: MemoryItemRow) -> Plan[MemoryItemRow | None]:
        """The live item of the same owner and scope with the same normalized content."""
        rows = yield Stmt(
            f"SELECT {ITEM_COLS} FROM memory_items WHERE owner = ? AND scope_key = ? AND "
            f"normalized = ? AND superseded_by IS NULL{self.lock}",
            (item.owner, item.scope_key, item.normalized),
        )
        return item_from_row(rows[0]) if rows else None

    # writes --------------------------------------------------------------------------
    def _insert(self, item: MemoryItemRow) -> Plan[bool]:
        added = yield Stmt(
            f"INSERT INTO memory_items ({ITEM_COLS}) VALUES ({column_marks(ITEM_COLS)}) "
            "ON CONFLICT DO NOTHING RETURNING id",
            (
                item.id,
                item.session_id,
                item.project,
                item.scope,
                item.kind,
                item.content,
                item.normalized,
                dumps(list(item.keys)),
                dumps(item.temporal),
                item.operation_id,
                item.created_at,
                item.observed_at,
                item.superseded_by,
                item.forgotten_at,
                item.owner,
                item.scope_key,
                item.key_sig,
                item.first_observed_at,
                item.valid_from,
                item.valid_until,
            ),
        )
        if not added:
            return False
        yield Stmt(
            "INSERT INTO memory_sources (item_id, n, session_id, ordinal, quote, operation_id) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            [
                (item.id, n, q.session_id, q.ordinal, q.quote, q.operation_id or item.operation_id)
                for n, q in enumerate(item.sources)
            ],
            many=True,
        )
        yield from self.text.index(item.id, item.content, item.keys)
        return True

    def _merge(self, target: MemoryItemRow, item: MemoryItemRow) -> Plan[None]:
        """``item``'s quotes appended to ``target`` (each once) and its observed range and
        validity widened to cover both."""
        quoted = yield Stmt(
            "SELECT session_id, ordinal, quote FROM memory_sources WHERE item_id = ?",
            (target.id,),
        )
        have = {(str(s), int(o), str(q)) for s, o, q in quoted}
        last = yield Stmt(
            "SELECT COALESCE(max(n), -1) FROM memory_sources WHERE item_id = ?", (target.id,)
        )
        n = int(last[0][0])
        new = []
        for q in item.sources:
            if (q.session_id, q.ordinal, q.quote) not in have:
                have.add((q.session_id, q.ordinal, q.quote))
                n += 1
                op = q.operation_id or item.operation_id
                new.append((target.id, n, q.session_id, q.ordinal, q.quote, op))
        yield Stmt(
            "INSERT INTO memory_sources (item_id, n, session_id, ordinal, quote, operation_id) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            new,
            many=True,
        )
        first = _earliest(target.first_observed_at, item.first_observed_at)
        yield Stmt(
            "UPDATE memory_items SET observed_at = ?, first_observed_at = ?, valid_from = ? "
            "WHERE id = ?",
            (
                _latest(target.observed_at, item.observed_at),
                first,
                _earliest(target.valid_from, item.valid_from, first),
                target.id,
            ),
        )


PAGE = 500
MAX_ROWS = 2**62  # a limit from here on is no limit


@dataclass(slots=True)
class ImportCounts:
    """What :meth:`MemoryItemsPart.import_all` did with an export's lines."""

    items: int = 0  # saved as new items
    merged: int = 0  # joined a live item saying the same (quotes it lacked appended)
    already: int = 0  # here already (the same id, or merged before with every quote)
    forgotten: int = 0  # every quote forgotten here (left out)
    tombstones: int = 0
    forgot_here: int = 0  # items here the export's tombstones forgot


def add_tombstones_in(tx: Tx, stones: Sequence[tuple[str, str]], now: datetime) -> None:
    tx.many(
        "INSERT INTO memory_tombstones (owner, fingerprint, created_at) VALUES (?, ?, ?) "
        "ON CONFLICT (owner, fingerprint) DO NOTHING",
        [(o, f, tx.time(now)) for o, f in stones],
    )


def tombstoned_in(tx: Tx, owner: str, fingerprints: Iterable[str]) -> set[str]:
    return run_plan(tx, tombstoned_plan(owner, fingerprints))


def tombstoned_plan(owner: str, fingerprints: Iterable[str]) -> Plan[set[str]]:
    """Which of ``fingerprints`` were forgotten by ``owner``."""
    wanted = sorted(set(fingerprints))
    out: set[str] = set()
    for start in range(0, len(wanted), PAGE):
        chunk = wanted[start : start + PAGE]
        marks = ", ".join("?" for _ in chunk)
        rows = yield Stmt(
            f"SELECT fingerprint FROM memory_tombstones WHERE owner = ? "
            f"AND fingerprint IN ({marks})",
            (owner, *chunk),
        )
        out |= {str(r[0]) for r in rows}
    return out


def all_tombstoned(tx: Tx, item: MemoryItemRow) -> bool:
    prints = {evidence_fingerprint(s.session_id, s.ordinal, s.quote) for s in item.sources}
    return tombstoned_in(tx, item.owner, prints) == prints


def items_in(tx: Tx, ids: Sequence[str]) -> list[MemoryItemRow]:
    """The items of ``ids`` with their sources, as ``tx`` sees them."""
    out: list[MemoryItemRow] = []
    for start in range(0, len(ids), PAGE):
        chunk = list(ids[start : start + PAGE])
        marks = ", ".join("?" for _ in chunk)
        out += with_sources(
            tx, tx.run(f"SELECT {ITEM_COLS} FROM memory_items WHERE id IN ({marks})", chunk)
        )
    return out


def with_sources(tx: Tx, rows: list[Any]) -> list[MemoryItemRow]:
    """The item rows ``rows`` (``ITEM_COLS``) with their sources."""
    return run_plan(tx, with_sources_plan(rows))


def with_sources_plan(rows: list[Any]) -> Plan[list[MemoryItemRow]]:
    """:func:`with_sources` as a plan."""
    ids = [r[0] for r in rows]
    sources: dict[str, list[MemorySourceRow]] = defaultdict(list)
    for start in range(0, len(ids), PAGE):
        chunk = ids[start : start + PAGE]
        marks = ", ".join("?" for _ in chunk)
        found = yield Stmt(
            "SELECT item_id, session_id, ordinal, quote, operation_id FROM memory_sources "
            f"WHERE item_id IN ({marks}) ORDER BY item_id, n",
            chunk,
        )
        for item_id, sid, ordinal, quote, op in found:
            sources[item_id].append(MemorySourceRow(sid, int(ordinal), quote, op))
    return [item_from_row(r, tuple(sources[r[0]])) for r in rows]


class _Bound:
    """Times left as they are, for :func:`memoir.store.db.run_plan` to bind."""

    def time(self, value: datetime) -> Any:
        return value


def select_plan(f: ItemFilter, order: str, limit: int | None) -> Plan[list[MemoryItemRow]]:
    """The items within ``f`` in ``order`` (over alias ``i``), with their sources."""
    where, params = f.sql(_Bound())
    rows = yield Stmt(
        f"SELECT {ITEM_COLS} FROM memory_items i WHERE {where} ORDER BY {order}"
        f"{limit_clause(limit)}",
        params,
    )
    return (yield from with_sources_plan(rows))


NEWEST = "i.created_at DESC, i.id"


def by_operation_plan(operation_id: str) -> Plan[list[MemoryItemRow]]:
    """The items holding a quote the operation added (saved by it or merged into)."""
    rows = yield Stmt(
        "SELECT DISTINCT item_id FROM memory_sources WHERE operation_id = ? ORDER BY item_id",
        (operation_id,),
    )
    found = yield from by_ids_plan([str(r[0]) for r in rows])
    return list(found.values())


def by_ids_plan(ids: Sequence[str]) -> Plan[dict[str, MemoryItemRow]]:
    """The items of ``ids`` that exist (live or not), by id, with their sources."""
    out: dict[str, MemoryItemRow] = {}
    for start in range(0, len(ids), PAGE):
        chunk = tuple(ids[start : start + PAGE])
        for item in (yield from select_plan(ItemFilter(ids=chunk, history=True), NEWEST, None)):
            out[item.id] = item
    return out


def put_vectors_plan(embedder: str, vectors: dict[str, np.ndarray]) -> Plan[None]:
    """Keep each item's vector by ``embedder`` (in a write transaction); an item forgotten
    meanwhile gets none."""
    import numpy as np

    live: set[str] = set()
    ids = list(vectors)
    for start in range(0, len(ids), PAGE):
        chunk = ids[start : start + PAGE]
        marks = ", ".join("?" for _ in chunk)
        rows = yield Stmt(f"SELECT id FROM memory_items WHERE id IN ({marks})", chunk)
        live |= {str(r[0]) for r in rows}
    yield Stmt(
        "INSERT INTO memory_vectors (item_id, embedder, vector) VALUES (?, ?, ?) "
        "ON CONFLICT (item_id, embedder) DO UPDATE SET vector = excluded.vector",
        [
            (i, embedder, np.asarray(v, dtype=np.float32).tobytes())
            for i, v in vectors.items()
            if i in live
        ],
        many=True,
    )


def project_disabled_plan(project: str) -> Plan[bool]:
    """Whether memory is switched off for ``project``."""
    rows = yield Stmt("SELECT disabled FROM memory_switches WHERE project = ?", (project,))
    return bool(rows and rows[0][0])


def predecessors_in(tx: Tx, item_id: str) -> list[str]:
    found: list[str] = []
    frontier = [item_id]
    while frontier:
        marks = ", ".join("?" for _ in frontier)
        rows = tx.run(f"SELECT id FROM memory_items WHERE superseded_by IN ({marks})", frontier)
        frontier = [str(r[0]) for r in rows if str(r[0]) not in found and r[0] != item_id]
        found += frontier
    return found


def close_ended(tx: Tx, here: str, row: MemoryItemRow, held: dict[str, str]) -> None:
    """The live item ``here`` (holding the imported ``row``) ended as ``row`` did: it is
    superseded by the item here holding ``row``'s successor, its validity closed."""
    live = tx.run(
        "SELECT valid_until FROM memory_items WHERE id = ? AND superseded_by IS NULL", (here,)
    )
    if not live:
        return  # ended here already (or the row was saved ended)
    successor = held.get(row.superseded_by, row.superseded_by) if row.superseded_by else None
    start = tx.run("SELECT valid_from FROM memory_items WHERE id = ?", (successor,))
    if successor == here or (successor is not None and not start):
        return  # the successor is this item, or was not imported (forgotten here)
    until = row.valid_until or (from_iso(start[0][0]) if start else None)
    if successor is not None:
        tx.run(
            "UPDATE memory_items SET superseded_by = ?, valid_until = ? WHERE id = ?",
            (successor, tx.time(until or datetime.now(UTC)), here),
        )
    elif live[0][0] is None and until is not None:
        tx.run("UPDATE memory_items SET valid_until = ? WHERE id = ?", (tx.time(until), here))


def limit_clause(limit: int | None) -> str:
    """A LIMIT clause; a limit past any table's size reads everything (a 64-bit integer
    is all SQLite and PostgreSQL take)."""
    if limit is None or limit >= MAX_ROWS:
        return ""
    return f" LIMIT {max(0, int(limit))}"
