"""A small key → text cache with expiry (what a model call's answer may be kept in)."""

from __future__ import annotations

import time

from memoir.store.db import Part

__all__ = ["CachePart"]


class CachePart(Part):
    def get(self, key: str) -> str | None:
        with self._db.ro() as tx:
            rows = tx.run(
                "SELECT value FROM cache WHERE key = ? AND expires_at > ?", (key, time.time())
            )
        return rows[0][0] if rows else None

    def put(self, key: str, value: str, ttl_seconds: float) -> None:
        now = time.time()
        with self._db.tx() as tx:
            tx.run("DELETE FROM cache WHERE expires_at <= ?", (now,))
            if ttl_seconds <= 0:
                tx.run("DELETE FROM cache WHERE key = ?", (key,))
                return
            tx.run(
                "INSERT INTO cache (key, value, expires_at) VALUES (?, ?, ?) ON CONFLICT (key) "
                "DO UPDATE SET value = excluded.value, expires_at = excluded.expires_at",
                (key, value, now + ttl_seconds),
            )
