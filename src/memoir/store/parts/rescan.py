"""The re-scan of derived text with a newer secret detector: its state and its pages.

:mod:`memoir.ingest.verify` decides what to change; this part reads a page of a target's
rows after a cursor and writes a page's changes and the new cursor in one transaction,
so a run killed half-way resumes where its last page ended. Targets and their rows:

- ``checkpoints`` — ``data`` (JSON: the compaction summary and its parts), keyed by id;
- ``traces`` — ``data`` (JSON), keyed by id (a number);
- ``cache`` — ``value`` (a model's cached answer: episodes, halves), keyed by key;
- ``memory`` — an item's content and its quotes, keyed by item id; an item that holds a
  credential is forgotten, as extraction refuses one (tombstones, vectors and index
  rows go with it, :meth:`MemoryItemsPart.forget_many`).

The archive, the events and the search index are never touched: they keep the bytes.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from memoir.store.db import Db, Part, Tx
from memoir.store.parts.memory_items import MemoryItemsPart

__all__ = ["TABLE_TARGETS", "RescanPart", "RescanState"]

TABLE_TARGETS = ("checkpoints", "traces", "cache", "memory")
_PAGES = {
    "checkpoints": "SELECT id, data FROM checkpoints WHERE id > ? ORDER BY id LIMIT ?",
    "traces": "SELECT id, data FROM traces WHERE id > ? ORDER BY id LIMIT ?",
    "cache": "SELECT key, value FROM cache WHERE key > ? ORDER BY key LIMIT ?",
    "memory": "SELECT id, content FROM memory_items WHERE id > ? ORDER BY id LIMIT ?",
}
_UPDATES = {
    "checkpoints": "UPDATE checkpoints SET data = ? WHERE id = ?",
    "traces": "UPDATE traces SET data = ? WHERE id = ?",
    "cache": "UPDATE cache SET value = ? WHERE key = ?",
}


@dataclass(frozen=True, slots=True)
class RescanState:
    """How far the re-scan of ``target`` with ``detector`` has got (totals of every run)."""

    target: str
    detector: str
    cursor: str = ""
    scanned: int = 0
    changed: int = 0
    done: bool = False


class RescanPart(Part):
    def __init__(self, db: Db, items: MemoryItemsPart) -> None:
        super().__init__(db)
        self._items = items

    def states(self) -> dict[str, RescanState]:
        rows = self._db.rows(
            "SELECT target, detector, cursor, scanned, changed, done FROM secret_rescan"
        )
        return {
            str(r[0]): RescanState(
                str(r[0]), str(r[1]), str(r[2]), int(r[3]), int(r[4]), bool(r[5])
            )
            for r in rows
        }

    def page(self, target: str, cursor: str, limit: int) -> list[tuple[str, list[str]]]:
        """Up to ``limit`` rows of ``target`` after ``cursor``: each key and its texts (an
        item's content, then its quotes)."""
        after: str | int = cursor
        if target == "traces":
            after = int(cursor) if cursor else -1
        with self._db.ro() as tx:
            rows = tx.run(_PAGES[target], (after, limit))
            out = [(str(r[0]), [_text(r[1])]) for r in rows]
            if target == "memory" and out:
                marks = ", ".join("?" for _ in out)
                quotes = tx.run(
                    f"SELECT item_id, quote FROM memory_sources WHERE item_id IN ({marks}) "
                    "ORDER BY item_id, n",
                    [key for key, _ in out],
                )
                by_item = dict(out)
                for item_id, quote in quotes:
                    by_item[str(item_id)].append(str(quote))
        return out

    def save(
        self,
        state: RescanState,
        *,
        updates: Mapping[str, str] = {},
        forget: Sequence[str] = (),
    ) -> None:
        """Write a page's changes (``updates``: key → new text; ``forget``: memory items
        to forget) and ``state`` in one transaction."""
        with self._db.tx() as tx:
            if updates:
                sql = _UPDATES[state.target]
                tx.many(sql, [(text, _key(state.target, k)) for k, text in updates.items()])
            if forget:
                self._items.forget_in(tx, list(forget), datetime.now(UTC))
            _put_state(tx, state)


def _text(value: object) -> str:
    """A column's text: PostgreSQL hands a ``jsonb`` column back parsed."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _key(target: str, key: str) -> str | int:
    return int(key) if target == "traces" else key


def _put_state(tx: Tx, s: RescanState) -> None:
    tx.run(
        "INSERT INTO secret_rescan (target, detector, cursor, scanned, changed, done) "
        "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (target) DO UPDATE SET "
        "detector = excluded.detector, cursor = excluded.cursor, scanned = excluded.scanned, "
        "changed = excluded.changed, done = excluded.done",
        (s.target, s.detector, s.cursor, s.scanned, s.changed, int(s.done)),
    )
