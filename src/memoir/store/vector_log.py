"""Which exchanges' vectors changed since a point (migration v7), and their vectors now.

A vector matrix cached in a file (:mod:`memoir.search.vectors`) records where the change
log ended when it was read; a later process asks :meth:`VectorLogMixin.embedding_changes`
what changed since, reads just those rows with :meth:`VectorLogMixin.embeddings_for` and
patches its copy, instead of reading every vector again. Only SQLite keeps the log
(``_keeps_vector_log``): on PostgreSQL the answers are None and callers read whole.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager

from memoir.store.side_tables import Tx

__all__ = ["VectorLogMixin"]

_CHUNK = 500


class VectorLogMixin:
    """Mixed into both stores beside the side tables."""

    _keeps_vector_log = False

    def _tx(self) -> AbstractContextManager[Tx]:
        raise NotImplementedError

    def _ro(self) -> AbstractContextManager[Tx]:
        raise NotImplementedError

    def embedding_log_end(self, model: str) -> int | None:
        """Where the change log ends now: the highest sequence number it ever gave (every
        model's; entries trimmed away still count, so a read can tell whether anything was
        logged since — or trimmed past it); None when no log is kept."""
        if not self._keeps_vector_log:
            return None
        with self._ro() as tx:
            rows = tx.run("SELECT seq FROM sqlite_sequence WHERE name = 'embedding_changes'")
        return int(rows[0][0] or 0) if rows else 0

    def embedding_changes(self, model: str, after: int) -> tuple[int, list[str]] | None:
        """(where the log ends, the exchanges whose ``model`` vector was written or removed
        after ``after``), each once; None when no log is kept."""
        if not self._keeps_vector_log:
            return None
        with self._ro() as tx:
            rows = tx.run(
                "SELECT seq, exchange_id FROM embedding_changes WHERE model = ? AND seq > ? "
                "ORDER BY seq",
                (model, after),
            )
        end = int(rows[-1][0]) if rows else after
        return end, list(dict.fromkeys(str(r[1]) for r in rows))

    def forget_embedding_changes(self, model: str, upto: int) -> None:
        """Drop the log entries a full read at ``upto`` covers."""
        if not self._keeps_vector_log:
            return
        with self._tx() as tx:
            tx.run("DELETE FROM embedding_changes WHERE model = ? AND seq <= ?", (model, upto))

    def embeddings_for(self, model: str, exchange_ids: Sequence[str]) -> dict[str, bytes]:
        """The current ``model`` vectors (float32 bytes) of these exchanges that have one."""
        wanted = list(dict.fromkeys(exchange_ids))
        out: dict[str, bytes] = {}
        with self._ro() as tx:
            for start in range(0, len(wanted), _CHUNK):
                chunk = wanted[start : start + _CHUNK]
                marks = ", ".join("?" for _ in chunk)
                rows = tx.run(
                    f"SELECT exchange_id, vec FROM embeddings WHERE model = ? "
                    f"AND exchange_id IN ({marks})",
                    (model, *chunk),
                )
                out.update((str(r[0]), bytes(r[1])) for r in rows)
        return out
