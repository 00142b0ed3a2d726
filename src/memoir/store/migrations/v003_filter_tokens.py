"""v3: index documents carry filter tokens (a project token and a month token in the
``meta`` column, see :mod:`memoir.store.index_doc`); no DDL, every index row is rebuilt."""

from __future__ import annotations

__all__ = ["NAME", "REINDEX", "VERSION"]

VERSION = 3
NAME = "index-filter-tokens"
REINDEX = True
