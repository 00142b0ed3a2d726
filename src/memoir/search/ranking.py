"""The lists ranked beside text and vectors: token re-rank, memory keys, neighbours, query dates.

Late-interaction re-ranking (pure): the head of the hybrid list re-scored token by token.

A pooled vector says what a whole exchange is about; a question usually asks about one
detail of it. So the embedder also keeps the contextual state of each content token of
an exchange (stop words and punctuation dropped, projected to a few dimensions, one
signed byte per value: :func:`pack_tokens`), stored beside the exchange's vector. At query
time each query token finds its best-matching token in a candidate (MaxSim, as ColBERT
scores) and the candidate's score is the mean over query tokens (:func:`maxsim`). The
token states come from the same forward pass as the pooled vector, so embedding costs
nothing more; re-ranking costs a few small matrix products.

:func:`rerank` fuses that order with the hybrid order by reciprocal rank over the first
:data:`RERANK_DEPTH` hits — the re-ranker is one more opinion, not a replacement: on
LoCoMo it lifts hybrid recall@10 while neither order alone is as good
(docs/benchmarks.md). Candidates without stored token states keep only their hybrid rank.

Memories as search keys: an exchange that is evidence for a memory item is also found
through the item — its content and keys by full text, its vector by meaning — as a third
ranked list fused with the exchange lists (reciprocal rank fusion, as the two others).

A memory item is one durable sentence of the user's with its topic keys, a sharper target
for a question than the whole exchange it was said in (LoCoMo recall@10 with and without
this list: docs/benchmarks.md). Only live items count, only the caller's (``user``), and
every exchange reached this way passes the same filters and exclusions as any other.

Conversational context in ranking (pure): an exchange's neighbours lend it relevance.

In a conversation the words that identify a topic and the turn that answers about it are
often one exchange apart ("How was the trip?" … "We hiked to the lake"). So a candidate's
score is raised by a share of its best adjacent candidate's score:
``s'(x) = s(x) + weight × max(0, s(prev), s(next))``, where prev/next are the exchanges of the
same session right before and after ``x`` (adjacent when one's last ordinal is just before
the other's first). Only candidates lend; a neighbour outside the list lends nothing.

Used for vector candidates. Text candidates need none: the full-text index carries each
exchange's neighbours in its ``context`` column (:mod:`memoir.store.index_doc`).

Calendar dates written in a search query (pure): "what did Maria donate in December 2023?".

A person who names a date in a query usually wants exchanges from that time, so search can
favour them. This module only *finds* the dates; ranking decides what to do with them.

Recognised forms (case-insensitive; English month names, full or three-letter, plus "Sept";
an optional dot after an abbreviation, ordinal suffix st/nd/rd/th and comma):

* a day: ``31 July, 2023``, ``31st of July 2023``, ``July 31, 2023``, ``Jul. 31st 2023``,
  ``2024-05-01`` (an ISO time part such as ``2024-05-01T14:30`` still means that day);
* a month: ``July 2023``, ``July, 2023``;
* a year: a bare four-digit number 1970–2099 standing as a word of its own.

Deliberately not recognised: a month and day without a year ("July 31") and relative phrases
("yesterday", "last week"). Both need a reference "now", and a pure function has none; a
guessed year would quietly favour the wrong time. Years outside 1970–2099 are not dates here
(nothing Memoir stores comes from before 1970, and "3000 words" is a count), and an impossible
date ("31 February 2023", "2023-13-01") yields nothing at all — neither a day nor, from its
parts, a month or year: the text is claimed but no span is produced. Forms never overlap:
the longest form starting earliest wins, so "31 July 2023" is one day span, not also a month
and a year. Spans are UTC, ``[start, end)``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from memoir.errors import StoreError
from memoir.fusion import rrf, stand_in_ranks
from memoir.model import Exchange, Session
from memoir.search.embedders import Embedder
from memoir.search.request import ItemReads, Lookup, SearchRequest, exchange_time
from memoir.store.parts import IndexPart
from memoir.store.search_text import STOPWORDS, Term, any_content_word, parse_query, words_of
from memoir.store.values import ItemFilter, SearchFilters, TextHit

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "ITEM_POOL",
    "MIN_SHARED_WORDS",
    "NEIGHBOUR_WEIGHT",
    "RERANK_DEPTH",
    "RERANK_K",
    "SLACK",
    "VECTOR_FLOOR",
    "VECTOR_POOL",
    "DateSpan",
    "any_word_query",
    "dated",
    "maxsim",
    "memory_ranking",
    "neighbour_smoothed",
    "pack_tokens",
    "query_dates",
    "rerank",
    "span_contains",
    "text_candidates",
    "unpack_tokens",
]


RERANK_DEPTH = 30


RERANK_K = 10


_SCALE = 127.0


_HEADER = 2  # bytes: the token dimension, little-endian


def pack_tokens(states: np.ndarray) -> bytes:
    """Token states (rows) as bytes: each row scaled to unit length, one int8 per value,
    led by the row width. An empty matrix packs to the header alone."""
    import numpy as np

    matrix = np.asarray(states, dtype=np.float32)
    if matrix.ndim != 2 or not 0 < matrix.shape[1] < 65536:
        raise ValueError(f"token states must be a 2-d matrix, not shape {matrix.shape}")
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    quantised = np.clip(np.rint(matrix / norms * _SCALE), -127, 127).astype(np.int8)
    return int(matrix.shape[1]).to_bytes(_HEADER, "little") + quantised.tobytes()


def unpack_tokens(blob: bytes) -> np.ndarray:
    """The unit-length rows :func:`pack_tokens` stored (float32, approximately)."""
    import numpy as np

    if len(blob) < _HEADER:
        raise StoreError("token states blob is truncated")
    dim = int.from_bytes(blob[:_HEADER], "little")
    body = len(blob) - _HEADER
    if dim == 0 or body % dim:
        raise StoreError(f"token states blob of {len(blob)} bytes does not hold rows of {dim}")
    rows = np.frombuffer(blob, dtype=np.int8, offset=_HEADER).reshape(-1, dim)
    out = rows.astype(np.float32) / _SCALE
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return out / norms


def maxsim(query: np.ndarray, doc: np.ndarray) -> float:
    """Mean over query tokens of the best cosine with any document token; 0.0 when either
    side has no tokens or their widths differ (a model change: no opinion)."""
    if query.size == 0 or doc.size == 0 or query.shape[1] != doc.shape[1]:
        return 0.0
    return float((query @ doc.T).max(axis=1).mean())


def rerank(
    ranked: Sequence[str],
    query_tokens: np.ndarray,
    stored: Mapping[str, bytes],
    depth: int = RERANK_DEPTH,
    stand_in: Collection[str] = (),
) -> list[str]:
    """``ranked`` with its first ``depth`` ids re-ordered by fusing their current order
    with their MaxSim order; the rest unchanged. An id without stored tokens (or with an
    unreadable blob) keeps only its share from the current order — unless it is in
    ``stand_in`` (exchanges with no vector at all, not embedded yet): those count at their
    current place in the MaxSim order too, neither pushed down nor lifted."""
    head = list(ranked[:depth])
    if query_tokens.size == 0 or len(head) < 2:
        return list(ranked)
    scores: dict[str, float] = {}
    for exchange_id in head:
        blob = stored.get(exchange_id)
        if blob is None:
            continue
        try:
            scores[exchange_id] = maxsim(query_tokens, unpack_tokens(blob))
        except StoreError:
            continue
    if not scores:
        return list(ranked)
    by_tokens = sorted(scores, key=lambda i: -scores[i])
    waiting = stand_in_ranks(head, {i for i in stand_in if i not in scores})
    fused = [i for i, _ in rrf([head, by_tokens], k=RERANK_K, stand_ins=[{}, waiting])]
    return fused + list(ranked[depth:])


ITEM_POOL = 50  # items each item list contributes


VECTOR_POOL = 5_000  # the newest live items a query's vector is compared with (as recall)


# The list competes with the exchanges' own lists, so it holds only items that answer: by
# text, an item sharing at least two of the query's content words (or its only one); by
# meaning, one at least this similar (MiniLM: unrelated 0.0–0.25, on topic 0.5 and up).
MIN_SHARED_WORDS = 2


VECTOR_FLOOR = 0.5


def memory_ranking(
    items: ItemReads,
    request: SearchRequest,
    lookup: Lookup,
    passes: Callable[[Exchange, Session | None], bool],
    excluded: Callable[[Exchange], bool],
    *,
    embedder: Embedder | None = None,
    query_vector: np.ndarray | None = None,
) -> list[str]:
    """Exchange ids in the order the items they are evidence for answer the query."""
    if not items.any_live():
        return []
    where = ItemFilter(owner=request.filters.user)
    wanted = {w for w in words_of(request.query) if w not in STOPWORDS}
    need = min(MIN_SHARED_WORDS, len(wanted))
    matched = items.rank_text(any_content_word(request.query), where, ITEM_POOL)
    rows = items.by_ids(matched)
    rankings = [
        [
            i
            for i in matched
            if i in rows
            and len(wanted & set(words_of(" ".join([rows[i].content, *rows[i].keys])))) >= need
        ]
    ]
    if embedder is not None:
        ids = items.ids(where, VECTOR_POOL)
        vectors = items.vectors(embedder.name, ids)
        have = [i for i in ids if i in vectors and vectors[i].shape[0] == embedder.dim]
        if have:
            import numpy as np

            if query_vector is None:
                (query_vector,) = embedder.embed_query([request.meaning])
            matrix = np.stack([vectors[i] for i in have])
            scores = matrix @ np.asarray(query_vector, dtype=np.float32).reshape(-1)
            order = np.lexsort((np.arange(len(have)), -scores))[:ITEM_POOL]
            rankings.append([have[int(n)] for n in order if scores[n] >= VECTOR_FLOOR])
    fused = [i for i, _ in rrf(rankings)]
    evidence = items.evidence_exchanges(fused)
    ordered = list(dict.fromkeys(x for i in fused for x in evidence.get(i, ())))
    lookup.load(ordered)
    return [
        x
        for x in ordered
        if (ex := lookup.exchanges.get(x)) is not None
        and passes(ex, lookup.sessions.get(ex.session_id))
        and not excluded(ex)
    ]


NEIGHBOUR_WEIGHT = 0.5


def neighbour_smoothed(
    scores: Mapping[str, float],
    exchanges: Mapping[str, Exchange],
    weight: float = NEIGHBOUR_WEIGHT,
) -> list[tuple[str, float]]:
    """Candidates re-scored with their neighbours, best first (ties keep input order)."""
    if weight == 0 or len(scores) < 2:
        return sorted(scores.items(), key=lambda kv: -kv[1])
    starts: dict[tuple[str, int], str] = {}
    ends: dict[tuple[str, int], str] = {}
    for xid in scores:
        ex = exchanges.get(xid)
        if ex is not None:
            starts[(ex.session_id, ex.first_ordinal)] = xid
            ends[(ex.session_id, ex.last_ordinal)] = xid
    out: dict[str, float] = {}
    for xid, score in scores.items():
        ex = exchanges.get(xid)
        lent = 0.0
        if ex is not None:
            before = ends.get((ex.session_id, ex.first_ordinal - 1))
            after = starts.get((ex.session_id, ex.last_ordinal + 1))
            lent = max([0.0, *(scores[n] for n in (before, after) if n is not None)])
        out[xid] = score + weight * lent
    order = {xid: n for n, xid in enumerate(scores)}
    return sorted(out.items(), key=lambda kv: (-kv[1], order[kv[0]]))


SLACK = timedelta(days=7)


_MONTHS = {
    "jan": 1,
    "feb": 2,
    "mar": 3,
    "apr": 4,
    "may": 5,
    "jun": 6,
    "jul": 7,
    "aug": 8,
    "sep": 9,
    "oct": 10,
    "nov": 11,
    "dec": 12,
}


_FULL = "january february march april may june july august september october november december"


_MONTH = (
    r"(?:" + "|".join(_FULL.split()) + r"|(?:sept|jan|feb|mar|apr|jun|jul|aug|sep|oct|nov|dec)"
    r"(?:\.|\b))"
)


_DAY = r"(?P<{}>[0-9]{{1,2}})(?:st|nd|rd|th)?\b"


_YEAR = r"(?P<{}>[0-9]{{4}})\b"


# One alternation scanned left to right: at each position the first form that fits wins and
# its text is consumed, which is what keeps forms from overlapping. Longer forms come first.
_PATTERN = re.compile(
    "|".join(
        [
            # 31 July 2023, 31st of July, 2023
            r"\b" + _DAY.format("dmy_d") + r"\s+(?:of\s+)?"
            rf"(?P<dmy_m>{_MONTH}),?\s+" + _YEAR.format("dmy_y"),
            # July 31, 2023
            rf"\b(?P<mdy_m>{_MONTH})\s+" + _DAY.format("mdy_d") + r",?\s+" + _YEAR.format("mdy_y"),
            # 2024-05-01, 2024-05-01T14:30:00Z
            r"(?<![\w$€£#/:.\-])(?P<iso_y>[0-9]{4})-(?P<iso_m>[0-9]{2})-(?P<iso_d>[0-9]{2})"
            r"(?:[T ][0-9]{2}:[0-9]{2}(?::[0-9]{2}(?:\.[0-9]+)?)?(?:Z|[+-][0-9]{2}:?[0-9]{2})?)?"
            r"(?![\w\-]|[:.][0-9])",
            # July 2023, July, 2023
            rf"\b(?P<my_m>{_MONTH}),?\s+" + _YEAR.format("my_y"),
            # 2023
            r"(?<![\w$€£#/:.\-])(?P<y_y>19[7-9][0-9]|20[0-9][0-9])(?![\w\-]|[:./][0-9])",
        ]
    ),
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class DateSpan:
    """A stretch of time named in a query: ``[start, end)`` in UTC, and the words naming it."""

    start: datetime
    end: datetime
    text: str


def query_dates(query: str) -> tuple[DateSpan, ...]:
    """The dates written in ``query``, in order of appearance, each distinct span once."""
    seen: set[tuple[datetime, datetime]] = set()
    out: list[DateSpan] = []
    for _, span in _found(query):
        if (span.start, span.end) not in seen:
            seen.add((span.start, span.end))
            out.append(span)
    return tuple(out)


def span_contains(
    spans: Sequence[DateSpan], when: datetime | None, slack: timedelta = SLACK
) -> bool:
    """Whether ``when`` falls in ``[start - slack, end + slack)`` of any span (naive = UTC)."""
    if when is None:
        return False
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return any(span.start - slack <= when < span.end + slack for span in spans)


def _found(query: str) -> Iterator[tuple[re.Match[str], DateSpan]]:
    """Every valid date match with its span; impossible dates are consumed but skipped."""
    for match in _PATTERN.finditer(query):
        span = _span(match)
        if span is not None:
            yield match, span


def _span(match: re.Match[str]) -> DateSpan | None:
    groups = match.groupdict()
    text = match.group(0)
    if groups["dmy_y"] is not None:
        return _day(groups["dmy_y"], _month(groups["dmy_m"]), groups["dmy_d"], text)
    if groups["mdy_y"] is not None:
        return _day(groups["mdy_y"], _month(groups["mdy_m"]), groups["mdy_d"], text)
    if groups["iso_y"] is not None:
        return _day(groups["iso_y"], int(groups["iso_m"]), groups["iso_d"], text)
    if groups["my_y"] is not None:
        month = _month(groups["my_m"])
        year = int(groups["my_y"])
        if month == 0 or not _year_ok(year):
            return None
        start = datetime(year, month, 1, tzinfo=UTC)
        end = datetime(year + month // 12, month % 12 + 1, 1, tzinfo=UTC)
        return DateSpan(start, end, text)
    year = int(groups["y_y"])
    return DateSpan(datetime(year, 1, 1, tzinfo=UTC), datetime(year + 1, 1, 1, tzinfo=UTC), text)


def _day(year_text: str, month: int, day_text: str, text: str) -> DateSpan | None:
    year = int(year_text)
    if month == 0 or not _year_ok(year):
        return None
    try:
        start = datetime(year, month, int(day_text), tzinfo=UTC)
    except ValueError:
        return None
    return DateSpan(start, start + timedelta(days=1), text)


def _month(name: str) -> int:
    """Month number for a matched name, 0 when unknown (case-insensitive matching can admit
    look-alike characters such as "ſ" that no month name is spelled with)."""
    return _MONTHS.get(name.casefold().rstrip(".")[:3], 0)


def _year_ok(year: int) -> bool:
    return 1970 <= year <= 2099


def dated(
    query: str, ranked: list[tuple[str, float]], lookup: Lookup, k: int
) -> list[tuple[str, float]]:
    """When the query names dates ("in August 2023", "on 3 June, 2023"), exchanges from
    then (give or take a week) are favoured: they form a second list fused with the
    ranking by reciprocal rank. A soft preference, not a filter (``--after``/``--before``
    filter); people misremember dates by days."""
    spans = query_dates(query)
    if not spans or not ranked:
        return ranked
    lookup.load([i for i, _ in ranked])
    inside = [
        i
        for i, _ in ranked
        if (x := lookup.exchanges.get(i)) is not None and span_contains(spans, exchange_time(x))
    ]
    if not inside:
        return ranked
    return rrf([[i for i, _ in ranked], inside], k=k)


def any_word_query(query: str) -> str | None:
    """The query with any of its terms sufficing (phrases, prefixes and exclusions kept),
    in the store's query syntax; None when it has fewer than two terms."""
    loose = parse_query(query).loosened()
    if loose is None:
        return None
    parts = [_render(term) for group in loose.groups for term in group]
    return " OR ".join(parts) + "".join(f" -{_render(t)}" for t in loose.excluded)


def _render(term: Term) -> str:
    if len(term.words) > 1:
        return '"' + " ".join(term.words) + '"'
    return term.words[0] + ("*" if term.prefix else "")


def text_candidates(
    index: IndexPart, query: str, filters: SearchFilters, pool: int
) -> dict[str, TextHit]:
    """Exchanges with every query word first (bm25 order), then — when those are fewer
    than ``pool`` — exchanges with any of them (bm25 order). Long natural-language queries
    rarely have all their words in one exchange; a person's few keywords usually do. The
    hits carry no snippets: :func:`search` asks for those of the hits it shows."""
    hits: dict[str, TextHit] = {}
    for hit in index.search(query, filters, pool, snippets=False):
        hits.setdefault(hit.exchange_id, hit)
    if len(hits) < pool and (loose := any_word_query(query)) is not None:
        for hit in index.search(loose, filters, pool, snippets=False):
            if len(hits) >= pool:
                break
            hits.setdefault(hit.exchange_id, hit)
    return hits
