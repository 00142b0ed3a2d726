"""Forgetting, export and import of memory items.

- :func:`forget` — by item, session (items with evidence in it), project, or text match
  (every query word in the item's content or keys): the items and the items they
  superseded go, with a tombstone of each quote's evidence fingerprint (so re-running
  extraction over the same words brings nothing back); forgetting a session's memories
  also clears its pending failure (the failed range would bring them back).
- :func:`export_lines` / :func:`import_lines` — JSON lines, one item each (history
  included) and one per tombstone, for moving homes: an import merges as extraction does
  (an item already there gains the quotes it lacked) and leaves out quotes the home had
  forgotten (an item with none left is not imported); an item already here whose every
  quote the export's tombstones name is forgotten here too.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from memoir.errors import ConfigError, MemoirError, NotFound
from memoir.memory.validate import normalize
from memoir.store.codec import from_iso
from memoir.store.memory_rows import (
    MemoryItemRow,
    MemorySourceRow,
    evidence_fingerprint,
    key_sig,
)
from memoir.store.parts.memory import MemoryPart
from memoir.store.parts.memory_items import ItemFilter, MemoryItemsPart
from memoir.store.query_text import parse_query

__all__ = ["EXPORT_VERSION", "ImportReport", "export_lines", "forget", "import_lines"]

EXPORT_VERSION = 1
_MATCH_LIMIT = 100_000


def forget(
    items: MemoryItemsPart,
    memory: MemoryPart,
    *,
    item: str | None = None,
    session: str | None = None,
    project: str | None = None,
    matching: str | None = None,
    owner: str | None = None,
) -> list[MemoryItemRow]:
    """Forget what exactly one selector names (see the module); the items deleted."""
    chosen = [x for x in (item, session, project, matching) if x is not None]
    if len(chosen) != 1:
        raise ConfigError("name exactly one of: an item, a session, a project, a query")
    if item is not None:
        found = items.get(item)
        if found is None or (owner is not None and found.owner != owner):
            raise NotFound(f"no memory item {item!r}")
        return items.forget_many([found.id])
    if session is not None:
        ids = [
            i.id
            for i in items.select(ItemFilter(owner=owner, history=True))
            if any(s.session_id == session for s in i.sources)
        ]
        gone = items.forget_many(ids)
        memory.clear_pending(session)
        return gone
    if project is not None:
        return items.forget_many(items.ids(ItemFilter(owner=owner, project=project, history=True)))
    assert matching is not None
    parsed = parse_query(matching)
    if parsed.empty:
        raise ConfigError("the query has no words to match")
    ids = items.rank_text(parsed, ItemFilter(owner=owner), _MATCH_LIMIT)
    return items.forget_many(ids)


def _time(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def export_lines(items: MemoryItemsPart, owner: str | None = None) -> Iterator[str]:
    """Every item (history included), oldest first, then every tombstone."""
    rows = items.select(ItemFilter(owner=owner, history=True))
    rows.sort(key=lambda i: (i.created_at, i.id))
    for i in rows:
        yield json.dumps(
            {
                "memoir_memory": EXPORT_VERSION,
                "id": i.id,
                "owner": i.owner,
                "session_id": i.session_id,
                "project": i.project,
                "scope": i.scope,
                "kind": i.kind,
                "content": i.content,
                "keys": list(i.keys),
                "temporal": i.temporal,
                "operation_id": i.operation_id,
                "created_at": _time(i.created_at),
                "observed_at": _time(i.observed_at),
                "first_observed_at": _time(i.first_observed_at),
                "valid_from": _time(i.valid_from),
                "valid_until": _time(i.valid_until),
                "superseded_by": i.superseded_by,
                "sources": [
                    {
                        "session_id": s.session_id,
                        "ordinal": s.ordinal,
                        "quote": s.quote,
                        "operation_id": s.operation_id,
                    }
                    for s in i.sources
                ],
            },
            ensure_ascii=False,
        )
    for who, fingerprint in items.tombstone_rows(owner):
        yield json.dumps(
            {"memoir_memory": EXPORT_VERSION, "tombstone": fingerprint, "owner": who},
            ensure_ascii=False,
        )


@dataclass(frozen=True, slots=True)
class ImportReport:
    items: int  # lines saved as new items
    merged: int  # lines that joined an item already there (quotes appended)
    already: int  # lines whose item was there with the same id (nothing changed)
    forgotten: int  # lines whose every quote this home had forgotten (left out)
    tombstones: int
    forgot_here: int = 0  # items already here that the export's tombstones forgot


def _row(o: dict[str, Any], owner: str | None) -> MemoryItemRow:
    content = normalize(str(o["content"]))
    keys = tuple(str(k) for k in o["keys"])
    if not content or not keys or not o["sources"]:
        raise ValueError("an item needs content, keys and at least one quote")
    created = from_iso(o.get("created_at")) or datetime.now(UTC)
    scope = str(o["scope"])
    if scope not in ("global", "project"):
        raise ValueError(f"unknown scope {scope!r}")
    project = str(o.get("project") or "")
    item_id = str(o.get("id") or hashlib.sha256(content.encode()).hexdigest()[:16])
    op = str(o.get("operation_id") or f"import:{item_id}")
    return MemoryItemRow(
        id=item_id,
        session_id=str(o["session_id"]),
        project=project,
        scope=scope,
        kind=str(o["kind"]),
        content=content,
        normalized=content.casefold(),
        keys=keys,
        operation_id=op,
        created_at=created,
        temporal=dict(o.get("temporal") or {}),
        observed_at=from_iso(o.get("observed_at")),
        superseded_by=o.get("superseded_by") or None,
        sources=tuple(
            MemorySourceRow(
                str(s["session_id"]),
                int(s["ordinal"]),
                str(s["quote"]),
                str(s.get("operation_id") or op),
            )
            for s in o["sources"]
        ),
        owner=owner if owner is not None else str(o.get("owner") or "local"),
        scope_key=project if scope == "project" else "",
        key_sig=key_sig(keys),
        first_observed_at=from_iso(o.get("first_observed_at")),
        valid_from=from_iso(o.get("valid_from")) or created,
        valid_until=from_iso(o.get("valid_until")),
    )


def _all_forgotten(items: MemoryItemsPart, item: MemoryItemRow) -> bool:
    prints = {evidence_fingerprint(s.session_id, s.ordinal, s.quote) for s in item.sources}
    return items.tombstoned(item.owner, prints) == prints


def import_lines(
    items: MemoryItemsPart, lines: Iterable[str], owner: str | None = None
) -> ImportReport:
    """Read an export (every line checked before anything is written: a bad line is an
    error naming it, and nothing is imported)."""
    rows: list[MemoryItemRow] = []
    stones: list[tuple[str, str]] = []
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            o = json.loads(line)
            if not isinstance(o, dict) or o.get("memoir_memory") != EXPORT_VERSION:
                raise ValueError(f"not a Memoir memory export line (version {EXPORT_VERSION})")
            if "tombstone" in o:
                stones.append((owner or str(o.get("owner") or "local"), str(o["tombstone"])))
            else:
                rows.append(_row(o, owner))
        except (ValueError, KeyError, TypeError) as exc:
            raise MemoirError(f"line {n}: {exc}") from None
    items.add_tombstones(stones)
    forgot_here = 0
    if stones:  # an item here whose every quote the export forgot is forgotten here too
        owners = {o for o, _ in stones}
        stale = [
            i.id
            for i in items.select(ItemFilter(history=True))
            if i.owner in owners and i.sources and _all_forgotten(items, i)
        ]
        forgot_here = len(items.forget_many(stale))
    kept: list[MemoryItemRow] = []
    for row in rows:  # what this home (or the export) forgot stays forgotten
        prints = {evidence_fingerprint(s.session_id, s.ordinal, s.quote): s for s in row.sources}
        gone = items.tombstoned(row.owner, prints)
        if len(gone) < len(prints):
            sources = tuple(s for f, s in prints.items() if f not in gone)
            kept.append(replace(row, sources=sources))
    there = set(items.by_ids([r.id for r in kept]))
    held = items.save(kept)
    merged = sum(1 for row, got in zip(kept, held, strict=True) if got != row.id)
    already = sum(1 for row in kept if row.id in there)
    new = len(kept) - merged - already
    return ImportReport(new, merged, already, len(rows) - len(kept), len(stones), forgot_here)
