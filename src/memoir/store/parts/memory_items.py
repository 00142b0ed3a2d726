"""Memory items with the exact quotes that support them: listing, lookup, forgetting, the
evidence marks a transcript shows; and the per-project memory switches."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from memoir.errors import NotFound
from memoir.store.db import Part
from memoir.store.memory_rows import ITEM_COLS, MemoryItemRow, MemorySourceRow, item_from_row

__all__ = ["MemoryItemsPart"]


class MemoryItemsPart(Part):
    def find(
        self,
        *,
        project: str | None = None,
        session_id: str | None = None,
        kind: str | None = None,
        limit: int | None = None,
    ) -> list[MemoryItemRow]:
        """Live items (not superseded), newest first, with their sources."""
        clauses, params = ["superseded_by IS NULL"], []
        for column, value in (("project", project), ("session_id", session_id), ("kind", kind)):
            if value is not None:
                clauses.append(f"{column} = ?")
                params.append(value)
        page = f" LIMIT {max(0, int(limit))}" if limit is not None else ""
        rows = self._db.rows(
            f"SELECT {ITEM_COLS} FROM memory_items WHERE {' AND '.join(clauses)} "
            f"ORDER BY created_at DESC, id{page}",
            params,
        )
        return self._with_sources(rows)

    def get(self, item_id: str) -> MemoryItemRow | None:
        """The item ``item_id`` names: itself, or the one item it is a prefix of."""
        rows = self._db.rows(f"SELECT {ITEM_COLS} FROM memory_items WHERE id = ?", (item_id,))
        if not rows and len(item_id) >= 4:
            rows = self._db.rows(
                f"SELECT {ITEM_COLS} FROM memory_items WHERE id LIKE ? LIMIT 2", (item_id + "%",)
            )
            rows = rows if len(rows) == 1 else []
        found = self._with_sources(rows)
        return found[0] if found else None

    def forget(self, item_id: str) -> None:
        """Delete the item and its quotes (what was said stays in the transcript)."""
        with self._db.tx() as tx:
            gone = tx.run("DELETE FROM memory_items WHERE id = ? RETURNING id", (item_id,))
            if not gone:
                raise NotFound(f"no memory item {item_id!r}")
            tx.run("DELETE FROM memory_sources WHERE item_id = ?", (item_id,))

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

    def count(self) -> int:
        return int(
            self._db.rows("SELECT count(*) FROM memory_items WHERE superseded_by IS NULL")[0][0]
        )

    # switches --------------------------------------------------------------------------
    def project_disabled(self, project: str) -> bool:
        rows = self._db.rows("SELECT disabled FROM memory_switches WHERE project = ?", (project,))
        return bool(rows and rows[0][0])

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

    def _with_sources(self, rows: list[Any]) -> list[MemoryItemRow]:
        if not rows:
            return []
        ids = [r[0] for r in rows]
        sources: dict[str, list[MemorySourceRow]] = defaultdict(list)
        with self._db.ro() as tx:
            for start in range(0, len(ids), 500):
                chunk = ids[start : start + 500]
                marks = ", ".join("?" for _ in chunk)
                for item_id, sid, ordinal, quote in tx.run(
                    "SELECT item_id, session_id, ordinal, quote FROM memory_sources "
                    f"WHERE item_id IN ({marks}) ORDER BY item_id, n",
                    chunk,
                ):
                    sources[item_id].append(MemorySourceRow(sid, int(ordinal), quote))
        return [item_from_row(r, tuple(sources[r[0]])) for r in rows]
