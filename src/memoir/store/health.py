"""Counts and consistency checks, the same SQL on both backends.

``index_keys`` names the relation holding one row per index entry and its key column
(the exchange ``pk``): SQLite's FTS5 shadow table ``exchange_fts_docsize(id)``,
PostgreSQL's ``exchange_search(exchange_pk)``.

:func:`damaged_sessions` names the sessions whose derived rows a repair can mend, by
what it takes: exchanges rebuilt from the session's events (events the exchange rows lost
track of), or the session's transcript read again (events themselves are missing).
"""

from __future__ import annotations

from dataclasses import dataclass

from memoir.store.db import Tx

__all__ = ["SessionDamage", "damaged_sessions", "integrity_problems", "stats"]

SAMPLE = 5

_COUNTS = {
    "sessions": "SELECT count(*) FROM sessions",
    "exchanges": "SELECT count(*) FROM exchanges",
    "events": "SELECT count(*) FROM events",
    "projects": "SELECT count(DISTINCT project) FROM sessions",
    "skipped_lines": "SELECT count(*) FROM skipped_lines",
    "sources": "SELECT count(*) FROM sources",
    "embeddings": "SELECT count(*) FROM embeddings",
    "summary_rows": "SELECT count(*) FROM summaries",  # the database summary store's
    "checkpoints": "SELECT count(*) FROM checkpoints",
    "usage_records": "SELECT count(*) FROM usage",
    "subagent_sessions": "SELECT count(*) FROM sessions WHERE subagent",
    "memory_items": "SELECT count(*) FROM memory_items WHERE superseded_by IS NULL",
}


def stats(tx: Tx, index_table: str, index_key: str) -> dict[str, int]:
    out = {name: int(tx.run(sql)[0][0] or 0) for name, sql in _COUNTS.items()}
    out["index_rows"] = int(tx.run(f"SELECT count(*) FROM {index_table}")[0][0] or 0)
    return out


# a user prompt opens an exchange (``memoir.model.exchange``): one with no exchange row
# starting at it means every event of that exchange belongs to no exchange
_PROMPTS_WITHOUT_EXCHANGE = (
    "SELECT v.session_id, v.ordinal FROM events v WHERE v.kind = 'user_text' "
    "AND v.author = 'user' AND NOT EXISTS (SELECT 1 FROM exchanges e "
    "WHERE e.session_id = v.session_id AND e.first_ordinal = v.ordinal)"
)
_BROKEN_SPANS = (
    "SELECT e.id, e.session_id FROM exchanges e WHERE NOT EXISTS (SELECT 1 FROM events v "
    "WHERE v.session_id = e.session_id AND v.ordinal = e.first_ordinal) OR NOT EXISTS "
    "(SELECT 1 FROM events v WHERE v.session_id = e.session_id "
    "AND v.ordinal = e.last_ordinal)"
)
_GAPS = (
    "SELECT session_id FROM events GROUP BY session_id "
    "HAVING min(ordinal) <> 1 OR count(*) <> max(ordinal)"
)


def _checks(index_table: str, index_key: str) -> list[tuple[str, str]]:
    """(what is wrong, SELECT of the offending keys)."""
    return [
        (
            "orphan index rows (no exchange)",
            f"SELECT d.{index_key} FROM {index_table} d WHERE NOT EXISTS "
            f"(SELECT 1 FROM exchanges e WHERE e.pk = d.{index_key})",
        ),
        (
            "exchanges missing from the search index",
            f"SELECT e.id FROM exchanges e WHERE NOT EXISTS "
            f"(SELECT 1 FROM {index_table} d WHERE d.{index_key} = e.pk)",
        ),
        (
            "exchange rows lost (their events belong to no exchange)",
            "SELECT p.session_id || ':' || CAST(p.ordinal AS TEXT) "
            f"FROM ({_PROMPTS_WITHOUT_EXCHANGE}) AS p",
        ),
        (
            "exchanges whose event span is missing",
            f"SELECT b.id FROM ({_BROKEN_SPANS}) AS b",
        ),
        ("sessions with gaps in their event ordinals", _GAPS),
        (
            "events of unknown sessions",
            "SELECT DISTINCT v.session_id FROM events v WHERE NOT EXISTS "
            "(SELECT 1 FROM sessions s WHERE s.id = v.session_id)",
        ),
        (
            "exchanges of unknown sessions",
            "SELECT e.id FROM exchanges e WHERE NOT EXISTS "
            "(SELECT 1 FROM sessions s WHERE s.id = e.session_id)",
        ),
        (
            "embeddings of missing exchanges",
            "SELECT m.exchange_id FROM embeddings m WHERE NOT EXISTS "
            "(SELECT 1 FROM exchanges e WHERE e.id = m.exchange_id)",
        ),
        (
            "sources of unknown sessions",
            "SELECT t.path FROM sources t WHERE NOT EXISTS "
            "(SELECT 1 FROM sessions s WHERE s.id = t.session_id)",
        ),
    ]


def integrity_problems(tx: Tx, index_table: str, index_key: str) -> list[str]:
    """One line per kind of problem: how many, and a few examples."""
    problems: list[str] = []
    for label, sql in _checks(index_table, index_key):
        count = int(tx.run(f"SELECT count(*) FROM ({sql}) AS q")[0][0] or 0)
        if count:
            sample = [str(r[0]) for r in tx.run(f"{sql} LIMIT {SAMPLE}")]
            more = ", …" if count > len(sample) else ""
            problems.append(f"{count} {label}: {', '.join(sample)}{more}")
    return problems


@dataclass(frozen=True, slots=True)
class SessionDamage:
    """Sessions whose derived rows are damaged, by what mends them: ``exchanges_lost``,
    sessions whose events are whole but some belong to no exchange (rebuild the exchanges
    from the events); ``events_lost``, sessions with gaps in their ordinals or exchanges
    whose events are gone (read the transcript again). A session in both is only in
    ``events_lost``: reading it again rebuilds its exchanges too."""

    exchanges_lost: tuple[str, ...] = ()
    events_lost: tuple[str, ...] = ()


def damaged_sessions(tx: Tx) -> SessionDamage:
    """The sessions :class:`SessionDamage` describes, each in sorted order."""
    events_lost = {str(r[0]) for r in tx.run(_GAPS)}
    events_lost |= {str(r[1]) for r in tx.run(_BROKEN_SPANS)}
    lost = {str(r[0]) for r in tx.run(_PROMPTS_WITHOUT_EXCHANGE)} - events_lost
    return SessionDamage(tuple(sorted(lost)), tuple(sorted(events_lost)))
