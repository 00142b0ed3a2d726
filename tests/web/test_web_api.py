"""What the API added for the page, on both backends: the sessions list most recently
active first with counts, filters, facets and an offset cursor; the harness filter of a
search; what a summary's coverage counts in; failed calls in the usage totals."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient

from memoir.app import Memoir
from memoir.config import Settings
from memoir.llm.port import UsageRecord
from memoir.model import Author, Event, EventKind, Harness, Session, build_exchanges
from memoir.server import create_app
from memoir.store.port import Store
from memoir.store.values import IngestBatch, SummaryRow

T0 = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def served(
    settings: Settings, store: Store
) -> Iterator[tuple[Memoir, TestClient, dict[str, str], dict[str, str]]]:
    m = Memoir(settings, store)
    alice = {"Authorization": f"Bearer {store.users.add('alice')}"}
    bob = {"Authorization": f"Bearer {store.users.add('bob')}"}
    with TestClient(create_app(m), raise_server_exceptions=False) as client:
        yield m, client, alice, bob


def ingest(
    m: Memoir, sid: str, *, user: str, project: str, harness: Harness, day: int, turns: int = 1
) -> None:
    events = []
    at = T0 + timedelta(days=day)
    for k in range(turns):
        for kind, author, text in (
            (EventKind.USER_TEXT, Author.USER, f"question {k} about {project}"),
            (EventKind.ASSISTANT_TEXT, Author.ASSISTANT, f"answer {k}"),
        ):
            n = len(events) + 1
            events.append(Event(sid, n, kind, author, text, timestamp=at + timedelta(minutes=n)))
    session = Session(id=sid, project=project, harness=harness, user=user)
    batch = IngestBatch(
        session=session, events=tuple(events), exchanges=tuple(build_exchanges(events))
    )
    m.store.ingest.apply(batch)


@pytest.fixture
def sessions(served: Any) -> Any:
    m = served[0]
    ingest(m, "a-old", user="alice", project="infra", harness=Harness.CLAUDE_CODE, day=0, turns=2)
    ingest(m, "a-mid", user="alice", project="billing", harness=Harness.CODEX, day=5)
    ingest(m, "a-new", user="alice", project="billing", harness=Harness.CLAUDE_CODE, day=9, turns=3)
    ingest(m, "b-only", user="bob", project="secret", harness=Harness.CODEX, day=7)
    return served


def ids(r: Any) -> list[str]:
    assert r.status_code == 200, r.text
    return [s["id"] for s in r.json()["data"]["sessions"]]


def test_recent_sessions_newest_first_with_counts_and_facets(sessions: Any) -> None:
    _, client, alice, bob = sessions
    r = client.get("/api/sessions", params={"order": "recent"}, headers=alice)
    assert ids(r) == ["a-new", "a-mid", "a-old"]
    data = r.json()["data"]
    assert data["total"] == 3
    assert data["facets"] == {
        "projects": ["billing", "infra"],
        "harnesses": ["claude-code", "codex"],
    }
    newest = data["sessions"][0]
    assert (newest["exchanges"], newest["events"]) == (3, 6)
    assert newest["first_at"] < newest["last_at"] and newest["harness"] == "claude-code"
    assert newest["subagent"] is False
    assert ids(client.get("/api/sessions", params={"order": "recent"}, headers=bob)) == ["b-only"]


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"project": "billing"}, ["a-new", "a-mid"]),
        ({"harness": "codex"}, ["a-mid"]),
        ({"project": "billing", "harness": "claude-code"}, ["a-new"]),
        ({"after": "2025-03-06"}, ["a-new", "a-mid"]),  # active on or after
        ({"before": "2025-03-06"}, ["a-mid", "a-old"]),  # active on or before (inclusive day)
        ({"after": "2025-03-02", "before": "2025-03-08"}, ["a-mid"]),
        ({"project": "secret"}, []),  # bob's project: alice has none there
    ],
)
def test_recent_sessions_filters(
    sessions: Any, params: dict[str, str], expected: list[str]
) -> None:
    _, client, alice, _ = sessions
    r = client.get("/api/sessions", params={"order": "recent", **params}, headers=alice)
    assert ids(r) == expected
    assert r.json()["data"]["total"] == len(expected)


def test_recent_sessions_page_by_offset_cursor(sessions: Any) -> None:
    _, client, alice, _ = sessions
    seen: list[str] = []
    cursor = None
    while True:
        params = {"order": "recent", "limit": 2, **({"cursor": cursor} if cursor else {})}
        body = client.get("/api/sessions", params=params, headers=alice).json()
        seen += [s["id"] for s in body["data"]["sessions"]]
        cursor = body["next_cursor"]
        if cursor is None:
            break
    assert seen == ["a-new", "a-mid", "a-old"]
    # a cursor of the other order names no page of this one (404); the filters hold in
    # both orders
    recent = client.get(
        "/api/sessions", params={"order": "recent", "limit": 1}, headers=alice
    ).json()["next_cursor"]
    bad = client.get("/api/sessions", params={"cursor": recent}, headers=alice)
    assert bad.status_code == 404 and bad.json()["error"]["code"] == "not_found", bad.text
    for params in ({"project": "billing"}, {"harness": "codex"}, {"after": "2025-01-01"}):
        by_activity = client.get(
            "/api/sessions", params={"order": "recent", **params}, headers=alice
        )
        by_creation = client.get("/api/sessions", params=params, headers=alice)
        assert sorted(ids(by_creation)) == sorted(ids(by_activity)), params
    for params in ({"harness": "vim"}, {"after": "someday"}, {"order": "oldest"}):
        r = client.get("/api/sessions", params={"order": "recent", **params}, headers=alice)
        assert r.status_code == 422, params


def test_search_filters_by_harness(sessions: Any) -> None:
    _, client, alice, _ = sessions
    r = client.get("/api/search", params={"q": "question", "mode": "text"}, headers=alice)
    assert {h["session_id"] for h in r.json()["data"]["hits"]} == {"a-old", "a-mid", "a-new"}
    r = client.get(
        "/api/search", params={"q": "question", "mode": "text", "harness": "codex"}, headers=alice
    )
    assert {h["session_id"] for h in r.json()["data"]["hits"]} == {"a-mid"}


def test_summary_coverage_says_its_unit_and_what_there_is_now(sessions: Any) -> None:
    m, client, alice, _ = sessions
    r = client.get("/api/sessions/a-new/summary", headers=alice)
    assert r.json()["data"]["coverage"] is None
    m.store.summaries.put(
        SummaryRow("a-new", "real", body="what happened", covered=4, model="offline")
    )
    got = client.get("/api/sessions/a-new/summary", headers=alice).json()["data"]
    assert got["summary"] == "what happened"
    assert got["coverage"]["amount"] == 4
    # no archived transcript here: a summary row's coverage counts events (6 now)
    assert (got["coverage"]["unit"], got["coverage"]["current"]) == ("events", 6)


def test_usage_totals_count_failed_calls(served: Any) -> None:
    m, client, alice, bob = served
    ingest(m, "mine", user="alice", project="p", harness=Harness.API, day=0)

    def call(outcome: str, session: str | None, user: str | None) -> UsageRecord:
        return UsageRecord(
            at=datetime.now(UTC),
            provider="openai",
            model="gpt-x",
            purpose="summary",
            outcome=outcome,
            input_tokens=10,
            output_tokens=5,
            latency_ms=1.0,
            user=user,
            session=session,
        )

    for record in (
        call("ok", "mine", None),
        call("Transient", "mine", None),
        call("ok", None, "alice"),
        call("ok", None, "bob"),
    ):
        m.store.usage.record(record)
    data = client.get("/api/usage", headers=alice).json()["data"]
    assert (data["calls"], data["failed"], data["input_tokens"]) == (3, 1, 30)
    assert [(t["model"], t["ok"], t["failed"]) for t in data["totals"]] == [("openai:gpt-x", 2, 1)]
    assert client.get("/api/usage", headers=bob).json()["data"]["calls"] == 1
