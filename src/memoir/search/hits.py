"""What a search returns: the typed hit, the modes it ranks by, its snippet marks, and the
secrets masked in what it shows.

Pure functions: a window of the exchange text around the first query word, with every
query word marked ``\\x02`` … ``\\x03`` like the store's FTS snippets (for hits the
full-text index did not mark: vector-only hits); those marks turned into plain text and
character spans (what ``--json`` prints and the terminal highlights); and the summary
body shown beside a hit with machine header lines removed.

Secrets are masked in a hit's snippet and summary as a person or an agent reads them,
each secret replaced by its placeholder (``[redacted: AWS access key]``,
:mod:`memoir.secrets`). The store is never changed: this is presentation only, and
``memoir search --reveal`` (``reveal=true`` on the HTTP API) skips it. A snippet is a
window of the exchange's text, and its cut may fall inside a secret: the start of a token
is not a token the detector knows. So the secrets are found in the exchange's own text
(:func:`exchange_secrets`, what a snippet quotes) and masked in the snippet wherever they
appear — whole, or as the piece of one at a cut edge (``… 9FPZAM2 is the key``) or the
whole window inside one; the snippet is also scanned on its own. The highlight marks
(``\\x02`` … ``\\x03``) are moved with the text: a highlight that touched a secret covers
its placeholder, so ``to_json``'s spans stay right.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Literal

from memoir.model import Exchange
from memoir.store.index_doc import quoted_text, tools_text
from memoir.store.search_text import MARK_END, MARK_START, make_snippet, query_words

__all__ = [
    "MARK_END",
    "MARK_START",
    "MODES",
    "SearchHit",
    "SearchMode",
    "clean_summary",
    "exchange_secrets",
    "make_snippet",
    "mask_hits",
    "mask_snippet",
    "query_words",
    "split_marks",
]

_HEADERS = ("__COVERAGE__", "__ERRORED__", "__EMPTY__", "__SKIPPED__")


def split_marks(snippet: str) -> tuple[str, list[tuple[int, int]]]:
    """The snippet without its marks, and the ``(start, end)`` character spans they enclosed
    (end exclusive, in order, never empty). A mark left open runs to the end; a stray
    closing mark is dropped."""
    text: list[str] = []
    spans: list[tuple[int, int]] = []
    length = 0
    opened: int | None = None
    for char in snippet:
        if char == MARK_START:
            if opened is None:
                opened = length
        elif char == MARK_END:
            if opened is not None and length > opened:
                spans.append((opened, length))
            opened = None
        else:
            text.append(char)
            length += 1
    if opened is not None and length > opened:
        spans.append((opened, length))
    return "".join(text), spans


def clean_summary(body: str | None) -> str | None:
    """The summary text a person should see: None for missing, empty or error sentinels;
    machine header lines (``__COVERAGE__ {...}``) removed."""
    if body is None:
        return None
    if body.lstrip().startswith("__ERRORED__"):
        return None
    lines = [line for line in body.splitlines() if not line.strip().startswith(_HEADERS)]
    text = "\n".join(lines).strip()
    return text or None


SearchMode = Literal["text", "vector", "hybrid"]

MODES: tuple[SearchMode, ...] = ("text", "vector", "hybrid")


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One ranked exchange.

    ``score`` is higher-is-better within one result list (bm25 for text, cosine for vector,
    fused reciprocal-rank score for hybrid); it is not comparable across modes.
    ``snippet`` marks matches with ``\\x02`` … ``\\x03`` (:func:`split_marks` turns them into
    plain text and spans; ``to_json`` does). ``summary`` is the body of the
    session's summary (never its machine header line), or None.
    ``text_rank``/``vector_rank`` are the 1-based ranks the hit had in each list (None when
    it was not in that list): they show why a hybrid hit is where it is.
    """

    session_id: str
    exchange_id: str
    timestamp: datetime | None
    project: str
    score: float
    snippet: str
    summary: str | None = None
    text_rank: int | None = None
    vector_rank: int | None = None

    def to_json(self) -> dict[str, Any]:
        """The documented JSON shape of ``memoir search --json``: ``snippet`` is plain text
        and ``highlights`` the ``[start, end)`` character spans of its matches."""
        snippet, spans = split_marks(self.snippet)
        return {
            "session_id": self.session_id,
            "exchange_id": self.exchange_id,
            "timestamp": self.timestamp.isoformat() if self.timestamp else None,
            "project": self.project,
            "score": round(self.score, 6),
            "snippet": snippet,
            "highlights": [[start, end] for start, end in spans],
            "summary": self.summary,
        }


# secrets masked in what a hit shows ---------------------------------------------------


_ELLIPSIS = "…"

_MIN_PIECE = 4  # a shorter piece of a secret at a cut edge tells nothing (and is common text)

Secret = tuple[str, str]  # (kind, the secret's text)


def exchange_secrets(exchange: Exchange) -> list[Secret]:
    """The secrets in what a snippet of ``exchange`` quotes, each as written and, when it
    spans white space (a key block), with its white space flattened as snippets have it."""
    from memoir.secrets import find_secrets  # loaded when a hit is masked

    text = quoted_text(
        exchange.user_text,
        exchange.assistant_text,
        tools_text(exchange.tool_names, exchange.tool_excerpt),
    )
    out: list[Secret] = []
    for f in find_secrets(text):
        value = text[f.start : f.end]
        for form in dict.fromkeys((value, " ".join(value.split()))):
            if len(form) >= _MIN_PIECE and (f.kind, form) not in out:
                out.append((f.kind, form))
    return out


def mask_hits(hits: Sequence[SearchHit], exchanges: Mapping[str, Exchange]) -> list[SearchHit]:
    """``hits`` as they are shown: snippet and summary masked; ``exchanges`` by id (the
    hits' own, ``store.exchanges.many``) tell the secrets a snippet's cut may split."""
    if not hits:
        return []
    from memoir.secrets import mask  # loaded when there is a hit to mask

    out: list[SearchHit] = []
    for hit in hits:
        exchange = exchanges.get(hit.exchange_id)
        known = exchange_secrets(exchange) if exchange is not None else []
        snippet = mask_snippet(hit.snippet, known)
        summary = mask(hit.summary) if hit.summary else hit.summary
        if snippet == hit.snippet and summary == hit.summary:
            out.append(hit)
        else:
            out.append(replace(hit, snippet=snippet, summary=summary))
    return out


def mask_snippet(snippet: str, known: Iterable[Secret] = ()) -> str:
    """``snippet`` (marked ``\\x02`` … ``\\x03``) with every secret in it, and every piece of
    a ``known`` secret at a cut edge, replaced by its placeholder; marks kept around the
    text they enclosed (a mark touching a secret encloses its placeholder)."""
    from memoir.secrets import find_secrets, placeholder  # loaded when a hit is masked

    if not snippet:
        return snippet
    plain, spans = split_marks(snippet)
    cuts = _merge(
        [(f.start, f.end, placeholder(f.kind)) for f in find_secrets(plain)]
        + _known_in(plain, list(known))
    )
    if not cuts:
        return snippet
    text, moved = _replace(plain, spans, cuts)
    return _marked(text, moved)


def _known_in(plain: str, known: list[Secret]) -> list[tuple[int, int, str]]:
    """Where the ``known`` secrets are in ``plain``: whole, or cut at its edges."""
    from memoir.secrets import placeholder  # loaded when a hit is masked

    out: list[tuple[int, int, str]] = []
    if not known:
        return out
    head, tail = _body(plain)
    body = plain[head:tail]
    for kind, secret in known:
        shown = placeholder(kind)
        at = plain.find(secret)
        while at >= 0:
            out.append((at, at + len(secret), shown))
            at = plain.find(secret, at + len(secret))
        if head > 0 or tail < len(plain):  # the window was cut: a secret may be too
            if len(body) >= _MIN_PIECE and body in secret:
                out.append((head, tail, shown))
                continue
            if head > 0 and (k := _suffix_at_start(body, secret)):
                out.append((head, head + k, shown))
            if tail < len(plain) and (k := _prefix_at_end(body, secret)):
                out.append((tail - k, tail, shown))
    return out


def _body(plain: str) -> tuple[int, int]:
    """The snippet's text between the ellipses a cut leaves (``… text …``)."""
    head, tail = 0, len(plain)
    stripped = plain.lstrip()
    if stripped.startswith(_ELLIPSIS):
        head = len(plain) - len(stripped) + len(_ELLIPSIS)
        while head < tail and plain[head].isspace():
            head += 1
    stripped = plain.rstrip()
    if stripped.endswith(_ELLIPSIS) and len(stripped) - len(_ELLIPSIS) >= head:
        tail = len(stripped) - len(_ELLIPSIS)
        while tail > head and plain[tail - 1].isspace():
            tail -= 1
    return head, tail


def _suffix_at_start(body: str, secret: str) -> int:
    """The length of the longest end of ``secret`` (at least a few characters) that
    ``body`` starts with; 0 when none."""
    probe = body[:_MIN_PIECE]
    if len(probe) < _MIN_PIECE:
        return 0
    at = secret.find(probe, 1)
    while at >= 0:
        piece = secret[at:]
        if body.startswith(piece):
            return len(piece)
        at = secret.find(probe, at + 1)
    return 0


def _prefix_at_end(body: str, secret: str) -> int:
    """The length of the longest start of ``secret`` (at least a few characters) that
    ``body`` ends with; 0 when none."""
    probe = secret[:_MIN_PIECE]
    if len(probe) < _MIN_PIECE:
        return 0
    at = body.find(probe)
    while at >= 0:
        piece = body[at:]
        if len(piece) < len(secret) and secret.startswith(piece):
            return len(piece)
        at = body.find(probe, at + 1)
    return 0


def _merge(cuts: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    """Overlapping cuts as one (the first one's placeholder), in order."""
    out: list[tuple[int, int, str]] = []
    for start, end, shown in sorted(cuts, key=lambda c: (c[0], -c[1])):
        if out and start < out[-1][1]:
            last = out[-1]
            out[-1] = (last[0], max(last[1], end), last[2])
        else:
            out.append((start, end, shown))
    return out


def _replace(
    plain: str, spans: list[tuple[int, int]], cuts: list[tuple[int, int, str]]
) -> tuple[str, list[tuple[int, int]]]:
    """``plain`` with each cut replaced, and ``spans`` moved to the new text: a span
    reaching into a cut grows to cover the whole placeholder."""
    parts: list[str] = []
    placed: list[tuple[int, int, int, int]] = []  # (old start, old end, new start, new end)
    at = shift = 0
    for start, end, shown in cuts:
        parts += [plain[at:start], shown]
        placed.append((start, end, start + shift, start + shift + len(shown)))
        shift += len(shown) - (end - start)
        at = end
    parts.append(plain[at:])

    def new_start(p: int) -> int:
        moved = 0
        for old_s, old_e, new_s, new_e in placed:
            if p < old_s:
                break
            if p < old_e:
                return new_s
            moved = new_e - old_e
        return p + moved

    def new_end(p: int) -> int:
        moved = 0
        for old_s, old_e, _new_s, new_e in placed:
            if p <= old_s:
                break
            if p <= old_e:
                return new_e
            moved = new_e - old_e
        return p + moved

    moved_spans: list[tuple[int, int]] = []
    for start, end in spans:
        a, b = new_start(start), new_end(end)
        if b <= a:
            continue
        if moved_spans and a <= moved_spans[-1][1]:
            moved_spans[-1] = (moved_spans[-1][0], max(b, moved_spans[-1][1]))
        else:
            moved_spans.append((a, b))
    return "".join(parts), moved_spans


def _marked(text: str, spans: list[tuple[int, int]]) -> str:
    out: list[str] = []
    at = 0
    for start, end in spans:
        out += [text[at:start], MARK_START, text[start:end], MARK_END]
        at = end
    out.append(text[at:])
    return "".join(out)
