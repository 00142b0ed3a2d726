"""What a :class:`~memoir.store.values.SearchFilters` keeps, described once and read two
ways: as SQL for the text index and the session list (:func:`filter_sql`, in either
backend's :class:`~memoir.store.db.Dialect`) and as a Python predicate for vector
candidates, which come from a matrix, not from a query (:func:`filter_predicate`).

A filter is a list of :class:`Condition` values — a subject, a comparison, a value — and
each subject names its SQL expression and how to read it off an exchange and its session
in the same table (:data:`SUBJECTS`), so the two readings cannot drift apart. A subject
that is unknown (SQL ``NULL``: an exchange with no time) fails every comparison, as in
SQL; an exchange whose session is not stored fails them all (the SQL joins the session).

The role is the one part read differently by design: text search requires the words in
that column (:func:`~memoir.store.index_doc.role_column`), meaning search requires the
exchange to have that part at all (a vector scores the whole exchange); so it is not a
condition here but a check of the predicate (:data:`HAS_PART`).
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from memoir.model import Exchange, Session
from memoir.store.db import Dialect
from memoir.store.values import SearchFilters

__all__ = [
    "HAS_PART",
    "SUBJECTS",
    "Condition",
    "Subject",
    "conditions",
    "filter_predicate",
    "filter_sql",
]

Subject = Literal["subagent", "project", "harness", "session", "user", "time"]
Comparison = Literal["=", ">=", "<"]


@dataclass(frozen=True, slots=True)
class _Reading:
    """A subject in SQL over the aliases ``{e}`` (exchanges) and ``{s}`` (sessions), and
    in Python over an exchange and its session; ``session_sql`` is its SQL over the
    sessions table alone (None: not a property of a session)."""

    sql: str
    session_sql: str | None
    value: Callable[[Exchange, Session], Any]


SUBJECTS: dict[Subject, _Reading] = {
    "subagent": _Reading("{s}.subagent", "{s}.subagent", lambda x, s: s.flags.subagent),
    "project": _Reading("{s}.project", "{s}.project", lambda x, s: s.project),
    "harness": _Reading("{s}.harness", "{s}.harness", lambda x, s: str(s.harness)),
    "session": _Reading("{e}.session_id", "{s}.id", lambda x, s: x.session_id),
    "user": _Reading("{s}.user_name", "{s}.user_name", lambda x, s: s.user),
    "time": _Reading(
        "coalesce({e}.started_at, {e}.ended_at)", None, lambda x, s: x.started_at or x.ended_at
    ),
}
_COMPARE: dict[Comparison, Callable[[Any, Any], bool]] = {
    "=": operator.eq,
    ">=": operator.ge,
    "<": operator.lt,
}
# what an exchange must have to pass a role filter by meaning
HAS_PART: dict[str, Callable[[Exchange], bool]] = {
    "user": lambda x: bool(x.user_text.strip()),
    "assistant": lambda x: bool(x.assistant_text.strip()),
    "tool": lambda x: bool(x.tool_names or x.tool_excerpt),
}


@dataclass(frozen=True, slots=True)
class Condition:
    subject: Subject
    comparison: Comparison
    value: str | bool | datetime

    @property
    def of_session(self) -> bool:
        """Whether this is a property of the session (not of the exchange)."""
        return SUBJECTS[self.subject].session_sql is not None


def conditions(filters: SearchFilters) -> tuple[Condition, ...]:
    """The conditions an exchange must meet to pass ``filters`` (the role aside)."""
    out: list[Condition] = []
    if not filters.include_subagents:
        out.append(Condition("subagent", "=", False))
    named: tuple[tuple[Subject, str | None], ...] = (
        ("project", filters.project),
        ("harness", filters.harness),
        ("session", filters.session_id),
        ("user", filters.user),
    )
    out.extend(Condition(subject, "=", value) for subject, value in named if value is not None)
    if filters.after is not None:
        out.append(Condition("time", ">=", filters.after))
    if filters.before is not None:
        out.append(Condition("time", "<", filters.before))
    return tuple(out)


def filter_sql(
    filters: SearchFilters,
    dialect: Dialect,
    *,
    exchange: str | None = "e",
    session: str = "s",
) -> tuple[str, list[Any]]:
    """``filters`` as SQL clauses, each led by ``AND``, in ``dialect``, with their
    parameters: over ``exchange`` joined to its ``session`` (table aliases), or with
    ``exchange`` None over the sessions table alone — then only the conditions of the
    session (project, harness, session, subagents) are rendered."""
    clauses: list[str] = []
    params: list[Any] = []
    for condition in conditions(filters):
        reading = SUBJECTS[condition.subject]
        template = reading.sql if exchange is not None else reading.session_sql
        if template is None:
            continue
        column = template.format(e=exchange, s=session)
        clauses.append(f" AND {column} {condition.comparison} ?")
        value = condition.value
        params.append(dialect.time(value) if isinstance(value, datetime) else value)
    return dialect("".join(clauses)), params


def filter_predicate(filters: SearchFilters) -> Callable[[Exchange, Session | None], bool]:
    """Whether an exchange (with its session, None when that is not stored) passes
    ``filters``, role included: what :func:`filter_sql` keeps, for candidates already
    loaded."""
    checks = [
        (SUBJECTS[c.subject].value, _COMPARE[c.comparison], c.value) for c in conditions(filters)
    ]
    has_part = HAS_PART[filters.role] if filters.role is not None else None

    def passes(exchange: Exchange, session: Session | None) -> bool:
        if session is None:
            return False
        for read, compare, wanted in checks:
            value = read(exchange, session)
            if value is None or not compare(value, wanted):
                return False
        return has_part is None or has_part(exchange)

    return passes
