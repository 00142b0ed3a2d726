"""What the full-text index keys on, built from an exchange (pure).

One index document per exchange, four columns searched with different weights:

- ``user``: the user's prompt(s);
- ``assistant``: the assistant's replies;
- ``tools``: tool names and the exchange's bounded tool excerpt (never whole blobs);
- ``meta``: project, harness, the ISO date with month and weekday names, the role
  words of the speakers present (``user``, ``assistant``, ``tool``), and two filter
  tokens: :func:`project_token` and :func:`month_token`. SQLite's search narrows a
  project or date-range filter inside FTS5 with them (``sqlite_search.meta_prefilter``),
  so they must stay in ``meta`` whatever else changes here.

Both backends index exactly these strings (SQLite FTS5 columns, PostgreSQL weighted
tsvector parts). Text is CJK-segmented (see :mod:`memoir.store.query_text`) and stripped
of the snippet markers ``\\x02``/``\\x03`` and NUL. :func:`embedding_text` is the text the
embedder sees for an exchange.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from datetime import datetime

from memoir.errors import ConfigError
from memoir.model import Exchange, Session
from memoir.store.query_text import segment_cjk

__all__ = [
    "EMBED_CHARS",
    "MAX_COLUMN_CHARS",
    "ROLE_COLUMNS",
    "IndexDoc",
    "embedding_text",
    "exchange_document",
    "index_text",
    "month_token",
    "project_token",
    "role_column",
]

EMBED_CHARS = 2000
# Each column is cut at this many characters (PostgreSQL's tsvector holds at most 1 MB,
# and snippets over huge replies are slow); a 20 MB tool dump never reaches the index.
MAX_COLUMN_CHARS = 100_000
_MARKERS = re.compile("[\x00\x02\x03]")
# SearchFilters.role → the column the match must be in
ROLE_COLUMNS = {"user": "user", "assistant": "assistant", "tool": "tools"}


@dataclass(frozen=True, slots=True)
class IndexDoc:
    user: str
    assistant: str
    tools: str
    meta: str

    def columns(self) -> tuple[str, str, str, str]:
        return (self.user, self.assistant, self.tools, self.meta)


def index_text(text: str) -> str:
    """Text as the index stores it: bounded, markers and NUL removed, CJK segmented."""
    if len(text) > MAX_COLUMN_CHARS:
        text = text[:MAX_COLUMN_CHARS]
    if "\x00" in text or "\x02" in text or "\x03" in text:
        text = _MARKERS.sub(" ", text)
    return segment_cjk(text)


def project_token(project: str) -> str:
    """One index token naming a project exactly (a hash: project names share words)."""
    return "prj" + hashlib.blake2b(project.encode("utf-8", "replace"), digest_size=6).hexdigest()


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


def exchange_document(exchange: Exchange, session: Session) -> IndexDoc:
    tools = " ".join(exchange.tool_names)
    if exchange.tool_excerpt:
        tools = f"{tools}\n{exchange.tool_excerpt}" if tools else exchange.tool_excerpt
    return IndexDoc(
        user=index_text(exchange.user_text),
        assistant=index_text(exchange.assistant_text),
        tools=index_text(tools),
        meta=index_text(_meta(exchange, session)),
    )


def embedding_text(exchange: Exchange) -> str:
    """What an embedder sees for one exchange: the prompt, then the reply, bounded."""
    text = exchange.user_text
    if exchange.assistant_text:
        text = f"{text}\n\n{exchange.assistant_text}" if text else exchange.assistant_text
    return text[:EMBED_CHARS]


def role_column(role: str | None) -> str | None:
    """The index column a role filter restricts the match to (None: any column)."""
    if role is None:
        return None
    try:
        return ROLE_COLUMNS[role]
    except KeyError:
        raise ConfigError(f"role must be one of user, assistant, tool, not {role!r}") from None
