"""What appends write, on both backends (issue 37): an append reads the session's last
exchanges under its lock, and its write takes from them what it would otherwise read
(the stored shapes of its exchanges, the index span's rows); the exchanges and index rows
it writes must equal those built from the whole session at once. The choice of when what
was read covers the batch is a table."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import fresh_pg_schema
from memoir import service
from memoir.app import Memoir
from memoir.model import Exchange, Harness, Session, build_exchanges
from memoir.store.search_sql import SpanRead
from memoir.store.sql_ingest import _read_ahead
from memoir.store.values import StoredTail


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def memoir(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Memoir]:
    if request.param == "sqlite":
        made = Memoir.at(tmp_path / "home", llm="offline", embed_on_write=False)
        yield made
        made.close()
        return
    with fresh_pg_schema() as url:
        made = Memoir.at(tmp_path / "home", llm="offline", database_url=url, embed_on_write=False)
        try:
            yield made
        finally:
            made.close()


def _user(n: int) -> dict[str, Any]:
    return {"role": "user", "content": f"question {n} about the otter survey", "id": f"u{n}"}


def _reply(n: int) -> dict[str, Any]:
    return {"role": "assistant", "content": f"answer {n}: the lake count went up", "id": f"a{n}"}


def _tool_call(n: int) -> dict[str, Any]:
    call = {"id": f"c{n}", "type": "function", "function": {"name": "grep", "arguments": "{}"}}
    return {"role": "assistant", "content": "", "tool_calls": [call], "id": f"t{n}"}


def _tool_result(n: int) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": f"c{n}", "content": f"match {n}", "id": f"r{n}"}


# batches in the order they are appended: each opens, grows or completes exchanges of a
# session with none, one, two, three and more exchanges before it
BATCHES: list[list[dict[str, Any]]] = [
    [_user(1)],  # the first exchange, open
    [_reply(1)],  # completes it: grown
    [_user(2)],  # a second, open
    [_reply(2), _user(3), _reply(3)],  # grows the second, then a third
    [_user(4), _tool_call(4), _tool_result(4)],  # a fourth, open, with a tool
    [_reply(4), _user(5)],  # grows it past its tool, then a fifth
    [_reply(1), _reply(4), _reply(5)],  # ids stored already are skipped; a5 grows the fifth
    [m for n in range(6, 16) for m in (_user(n), _reply(n))],  # ten more
    [{"role": "user", "content": "no id, sent as is"}],  # a message without an id
]


def _index_rows(memoir: Memoir) -> dict[str, tuple[Any, ...]]:
    """Each index row's documents (and PostgreSQL's tsvector), by exchange id."""
    store = memoir.store
    with store._db.read() as conn:  # type: ignore[attr-defined]
        if store.backend == "postgres":
            sql = (
                "SELECT x.id, d.user_doc, d.assistant_doc, d.tools_doc, d.meta_doc, "
                "d.context_doc, d.tsv::text FROM exchange_search d "
                "JOIN exchanges x ON x.pk = d.exchange_pk"
            )
        else:
            sql = (
                "SELECT x.id, f.user, f.assistant, f.tools, f.meta, f.context FROM "
                "exchange_fts f JOIN exchanges x ON x.pk = f.rowid"
            )
        return {r[0]: tuple(r[1:]) for r in conn.execute(sql).fetchall()}


def _shape(x: Exchange) -> tuple[Any, ...]:
    return (x.id, x.first_ordinal, x.last_ordinal, x.user_text, x.assistant_text, x.tool_names)


def test_appends_write_what_the_whole_session_builds(memoir: Memoir) -> None:
    sid = service.create_session(memoir, "ann", session_id="s")[0].id
    added = [service.append_messages(memoir, "ann", "s", batch)[0] for batch in BATCHES]
    assert added == [1, 1, 1, 3, 3, 2, 1, 20, 1]
    events = memoir.store.events.of(sid)
    assert [e.ordinal for e in events] == list(range(1, len(events) + 1))
    stored = memoir.store.exchanges.of(sid)
    assert [_shape(x) for x in stored] == [_shape(x) for x in build_exchanges(events)]
    assert len(stored) == 16
    assert "match 4" in stored[3].tool_excerpt and stored[4].assistant_text.startswith("answer 5")
    appended = _index_rows(memoir)
    assert set(appended) == {x.id for x in stored}
    assert memoir.store.index.repair() == 16
    assert _index_rows(memoir) == appended  # what a rebuild of the whole index writes
    assert "answer 5" in appended[stored[3].id][4]  # the context column quotes a neighbour


def _x(first: int, last: int | None = None) -> Exchange:
    return Exchange(
        id=f"s:{first}",
        session_id="s",
        first_ordinal=first,
        last_ordinal=last if last is not None else first + 1,
        user_text=f"u{first}",
        assistant_text=f"a{first}" if last is None else f"a{first} grown",
        tool_names=(),
        started_at=None,
        ended_at=None,
    )


SESSION = Session(id="s", project="p", harness=Harness.API)


@pytest.mark.parametrize(
    ("stored", "batch", "covered", "near"),
    [
        ([], [1], True, []),  # a session's first exchange
        ([1], [1], True, []),  # its only exchange grows
        ([1], [3], True, [1]),
        ([1, 3], [3, 5], True, [1]),  # the last of two grows, a third follows
        ([1, 3], [5], True, [1, 3]),
        ([1, 3, 5], [5, 7], True, [1, 3]),  # the last of three grows: its two before known
        ([1, 3, 5], [7], True, [3, 5]),
        ([1, 3, 5], [3], False, None),  # the second of three: the one before it is unknown
        ([1, 3, 5], [1], False, None),
        ([1, 3, 5], [], False, None),  # no exchanges: nothing to read
    ],
)
def test_when_what_an_append_read_covers_its_batch(
    stored: list[int], batch: list[int], covered: bool, near: list[int] | None
) -> None:
    rows = tuple((first * 10, _x(first)) for first in stored)
    changed = [_x(first, first + 5) for first in batch]
    got = _read_ahead(StoredTail(SESSION, rows), changed)
    if not covered:
        assert got is None
        return
    assert got is not None
    shapes, parts = got
    span = SpanRead(*parts)
    assert shapes == {  # (pk, last ordinal, the lengths of the three texts) as stored
        f"s:{first}": (first * 10, first + 1, len(f"u{first}"), len(f"a{first}"), 0)
        for first in batch
        if first in stored
    }
    assert (span.lo, span.hi) == (min(batch), max(batch))
    assert span.stored == [(pk, x.id, x.first_ordinal) for pk, x in rows if x.id in shapes]
    assert sorted(x.first_ordinal for _, x in span.near) == near
