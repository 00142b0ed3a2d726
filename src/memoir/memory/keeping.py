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
  quote the export's tombstones name is forgotten here too; :func:`read_export` reads an
  export file (or stdin) into its lines, an unreadable one a ``UsageError`` naming it.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from memoir.errors import ConfigError, MemoirError, NotFound, UsageError
from memoir.memory.item_rows import MemoryItemRow, MemorySourceRow, key_sig
from memoir.memory.item_store import MemoryItemsPart
from memoir.memory.lane_store import MemoryPart
from memoir.memory.validate import (
    MAX_CONTENT_CHARS,
    MAX_QUOTE_CHARS,
    MAX_QUOTES,
    MIN_QUOTE_CHARS,
    SENSITIVE_INFORMATION,
    check_keys,
    normalize,
)
from memoir.memory.values import ItemKind, Scope, Temporal, TemporalType
from memoir.secrets import has_secret
from memoir.store.codec import from_iso
from memoir.store.search_text import words_of
from memoir.store.values import ItemFilter

__all__ = [
    "EXPORT_VERSION",
    "ImportReport",
    "export_lines",
    "forget",
    "holds_all",
    "import_lines",
    "imported_item",
    "os_reason",
    "read_export",
    "read_line",
]

EXPORT_VERSION = 1


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
        found = items.get(item, owner=owner)
        if found is None:
            shown = item if len(item) <= 40 else item[:40] + "…"
            raise NotFound(f"no memory item {shown!r} (`memoir memories list` shows their ids)")
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
    words = words_of(matching)
    if not words:  # nothing to match is nothing forgotten (the CLI says so before asking)
        return []
    live = items.select(ItemFilter(owner=owner))
    return items.forget_many([i.id for i in live if holds_all(i, words)])


def holds_all(item: MemoryItemRow, words: Iterable[str]) -> bool:
    """Whether the item's content or keys hold every one of ``words`` (as the index
    tokenizes them: lower-cased letter and digit runs), literally: no operators. Pure."""
    held = set(words_of(" ".join((item.content, *item.keys))))
    return all(w in held for w in words)


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
    already: int  # lines whose item was here already (the same id, or merged before)
    forgotten: int  # lines whose every quote this home had forgotten (left out)
    tombstones: int
    forgot_here: int = 0  # items already here that the export's tombstones forgot


MAX_ORDINAL = 2**31 - 1  # an event ordinal is a 32-bit INTEGER on PostgreSQL
MAX_NAME_CHARS = 1000  # session ids, owners, projects, operation ids
_ITEM_ID = re.compile(r"[A-Za-z0-9_.:-]{4,64}")
_FINGERPRINT = re.compile(r"[0-9a-f]{16,64}")
_KINDS = frozenset(k.value for k in ItemKind)
_SCOPES = frozenset(s.value for s in Scope)


def _text(o: dict[str, Any], name: str, *, required: bool = True, empty: bool = False) -> str:
    """A string field: present (when ``required``), a string, not over MAX_NAME_CHARS
    (content and quotes are checked by their own rules), no NUL."""
    value = o.get(name)
    if value is None and not required:
        return ""
    if not isinstance(value, str):
        raise ValueError(f"{name} must be a string, not {type(value).__name__}")
    if "\x00" in value:
        raise ValueError(f"{name} holds a NUL character")
    if not value and not empty:
        raise ValueError(f"{name} is empty")
    if len(value) > MAX_NAME_CHARS and name not in ("content", "quote"):
        raise ValueError(f"{name} is longer than {MAX_NAME_CHARS} characters")
    return value


def _time_field(o: dict[str, Any], name: str) -> datetime | None:
    value = o.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValueError(f"{name} must be an ISO time or null")
    try:
        return from_iso(value)
    except ValueError:
        raise ValueError(f"{name} {value[:40]!r} is not an ISO time") from None


def _temporal(raw: Any) -> dict[str, Any]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ValueError("temporal must be an object")
    try:
        kind = TemporalType(raw.get("type", TemporalType.UNDATED.value))
    except ValueError:
        raise ValueError(f"unknown temporal type {raw.get('type')!r}") from None
    dates = {}
    for name in ("start", "end"):
        value = raw.get(name)
        if value is not None:
            try:
                dates[name] = date.fromisoformat(str(value))
            except ValueError:
                raise ValueError(f"temporal {name} {value!r} is not a YYYY-MM-DD date") from None
    problem = Temporal(kind, dates.get("start"), dates.get("end")).problem()
    if problem:
        raise ValueError(f"temporal dates do not fit: {problem}")
    return {"type": kind.value, **{k: v.isoformat() for k, v in dates.items()}}


def _source(s: Any, op: str) -> MemorySourceRow:
    if not isinstance(s, dict):
        raise ValueError("each source must be an object")
    ordinal = s.get("ordinal")
    if isinstance(ordinal, bool) or not isinstance(ordinal, int):
        raise ValueError("a source's ordinal must be a whole number")
    if not 0 <= ordinal <= MAX_ORDINAL:
        raise ValueError(f"a source's ordinal {ordinal} is out of range (0–{MAX_ORDINAL})")
    quote = _text(s, "quote")
    size = len(normalize(quote))
    if not MIN_QUOTE_CHARS <= size <= MAX_QUOTE_CHARS:
        raise ValueError(f"a quote must hold {MIN_QUOTE_CHARS}–{MAX_QUOTE_CHARS} characters")
    if has_secret(quote):
        raise ValueError(f"a quote carries a secret ({SENSITIVE_INFORMATION})")
    return MemorySourceRow(
        _text(s, "session_id"), ordinal, quote, _text(s, "operation_id", required=False) or op
    )


def imported_item(o: dict[str, Any], owner: str | None) -> MemoryItemRow:
    """The item an export line describes, every field checked with extraction's rules
    (:mod:`memoir.memory.validate`) and the store's limits; ``ValueError`` naming the
    field otherwise. Pure."""
    content = normalize(_text(o, "content", empty=True))
    if not content:
        raise ValueError("content is empty")
    if len(content) > MAX_CONTENT_CHARS:
        raise ValueError(f"content is longer than {MAX_CONTENT_CHARS} characters")
    if has_secret(content):
        raise ValueError(f"content carries a secret ({SENSITIVE_INFORMATION})")
    raw_keys = o.get("keys")
    if not isinstance(raw_keys, list) or not all(isinstance(k, str) for k in raw_keys):
        raise ValueError("keys must be a list of strings")
    keys = check_keys(tuple(raw_keys))
    if isinstance(keys, str):
        raise ValueError(f"keys: {keys}")
    kind = _text(o, "kind")
    if kind not in _KINDS:
        raise ValueError(f"unknown kind {kind!r} (one of {', '.join(sorted(_KINDS))})")
    scope = _text(o, "scope")
    if scope not in _SCOPES:
        raise ValueError(f"unknown scope {scope!r}")
    project = _text(o, "project", required=False, empty=True)
    item_id = _text(o, "id", required=False) or hashlib.sha256(content.encode()).hexdigest()[:16]
    if not _ITEM_ID.fullmatch(item_id):
        raise ValueError(f"id {item_id[:70]!r} is not an item id (4–64 letters, digits, _.:-)")
    op = _text(o, "operation_id", required=False) or f"import:{item_id}"
    sources = o.get("sources")
    if not isinstance(sources, list) or not sources:
        raise ValueError("an item needs at least one quote (sources)")
    if len(sources) > MAX_QUOTES:
        raise ValueError(f"an item holds at most {MAX_QUOTES} quotes")
    superseded_by = o.get("superseded_by") or None
    if superseded_by is not None:
        superseded_by = _text(o, "superseded_by")
        if superseded_by == item_id:
            raise ValueError("an item cannot be superseded by itself")
        if not _ITEM_ID.fullmatch(superseded_by):
            raise ValueError("superseded_by is not an item id")
    created = _time_field(o, "created_at") or datetime.now(UTC)
    valid_from = _time_field(o, "valid_from") or created
    valid_until = _time_field(o, "valid_until")
    if valid_until is not None and valid_until < valid_from:
        raise ValueError("valid_until is before valid_from")
    who = owner if owner is not None else (_text(o, "owner", required=False) or "local")
    return MemoryItemRow(
        id=item_id,
        session_id=_text(o, "session_id"),
        project=project,
        scope=scope,
        kind=kind,
        content=content,
        normalized=content.casefold(),
        keys=keys,
        operation_id=op,
        created_at=created,
        temporal=_temporal(o.get("temporal")),
        observed_at=_time_field(o, "observed_at"),
        superseded_by=superseded_by,
        sources=tuple(_source(s, op) for s in sources),
        owner=who,
        scope_key=project if scope == "project" else "",
        key_sig=key_sig(keys),
        first_observed_at=_time_field(o, "first_observed_at"),
        valid_from=valid_from,
        valid_until=valid_until,
    )


def read_line(line: str, owner: str | None) -> MemoryItemRow | tuple[str, str] | None:
    """One export line: an item, a tombstone (owner, fingerprint), or None (blank);
    ``ValueError`` saying what is wrong with it. Pure."""
    if not line.strip():
        return None
    try:
        o = json.loads(line)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON ({exc.msg})") from None
    if not isinstance(o, dict) or o.get("memoir_memory") != EXPORT_VERSION:
        raise ValueError(f"not a Memoir memory export line (version {EXPORT_VERSION})")
    if "tombstone" in o:
        fingerprint = o["tombstone"]
        if not isinstance(fingerprint, str) or not _FINGERPRINT.fullmatch(fingerprint):
            raise ValueError("tombstone is not an evidence fingerprint (hex)")
        return (
            owner if owner is not None else (_text(o, "owner", required=False) or "local"),
            fingerprint,
        )
    return imported_item(o, owner)


def import_lines(
    items: MemoryItemsPart, lines: Iterable[str], owner: str | None = None
) -> ImportReport:
    """Read an export: every line checked in full before anything is written (a bad line
    is an error naming its number, and nothing is imported), then everything written in
    one transaction (see :meth:`MemoryItemsPart.import_all`)."""
    rows: list[MemoryItemRow] = []
    stones: list[tuple[str, str]] = []
    where: dict[str, int] = {}
    for n, line in enumerate(lines, start=1):
        try:
            got = read_line(line, owner)
        except (ValueError, TypeError, RecursionError) as exc:
            raise MemoirError(f"line {n}: {exc}") from None
        if isinstance(got, MemoryItemRow):
            rows.append(got)
            where.setdefault(got.id, n)
        elif got is not None:
            stones.append(got)
    ids = {r.id for r in rows}
    wanted = sorted({r.superseded_by for r in rows if r.superseded_by} - ids)
    known = set(items.by_ids(wanted))
    for r in rows:
        if r.superseded_by and r.superseded_by not in ids and r.superseded_by not in known:
            raise MemoirError(
                f"line {where[r.id]}: superseded_by {r.superseded_by!r} names no item of "
                "the export nor of this home"
            )
    c = items.import_all(rows, stones)
    return ImportReport(c.items, c.merged, c.already, c.forgotten, c.tombstones, c.forgot_here)


def os_reason(exc: OSError) -> str:
    """An OS error said plainly, without the file name (the caller names the user's)."""
    if isinstance(exc, FileNotFoundError):
        return "no such file or folder"
    if isinstance(exc, IsADirectoryError):
        return "it is a folder"
    if isinstance(exc, NotADirectoryError):
        return "a part of the path is not a folder"
    if isinstance(exc, PermissionError):
        return "permission denied"
    return (exc.strerror or type(exc).__name__).lower()


def read_export(path: Path) -> list[str]:
    """The lines of an export file ('-': stdin), a UTF-8 BOM dropped, for
    :func:`import_lines`; a ``UsageError`` naming the path when it cannot be read."""
    import sys

    name = "stdin" if str(path) == "-" else str(path)
    try:
        data = sys.stdin.buffer.read() if str(path) == "-" else path.read_bytes()
    except OSError as exc:
        raise UsageError(f"{name}: cannot read it ({os_reason(exc)})") from None
    try:
        return data.decode("utf-8-sig").splitlines()
    except UnicodeDecodeError as exc:
        raise UsageError(
            f"{name} is not UTF-8 text (byte {exc.start}); give a file `memoir memories "
            "export` wrote"
        ) from None
