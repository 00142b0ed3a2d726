"""v15: the usage ledger counts the secrets redacted from each request.
Old rows count none."""

from __future__ import annotations

__all__ = ["NAME", "POSTGRES", "REINDEX", "SQLITE", "VERSION"]

VERSION = 15
NAME = "usage-redactions"
REINDEX = False

SQLITE: tuple[str, ...] = ("ALTER TABLE usage ADD COLUMN redacted INTEGER NOT NULL DEFAULT 0",)

POSTGRES: tuple[str, ...] = ("ALTER TABLE usage ADD COLUMN redacted INTEGER NOT NULL DEFAULT 0",)
