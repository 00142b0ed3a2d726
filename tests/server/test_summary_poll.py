"""The summary poll's one statement (``store.summaries.poll``), on both backends: the
caller by a live key's hash (or a page key's user), the session only when it is theirs,
its summary row, its last ordinal and its newest job of the kind asked for; and the pure
decision of when that row is the whole answer."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from memoir import service
from memoir.app import Memoir
from memoir.config import Settings
from memoir.model import Harness
from memoir.store.codec import JobRow
from memoir.store.parts.jobs import hash_key
from memoir.store.port import Store
from memoir.store.values import SummaryRow
from memoir.summaries.port import answered_from_row, polled_summary

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


def _job(n: int, kind: str, state: str, user: str = "alice", sid: str = "s1") -> JobRow:
    return JobRow(f"job{n}", kind, user, sid, state, T0 + timedelta(minutes=n))


def test_the_poll_reads_the_callers_session_summary_count_and_newest_job(
    settings: Settings, store: Store
) -> None:
    memoir = Memoir(settings, store)
    alice = store.users.add("alice")
    bob = store.users.add("bob")
    s1 = service.create_session(memoir, "alice", session_id="s1")[0].id  # stored under a digest
    s2 = service.create_session(memoir, "bob", session_id="s2")[0].id
    fresh = store.summaries.poll("s1", key_hash=hash_key(alice))  # found by its name
    assert fresh is not None
    assert (fresh.user, fresh.session.id, fresh.summary, fresh.last_ordinal, fresh.job) == (
        "alice",
        s1,
        None,
        0,
        None,
    )
    messages = [{"role": "user", "content": f"m{i}", "id": str(i)} for i in range(5)]
    service.append_messages(memoir, "alice", "s1", messages)
    store.summaries.put(SummaryRow(s1, "real", body="the plan", covered=3, model="m"))
    store.jobs.create(_job(1, "summary", "completed", sid=s1))
    store.jobs.create(_job(2, "summary", "failed", sid=s1))
    store.jobs.create(_job(3, "memory", "queued", sid=s1))  # newer, another kind: not the poll's
    store.jobs.create(_job(4, "summary", "queued", user="bob", sid=s2))
    got = store.summaries.poll("s1", key_hash=hash_key(alice))
    assert got is not None
    assert got.last_ordinal == 5
    assert got.summary is not None and (got.summary.body, got.summary.covered) == ("the plan", 3)
    assert got.job is not None and (got.job.id, got.job.state) == ("job2", "failed")
    shown = polled_summary(got)
    assert (shown.state.body, shown.unit, shown.current) == ("the plan", "events", 5)
    assert shown.state.coverage is not None and shown.state.coverage.amount == 3
    assert shown.updated_at is not None
    # a page key's user, known in memory: the same answer
    assert store.summaries.poll("s1", user="alice") == got
    assert store.summaries.poll(s1, key_hash=hash_key(alice)) == got  # and by its stored id
    # another user's session, a missing one, a revoked or unknown key: no row at all
    assert store.summaries.poll("s2", key_hash=hash_key(alice)) is None
    assert store.summaries.poll(s2, key_hash=hash_key(alice)) is None
    assert store.summaries.poll("nope", key_hash=hash_key(alice)) is None
    assert store.summaries.poll("s1", key_hash=hash_key("mk_never")) is None
    assert store.summaries.poll("s1", key_hash=hash_key(bob)) is None
    assert store.summaries.poll("s1") is None
    store.users.revoke("alice")
    assert store.summaries.poll("s1", key_hash=hash_key(alice)) is None
    bobs = store.summaries.poll("s2", key_hash=hash_key(bob))
    assert bobs is not None and bobs.job is not None and bobs.job.id == "job4"


@pytest.mark.parametrize(
    ("summary_store", "harness", "from_row"),
    [
        ("database", Harness.API, True),
        ("database", Harness.CLAUDE_CODE, True),
        ("files", Harness.API, True),  # an API session has no transcript file
        ("files", Harness.CLAUDE_CODE, False),  # a synced one's summary is a file beside it
        ("files", Harness.CODEX, False),
    ],
)
def test_when_the_row_is_the_whole_answer(
    summary_store: str, harness: Harness, from_row: bool
) -> None:
    assert answered_from_row(summary_store, harness) is from_row
