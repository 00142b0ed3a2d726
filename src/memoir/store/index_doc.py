"""What the full-text index keys on, built from an exchange (pure).

One index document per exchange, five columns searched with different weights:

- ``user``: the user's prompt(s);
- ``assistant``: the assistant's replies;
- ``tools``: tool names and the exchange's bounded tool excerpt (never whole blobs);
- ``meta``: project, harness, the ISO date with month and weekday names, the role
  words of the speakers present (``user``, ``assistant``, ``tool``), and two filter
  tokens: :func:`project_token` and :func:`month_token`. SQLite's search narrows a
  project or date-range filter inside FTS5 with them (``sqlite_search.meta_prefilter``),
  so they must stay in ``meta`` whatever else changes here;
- ``context``: a bounded excerpt of the neighbouring exchanges of the same session (the
  end of the previous one, the start of the next one, :func:`context_text`), searched at
  a low weight. In a conversation the words naming a topic and the turn answering about
  it are often one exchange apart ("How was the trip?" … "We hiked to the lake"). An
  exchange's context changes when a neighbour is added or grows, so the writers rewrite
  the neighbours' rows in the same transaction (:func:`rewrite_span`).

Besides the five, a row names its session's owner (``owner``, the user name), so a
user's search intersects posting lists with the owner's instead of matching every
user's rows and dropping the others' after (migration v22). No query reaches it: on
SQLite it is the :func:`owner_token` in a sixth FTS5 column weighted 0 (a row that
matches only there is no hit); on PostgreSQL the lexeme :func:`owner_lexeme`, which
starts with a character no query word does.

Both backends index exactly these strings (SQLite FTS5 columns, PostgreSQL weighted
tsvector parts). Text is CJK-segmented (see :mod:`memoir.store.search_text`) and stripped
of the snippet markers ``\\x02``/``\\x03`` and NUL. A snippet quotes the same text before
segmentation (:func:`quoted_text`, from the stored exchange): the spaces segmentation adds
were never typed, and once added they cannot be told from the ones that were.
:func:`embedding_text` is the text the embedder sees for an exchange.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime

from memoir.errors import ConfigError
from memoir.model import Exchange, Session
from memoir.model.exchange import TERMINAL_ESCAPE
from memoir.store.search_text import segment_cjk

__all__ = [
    "CONTEXT_CHARS",
    "EMBED_CHARS",
    "EMBED_RECIPE",
    "MAX_COLUMN_CHARS",
    "ROLE_COLUMNS",
    "IndexDoc",
    "context_text",
    "embedding_text",
    "exchange_document",
    "index_text",
    "month_token",
    "owner_lexeme",
    "owner_token",
    "owner_tsquery",
    "project_token",
    "quoted_text",
    "rewrite_span",
    "role_column",
    "session_documents",
    "shown_text",
    "stream_documents",
    "tools_text",
]

EMBED_CHARS = 2000
EMBED_TOOL_CHARS = 600  # of the tool excerpt, between the prompt and the reply
# The recipe of the text a vector embeds: raise it whenever :func:`embedding_text`,
# ``search.embedded_context`` (the previous exchange's lead) or the token basis
# change, and the embed catch-up recomputes every vector of an older recipe (migration
# v9). 1: rows from before recipes were recorded; 2: prompt, the start of the tool
# excerpt, reply, led by the last 400 characters of the previous exchange.
EMBED_RECIPE = 2
# Each column is cut at this many characters (PostgreSQL's tsvector holds at most 1 MB,
# and snippets over huge replies are slow); a 20 MB tool dump never reaches the index.
MAX_COLUMN_CHARS = 100_000
# How much of each neighbour the ``context`` column holds: a conversational turn or two
# (LoCoMo turns are ~100–300 characters; a coding reply's first and last lines name its
# topic), small enough that a neighbour never outweighs the exchange's own text.
CONTEXT_CHARS = 400
_MARKERS = re.compile("[\x00\x02\x03]")
# terminal escape sequences: the index reads the words between them
_ANSI = TERMINAL_ESCAPE
# SearchFilters.role → the column the match must be in
ROLE_COLUMNS = {"user": "user", "assistant": "assistant", "tool": "tools"}


@dataclass(frozen=True, slots=True)
class IndexDoc:
    user: str
    assistant: str
    tools: str
    meta: str
    context: str = ""
    owner: str = ""  # the session's user, indexed apart (see the module's docstring)

    def columns(self) -> tuple[str, str, str, str, str]:
        return (self.user, self.assistant, self.tools, self.meta, self.context)


def shown_text(text: str) -> str:
    """Text as the index reads it, before CJK segmentation (what a snippet quotes):
    bounded, terminal escapes, markers and NUL removed."""
    if len(text) > MAX_COLUMN_CHARS:
        text = text[:MAX_COLUMN_CHARS]
    if "\x1b" in text:
        text = _ANSI.sub("", text)
    if "\x00" in text or "\x02" in text or "\x03" in text:
        text = _MARKERS.sub(" ", text)
    return text


def index_text(text: str) -> str:
    """Text as the index stores it: :func:`shown_text`, CJK segmented."""
    return segment_cjk(shown_text(text))


def tools_text(tool_names: Iterable[str], tool_excerpt: str) -> str:
    """The ``tools`` column's text: the tool names, then the exchange's bounded excerpt."""
    tools = " ".join(tool_names)
    if tool_excerpt:
        tools = f"{tools}\n{tool_excerpt}" if tools else tool_excerpt
    return tools


def quoted_text(user: str, assistant: str, tools: str, column: str | None = None) -> str:
    """What a snippet of an exchange quotes: its own text as written (``column``, the one a
    role filter names, else the prompt, the reply and the ``tools`` text), cleaned as the
    index reads it (:func:`shown_text`) but never segmented. The ``meta`` and ``context``
    columns are the index's keys and the neighbours' words, not this exchange's text."""
    own = {"user": user, "assistant": assistant, "tools": tools}
    parts = (own[column],) if column is not None else tuple(own.values())
    return "\n".join(shown_text(p) for p in parts)


def project_token(project: str) -> str:
    """One index token naming a project exactly (a hash: project names share words)."""
    return "prj" + hashlib.blake2b(project.encode("utf-8", "replace"), digest_size=6).hexdigest()


def owner_token(user: str) -> str:
    """SQLite's index token naming a user exactly (a hash: names share words; letters
    and digits only, one token to FTS5's tokenizer)."""
    return "usr" + hashlib.blake2b(user.encode("utf-8", "replace"), digest_size=8).hexdigest()


def owner_lexeme(user: str) -> str:
    """PostgreSQL's index lexeme naming a user exactly: ``#`` and the name. A query's
    lexemes are made of words (letters and digits), so none equals it or is a prefix
    of it."""
    return "#" + user


def owner_tsquery(user: str) -> str:
    """PostgreSQL's ``tsquery`` text of the one lexeme :func:`owner_lexeme` (quoted, its
    quotes and backslashes doubled: read as one lexeme, never parsed into words)."""
    lexeme = owner_lexeme(user).replace("\\", "\\\\").replace("'", "''")
    return f"'{lexeme}'"


def month_token(when: datetime) -> str:
    """One index token naming the UTC month of ``when``: ``ym202405``."""
    return f"ym{when:%Y%m}"


def _meta(exchange: Exchange, session: Session) -> str:
    parts = [session.project, str(session.harness), project_token(session.project)]
    when = exchange.started_at or exchange.ended_at
    if when is not None:
        parts.append(when.strftime("%Y-%m-%d %B %Y %A"))
        parts.append(month_token(when))
    if exchange.user_text:
        parts.append("user")
    if exchange.assistant_text:
        parts.append("assistant")
    if exchange.tool_names:
        parts.append("tool")
    return " ".join(parts)


def _conversation(exchange: Exchange) -> str:
    parts = (exchange.user_text.strip(), exchange.assistant_text.strip())
    return "\n".join(p for p in parts if p)


def _cut_head(text: str, limit: int) -> str:
    """The first ``limit`` characters, not ending inside a word."""
    if len(text) <= limit:
        return text
    cut = text[:limit]
    space = cut.rfind(" ")
    return cut[:space] if space > limit // 2 else cut


def _cut_tail(text: str, limit: int) -> str:
    """The last ``limit`` characters, not starting inside a word."""
    if len(text) <= limit:
        return text
    cut = text[-limit:]
    space = cut.find(" ")
    return cut[space + 1 :] if 0 <= space < limit // 2 else cut


def context_text(before: Exchange | None, after: Exchange | None, limit: int | None = None) -> str:
    """The ``context`` column: the last ``limit`` characters of the previous exchange's
    conversation (prompt and reply; the part nearest this exchange) and the first
    ``limit`` of the next one's (default :data:`CONTEXT_CHARS`). Tool output is left out:
    it is noise next door."""
    limit = CONTEXT_CHARS if limit is None else limit
    parts = []
    if before is not None:
        parts.append(_cut_tail(_conversation(before), limit))
    if after is not None:
        parts.append(_cut_head(_conversation(after), limit))
    return "\n".join(p for p in parts if p)


def exchange_document(
    exchange: Exchange,
    session: Session,
    before: Exchange | None = None,
    after: Exchange | None = None,
) -> IndexDoc:
    """The index document of ``exchange``; ``before``/``after`` are its neighbours in the
    session (by first ordinal), when it has them."""
    return IndexDoc(
        user=index_text(exchange.user_text),
        assistant=index_text(exchange.assistant_text),
        tools=index_text(tools_text(exchange.tool_names, exchange.tool_excerpt)),
        meta=index_text(_meta(exchange, session)),
        context=index_text(context_text(before, after)),
        owner=session.user,
    )


def session_documents(
    ordered: Sequence[Exchange], session: Session, rewrite: Sequence[Exchange] | None = None
) -> list[tuple[Exchange, IndexDoc]]:
    """Index documents of ``rewrite`` (default: all of ``ordered``), each with its
    neighbours taken from ``ordered`` — consecutive exchanges of one session in ordinal
    order. An exchange at either end of ``ordered`` gets no neighbour on that side, so pass
    one more exchange on each side than you rewrite (see :func:`rewrite_span`)."""
    wanted = None if rewrite is None else {x.id for x in rewrite}
    out = []
    for i, x in enumerate(ordered):
        if wanted is not None and x.id not in wanted:
            continue
        before = ordered[i - 1] if i > 0 else None
        after = ordered[i + 1] if i + 1 < len(ordered) else None
        out.append((x, exchange_document(x, session, before, after)))
    return out


def stream_documents(
    ordered: Iterable[Exchange], session: Session
) -> Iterator[tuple[Exchange, IndexDoc]]:
    """Index documents of a whole session's exchanges, streamed in ordinal order (a
    rebuild reads them page by page)."""
    before: Exchange | None = None
    current: Exchange | None = None
    for after in ordered:
        if current is not None:
            yield current, exchange_document(current, session, before, after)
        before, current = current, after
    if current is not None:
        yield current, exchange_document(current, session, before, None)


def rewrite_span(ordered: Sequence[Exchange], changed: Iterable[str]) -> list[Exchange]:
    """Which exchanges of ``ordered`` (one session, ordinal order) need a new index row when
    the exchanges ``changed`` were added or grew: those, and every neighbour of one (its
    context column quotes them)."""
    ids = set(changed)
    hit = [i for i, x in enumerate(ordered) if x.id in ids]
    keep: set[int] = set()
    for i in hit:
        keep.update(j for j in (i - 1, i, i + 1) if 0 <= j < len(ordered))
    return [ordered[i] for i in sorted(keep)]


def embedding_text(exchange: Exchange) -> str:
    """What an embedder sees for one exchange: the prompt, what its tools did (the start of
    the excerpt), then the reply, bounded."""
    parts = [exchange.user_text, exchange.tool_excerpt[:EMBED_TOOL_CHARS], exchange.assistant_text]
    return "\n\n".join(p for p in parts if p)[:EMBED_CHARS]


def role_column(role: str | None) -> str | None:
    """The index column a role filter restricts the match to (None: any column)."""
    if role is None:
        return None
    try:
        return ROLE_COLUMNS[role]
    except KeyError:
        raise ConfigError(f"role must be one of user, assistant, tool, not {role!r}") from None
