"""Which error an append tells first, on both backends: the session's (unknown, another
user's, read from a transcript), then the messages' (malformed, then empty). The
ownership check runs on the row the append locks (issue 37: no read of its own), so the
order is checked here for every pair."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from store_builders import batch, conversation, session

from conftest import fresh_pg_schema
from memoir import service
from memoir.app import Memoir
from memoir.errors import ConfigError, NotFound

GOOD = [{"role": "user", "content": "hello", "id": "m1"}]
MALFORMED = [{"role": "robot", "content": "x"}]
EMPTY = [{"role": "user", "content": ""}]


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def memoir(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Memoir]:
    if request.param == "sqlite":
        made = Memoir.at(tmp_path / "home", llm="offline")
        yield made
        made.close()
        return
    with fresh_pg_schema() as url:
        made = Memoir.at(tmp_path / "home", llm="offline", database_url=url)
        try:
            yield made
        finally:
            made.close()


@pytest.mark.parametrize(
    ("sid", "messages", "error", "words"),
    [
        ("nobody", GOOD, NotFound, "no session 'nobody'"),
        ("nobody", MALFORMED, NotFound, "no session 'nobody'"),
        ("bob-s", GOOD, NotFound, "no session 'bob-s'"),
        ("bob-s", MALFORMED, NotFound, "no session 'bob-s'"),
        ("bob-s", EMPTY, NotFound, "no session 'bob-s'"),
        ("synced", GOOD, ConfigError, "read from a claude-code transcript"),
        ("synced", MALFORMED, ConfigError, "read from a claude-code transcript"),
        ("ann-s", MALFORMED, ConfigError, "has role 'robot'"),
        ("ann-s", EMPTY, ConfigError, "message 0 has no content"),
        ("ann-s", [*GOOD, *EMPTY], ConfigError, "message 1 has no content"),
    ],
)
def test_the_session_is_checked_before_the_messages(
    memoir: Memoir, sid: str, messages: list[dict[str, Any]], error: type, words: str
) -> None:
    service.create_session(memoir, "ann", session_id="ann-s")
    service.create_session(memoir, "bob", session_id="bob-s")
    synced = replace(session("synced"), user="ann")  # ann's, read from a transcript
    memoir.store.ingest.apply(batch(synced, conversation("synced", [("q", "a", None)])))
    with pytest.raises(error, match=words):
        service.append_messages(memoir, "ann", sid, messages)
    for other in ("ann-s", "bob-s"):  # nothing stored by a refused append
        assert memoir.store.events.last_ordinal(other) == 0
    assert service.append_messages(memoir, "ann", "ann-s", GOOD) == (1, 0)
    assert service.append_messages(memoir, "ann", "ann-s", GOOD) == (0, 1)
