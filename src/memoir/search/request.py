"""A search's inputs: the checked request, its dates, what it reads, the session it names.

``--after`` / ``--before`` / ``--as-of`` values, parsed once at the edge: ISO dates and
datetimes, a month or a year (``2026-03``, ``2026``), and dates as people type them
(``yesterday``, ``"2 weeks ago"``, ``"March 5"``, ``"yesterday 3pm"``) read by
``dateparser`` (English), imported only when a value is not ISO.

A value names either an instant or a period. An instant (an ISO datetime, ``2 hours
ago``, ``yesterday 3pm``) is taken as it is. A period — a day (``2024-05-01``,
``yesterday``, ``3 days ago``: the day that was), a month (``2026-03``, ``March 2026``) or
a year (``2026``) — is taken whole: ``--after`` starts at its first instant and
``--before`` takes in all of it. A search's ``before`` is exclusive, so an upper bound is
the first instant after the period or instant named. Values without a timezone are UTC
(relative words count from now, in UTC); the result is always timezone-aware, in UTC.

A bare number that is not a year of four digits (``12``, ``-1``) is not a date. The end of
a period past the last instant Python can hold (``--before 9999-12-31``) is that last
instant; an instant outside years 1–9999 once in UTC (``9999-12-31T23:59:59-10:00``) is
refused as out of range.

A search's inputs as one checked value: what is asked (the query and what the vector
side embeds of it), within which filters, in which mode, how many hits, from how deep a
pool. Built once where a search enters (:meth:`SearchRequest.of`); the ranking passes
read it and never check an argument again.

What search reads of the store: the parts it names, and the exchanges and sessions one
search fetches once.

Any :class:`~memoir.store.port.Store` has these parts; a search is handed only what it
reads — the vector matrix its model's embeddings (with, where files are cached beside
the database, that directory and the claim that serializes writing them), the ranking the
full-text index, the exchanges and the sessions.

A session or a project named by the user: a session by its id or a unique prefix of
it (what ``--session`` and ``memoir show`` take); a project by its name, its folder or
the folder's last part (what ``--project`` takes).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path
from typing import Any, Literal, Protocol

from memoir.errors import ConfigError, MemoirError, NotFound, UsageError, install_hint
from memoir.model import Exchange, Session
from memoir.search.embedders import Embedder
from memoir.search.hits import MODES, SearchMode
from memoir.store.parts import EmbeddingsPart, ExchangesPart, IndexPart, SessionsPart
from memoir.store.port import Claims
from memoir.store.search_sql import filter_predicate
from memoir.store.search_text import ParsedQuery, Term, meaning_text, parse_query, words_of
from memoir.store.values import ItemFilter, SearchFilters, without_surrogates

__all__ = [
    "MAX_LIMIT",
    "ItemReads",
    "Lookup",
    "SearchReads",
    "SearchRequest",
    "VectorReads",
    "exchange_text",
    "exchange_time",
    "matches_filters",
    "mentions_any",
    "parse_when",
    "project_matches",
    "resolve_mode",
    "resolve_project",
]


Period = Literal["instant", "day", "month", "year"]


_MONTH = re.compile(r"(\d{4})-(\d{2})")


_ISO_SHAPED = re.compile(r"\d{4}-?\d{2}")  # 2024-13-01 is a mistake, not a date in words


_YEAR = re.compile(r"\d{4}")


_NUMBER = re.compile(r"[+-]?\d+")  # 12, -1: dateparser reads them as a day or a month


_LAST = datetime.max.replace(tzinfo=UTC)


def parse_when(
    value: str, *, end_of_day: bool = False, option: str = "date", now: datetime | None = None
) -> datetime:
    """The instant ``value`` names; raise UsageError naming ``option``. ``end_of_day``:
    the value is an upper bound — return the first instant after it (after the whole
    period when it names one). ``now``: what relative words count from (default: now)."""
    text = value.strip()
    if not text:
        raise UsageError(f"{option}: empty date; use YYYY-MM-DD, an ISO datetime or words")
    start, period = _read(text, now)
    if start is None:
        raise UsageError(
            f"{option}: {value!r} is not a date; use YYYY-MM-DD, YYYY-MM, an ISO datetime "
            "such as 2024-05-01T14:30, or words such as yesterday or '2 weeks ago'"
        )
    try:
        start = start.replace(tzinfo=UTC) if start.tzinfo is None else start.astimezone(UTC)
    except (OverflowError, ValueError) as exc:  # year 0 or 10000 once in UTC
        raise UsageError(
            f"{option}: date out of range: {value!r} falls outside the years 1 to 9999 in UTC"
        ) from exc
    return _after(start, period) if end_of_day else start


def _after(start: datetime, period: Period) -> datetime:
    """The first instant after the period beginning at ``start`` (UTC); the last instant
    there is when that falls past the year 9999."""
    try:
        if period == "instant":
            return start + timedelta(microseconds=1)
        if period == "day":
            return start + timedelta(days=1)
        if period == "month":
            return start.replace(year=start.year + start.month // 12, month=start.month % 12 + 1)
        return start.replace(year=start.year + 1)
    except (OverflowError, ValueError):  # past 9999-12-31: nothing is stored later
        return _LAST


def _read(text: str, now: datetime | None) -> tuple[datetime | None, Period]:
    """(first instant, what it is the start of); (None, …) for no date at all."""
    try:
        return datetime.combine(date.fromisoformat(text), time.min, tzinfo=UTC), "day"
    except ValueError:
        pass
    if month := _MONTH.fullmatch(text):
        year, number = int(month[1]), int(month[2])
        if 1 <= number <= 12:
            return datetime(year, number, 1, tzinfo=UTC), "month"
        return None, "instant"
    if _YEAR.fullmatch(text):
        if int(text) < 1:  # "0000"
            return None, "instant"
        return datetime(int(text), 1, 1, tzinfo=UTC), "year"
    if _NUMBER.fullmatch(text):
        return None, "instant"
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00")), (
            "instant"
        )
    except ValueError:
        if _ISO_SHAPED.match(text):
            return None, "instant"
    return _read_words(text, now)


def _read_words(text: str, now: datetime | None) -> tuple[datetime | None, Period]:
    """A date in words, through dateparser: a time of day given → that instant; else the
    day it falls on, or the month / year when only that was named (``March 2026``)."""
    from dateparser.date import DateDataParser

    base = (now or datetime.now(UTC)).astimezone(UTC).replace(tzinfo=None)
    settings: dict[str, Any] = {
        "TIMEZONE": "UTC",
        "TO_TIMEZONE": "UTC",
        "RETURN_AS_TIMEZONE_AWARE": True,
        "RELATIVE_BASE": base,
        "PREFER_DATES_FROM": "past",
        "RETURN_TIME_AS_PERIOD": True,
    }
    try:
        found = DateDataParser(languages=["en"], settings=settings).get_date_data(text)
    except (ValueError, OverflowError):  # "year 99999": out of range, not a date
        return None, "instant"
    when = found.date_obj
    if when is None:
        return None, "instant"
    when = when.astimezone(UTC)
    if found.period == "time":
        return when, "instant"
    day = datetime.combine(when.date(), time.min, tzinfo=UTC)
    # a month or year named ("March 2026") comes at midnight; one counted back from now
    # ("a month ago") keeps now's time of day, and means the day it lands on
    named = when.time() == time.min
    if found.period == "month" and named:
        return day.replace(day=1), "month"
    if found.period == "year" and named:
        return day.replace(month=1, day=1), "year"
    return day, "day"


MAX_LIMIT = 1000


def resolve_mode(mode: str | None, embedder: Embedder | None) -> SearchMode:
    """``None`` → hybrid when an embedder is available, else text."""
    if mode is None:
        return "hybrid" if embedder is not None else "text"
    if mode not in MODES:
        raise ConfigError(f"search mode must be one of {', '.join(MODES)}, not {mode!r}")
    if mode != "text" and embedder is None:
        raise ConfigError(
            f"--mode {mode} needs the embeddings extra: {install_hint('embeddings')} "
            "(or MEMOIR_EMBEDDER=hash for the test embedder)"
        )
    return mode


@dataclass(frozen=True, slots=True)
class SearchRequest:
    """``query`` as typed (lone surrogates replaced: the tokenizer of meaning search
    refuses them); ``meaning``, what meaning search embeds of it (no excluded terms or
    operators); ``excluded``, the terms no hit may hold, in any mode; ``mode`` resolved;
    ``limit`` at most :data:`MAX_LIMIT`; ``pool`` the candidates each ranking contributes
    (None: the engine's default, deepened when the limit needs more)."""

    query: str
    meaning: str
    excluded: tuple[Term, ...]
    filters: SearchFilters
    mode: SearchMode
    limit: int
    pool: int | None = None
    memory_keys: bool = True  # exchanges also found through the memory items they support

    @classmethod
    def of(
        cls,
        query: str,
        *,
        filters: SearchFilters | None = None,
        mode: str | None = None,
        limit: int = 10,
        pool: int | None = None,
        embedder: Embedder | None = None,
        memory_keys: bool = True,
    ) -> SearchRequest:
        """The request for these arguments, each checked (``ConfigError`` naming the one
        that cannot be searched for); ``embedder`` is whether meaning search is available
        (a mode of None means hybrid then)."""
        filters = SearchFilters() if filters is None else filters
        if not isinstance(filters, SearchFilters):
            raise ConfigError(f"filters must be a SearchFilters, not {type(filters).__name__}")
        chosen = resolve_mode(mode, embedder)
        if isinstance(limit, bool) or not isinstance(limit, int):
            raise ConfigError(f"limit must be a whole number, not {limit!r}")
        if limit < 0:
            raise ConfigError(f"limit must be 0 or more, not {limit}")
        if not isinstance(query, str):
            raise ConfigError(f"the query must be a string, not {type(query).__name__}")
        if pool is not None and (isinstance(pool, bool) or not isinstance(pool, int) or pool < 1):
            raise ConfigError(f"pool must be a whole number of 1 or more, not {pool!r}")
        query = without_surrogates(query)
        return cls(
            query=query,
            meaning=meaning_text(query),
            excluded=parse_query(query).excluded,
            filters=filters,
            mode=chosen,
            limit=min(limit, MAX_LIMIT),
            pool=pool,
            memory_keys=bool(memory_keys),
        )


class VectorReads(Protocol):
    """What a model's vector matrix is loaded (and cached) from."""

    cache_dir: Path | None  # where matrix files may be cached (None: nowhere)
    embeddings: EmbeddingsPart
    claims: Claims


class SearchReads(VectorReads, Protocol):
    """What a search reads: the vectors, the full-text index, exchanges and sessions."""

    index: IndexPart
    exchanges: ExchangesPart
    sessions: SessionsPart


class ItemReads(Protocol):
    """The memory items exchanges are evidence for, as search reads them (the memory
    engine's items, handed in by whoever wires the search)."""

    def any_live(self) -> bool: ...
    def rank_text(self, query: ParsedQuery, f: ItemFilter, limit: int) -> list[str]: ...
    def ids(self, f: ItemFilter, limit: int | None = None) -> list[str]: ...
    def by_ids(self, ids: Sequence[str]) -> Mapping[str, ItemRead]: ...
    def vectors(self, embedder: str, ids: Sequence[str]) -> Mapping[str, Any]: ...
    def evidence_exchanges(self, item_ids: Sequence[str]) -> Mapping[str, list[str]]: ...


class ItemRead(Protocol):
    """What search reads of one memory item: its words."""

    @property
    def content(self) -> str: ...
    @property
    def keys(self) -> Sequence[str]: ...


class Lookup:
    """Exchanges and sessions fetched once per search."""

    def __init__(self, exchanges: ExchangesPart, sessions: SessionsPart) -> None:
        self._exchange_part = exchanges
        self._session_part = sessions
        self.exchanges: dict[str, Exchange] = {}
        self.sessions: dict[str, Session | None] = {}

    def load(self, ids: list[str]) -> None:
        missing = [i for i in ids if i not in self.exchanges]
        if missing:
            self.exchanges.update(self._exchange_part.many(missing))
        for exchange in (self.exchanges.get(i) for i in ids):
            if exchange is not None and exchange.session_id not in self.sessions:
                self.sessions[exchange.session_id] = self._session_part.get(exchange.session_id)


def project_matches(projects: Sequence[tuple[str, str | None]], ref: str) -> list[str]:
    """The projects ``ref`` names, given each project's name and folder: its name as the
    index has it (``-home-ann-code-webshop``); its folder (``/home/ann/code/webshop``,
    ``~`` expanded, a trailing ``/`` ignored); or the folder's last segment, or the name's
    last dash-separated part (``webshop``). The first of those that matches anything
    wins. Pure."""
    names = [name for name, _ in projects]
    if ref in names:
        return [ref]
    path = os.path.expanduser(ref).rstrip("/") if ("/" in ref or ref.startswith("~")) else None
    if path:
        by_path = [n for n, cwd in projects if cwd and cwd.rstrip("/") == path]
        by_path += [n for n in names if n == path.replace("/", "-") and n not in by_path]
        if by_path:
            return by_path
    tail = ref.strip("/")
    return [
        n
        for n, cwd in projects
        if tail and ((cwd and os.path.basename(cwd.rstrip("/")) == tail) or n.endswith("-" + tail))
    ]


def resolve_project(
    sessions: SessionsPart, ref: str, *, safe: Callable[[str], str], user: str | None = None
) -> str:
    """The project ``ref`` names (see :func:`project_matches`; ``safe``: how sync made a
    folder name into a project name, tried too) among ``user``'s sessions (everyone's
    with None). ``NotFound`` when none; a ``MemoirError`` listing them when several."""
    projects = sessions.project_paths(user=user)
    for candidate in dict.fromkeys((ref, safe(ref))):
        found = project_matches(projects, candidate)
        if len(found) == 1:
            return found[0]
        if found:
            folders = dict(projects)
            shown = ", ".join(f"{n} ({folders.get(n) or 'no folder'})" for n in found[:5])
            raise MemoirError(
                f"project {ref!r} matches {len(found)} projects: {shown}; give its folder "
                "or its full name"
            )
    raise NotFound(
        f"no project {ref!r} in this Memoir home (give its folder, e.g. /home/ann/app, its "
        "last part, app, or its name as `memoir stats` lists it)"
    )


def exchange_time(exchange: Exchange) -> datetime | None:
    return exchange.started_at or exchange.ended_at


def matches_filters(exchange: Exchange, session: Session | None, filters: SearchFilters) -> bool:
    """The filter semantics, applied to vector candidates (the store applies the same ones
    in SQL to text candidates: both read :mod:`memoir.store.search_sql`)."""
    return filter_predicate(filters)(exchange, session)


def mentions_any(exchange: Exchange, terms: tuple[Term, ...]) -> bool:
    """Whether the exchange's own text (prompt, reply, tool names and excerpt) holds one of
    ``terms``: a word, a phrase's words in a row, or a prefix. The query's excluded terms,
    applied to vector candidates (the index excludes text candidates itself, and also drops
    a word's inflections there)."""
    if not terms:
        return False
    words = words_of(f"{exchange_text(exchange)}\n{exchange.tool_excerpt}")
    present = set(words)
    for term in terms:
        size = len(term.words)
        if size == 1 and not term.prefix:
            if term.words[0] in present:
                return True
            continue
        for at in range(len(words) - size + 1):
            head, last = words[at : at + size - 1], words[at + size - 1]
            tail_ok = last.startswith(term.words[-1]) if term.prefix else last == term.words[-1]
            if tail_ok and tuple(head) == term.words[:-1]:
                return True
    return False


def exchange_text(exchange: Exchange) -> str:
    parts = [exchange.user_text, exchange.assistant_text]
    if exchange.tool_names:
        parts.append("tools: " + ", ".join(exchange.tool_names))
    return "\n".join(p for p in parts if p)
