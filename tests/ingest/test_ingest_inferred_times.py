"""No message loses its time (issue 34, point 7), end to end on both backends: a Claude
Code transcript with lines lacking timestamps, a generic JSON chat with none, and messages
appended over HTTP and through ``Memoir.append`` without one are each found by
``memoir search --after/--before`` around the time they were given, listed by "recent"
in their place, shown with a date by ``memoir show``, and marked inferred in ``--json``."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from cli_run import run_cli
from conftest import fresh_pg_schema
from memoir.app import Memoir
from memoir.config import Settings
from memoir.demo import ClaudeWriter
from memoir.model.event import named_session_id
from memoir.server import create_app

SID = "dddddddd-2222-4333-8444-555555555555"
T1 = datetime(2025, 3, 10, 8, 1, tzinfo=UTC)  # the Claude Code session's first known time
T4 = datetime(2025, 3, 12, 9, 0, tzinfo=UTC)  # its second, two days later
MTIME = datetime(2025, 6, 1, 12, 30, tzinfo=UTC)  # the generic chat file's mtime


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def backend(
    request: pytest.FixtureRequest, home: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[str]:
    """The CLI's environment: ``home``, its database SQLite or a fresh PostgreSQL schema."""
    monkeypatch.setenv("MEMOIR_HOME", str(home))
    if request.param == "sqlite":
        yield "sqlite"
        return
    with fresh_pg_schema() as url:
        monkeypatch.setenv("MEMOIR_DATABASE_URL", url)
        yield "postgres"


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> Any:
    code, out, err = run_cli(list(args), capsys)
    assert code == 0, err
    return json.loads(out) if "--json" in args else out


def _claude(path: Path) -> None:
    """Six records, four without a timestamp: the first (before any known time), two in
    the middle, and the last."""
    w = ClaudeWriter(SID, cwd="/home/ann/billing")
    w.user("hello before any clock")
    w.assistant("hello")
    w.user("the zephyrine bucket export keeps timing out")
    w.assistant("raising the bucket timeout")
    w.user("now the quarterly ledger report")
    w.assistant("ledger report done")
    for n, record in enumerate(w.records):
        record.pop("timestamp")
        if n == 1:
            record["timestamp"] = T1.isoformat()
        elif n == 4:
            record["timestamp"] = T4.isoformat()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(w.bytes())


def _generic(path: Path) -> None:
    chat = [
        {"role": "user", "content": "which marmalade recipe uses seville oranges"},
        {"role": "assistant", "content": "the bitter one, with seville oranges"},
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(chat), encoding="utf-8")
    stamp = MTIME.timestamp()
    os.utime(path, (stamp, stamp))


def _found(capsys: pytest.CaptureFixture[str], words: str, *dates: str) -> list[str]:
    hits = cli(capsys, "search", words, "--mode", "text", "--json", *dates)
    return [h["exchange_id"] for h in hits]


def _times(shown: dict[str, Any]) -> list[tuple[str, str | None, bool]]:
    return [(e["text"], e["timestamp"], e["time_inferred"]) for e in shown["events"]]


def test_synced_transcripts_without_times_are_dated_found_and_listed(
    backend: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "src"
    _claude(src / "claude" / "-home-ann-billing" / f"{SID}.jsonl")
    _generic(src / "chats" / "marmalade.json")
    report = cli(capsys, "sync", "--source", str(src), "--no-summaries", "--json")
    assert report["files_indexed"] == 2 and report["errors"] == []

    # each event without a time took the nearest known one: the previous, else the next
    shown = cli(capsys, "show", SID, "--json")
    assert _times(shown) == [
        ("hello before any clock", T1.isoformat(), True),  # nothing before: the next
        ("hello", T1.isoformat(), False),
        ("the zephyrine bucket export keeps timing out", T1.isoformat(), True),
        ("raising the bucket timeout", T1.isoformat(), True),
        ("now the quarterly ledger report", T4.isoformat(), False),
        ("ledger report done", T4.isoformat(), True),  # nothing after: the previous
    ]
    # a chat with no time at all: the file's modification time
    chat = cli(capsys, "show", "marmalade", "--json")
    assert {(t, inferred) for _, t, inferred in _times(chat)} == {(MTIME.isoformat(), True)}

    # the date filters keep them, around the times they were given, and only there
    zephyrine = f"{SID}:3"
    assert _found(capsys, "zephyrine", "--after", "2025-03-10", "--before", "2025-03-10") == [
        zephyrine
    ]
    assert _found(capsys, "zephyrine", "--after", "2025-03-11") == []
    assert _found(capsys, "zephyrine", "--before", "2025-03-09") == []
    assert _found(capsys, "ledger", "--after", "2025-03-12", "--before", "2025-03-12") == [
        f"{SID}:5"
    ]
    assert _found(capsys, "marmalade", "--after", "2025-06-01", "--before", "2025-06-01") == [
        "marmalade:1"
    ]
    assert _found(capsys, "marmalade", "--before", "2025-05-31") == []
    hit = cli(capsys, "search", "zephyrine", "--mode", "text", "--json")[0]
    assert hit["timestamp"] == T1.isoformat()

    # `memoir show` dates every message, an inferred time marked with ~
    text = cli(capsys, "show", SID)
    assert "~2025-03-10 08:01" in text and "#2 2025-03-10 08:01" in text
    assert "~2025-06-01 12:30" in cli(capsys, "show", "marmalade")

    # "recent": most recently active first, the untimed chat in its place (June), not last
    with Memoir.open(Settings.from_env()) as memoir:
        recent = [(i.session.id, i.last_at) for i in memoir.store.sessions.recent()]
        session = memoir.store.sessions.get("marmalade")
    assert recent == [("marmalade", MTIME), (SID, T4)]
    assert session is not None and (session.created_at, session.updated_at) == (MTIME, MTIME)


def test_a_grown_transcript_times_new_lines_from_what_was_synced_before(
    backend: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Lines appended without a time take the last known time of the earlier sync (kept
    in the source's state), not the file's new mtime."""
    path = tmp_path / "src" / "-home-ann-billing" / f"{SID}.jsonl"
    _claude(path)
    cli(capsys, "sync", "--source", str(tmp_path / "src"), "--no-summaries", "--json")
    w = ClaudeWriter(SID, cwd="/home/ann/billing")
    w.user("one more untimed question about invoices")
    w.assistant("one more untimed answer")
    for record in w.records:
        record.pop("timestamp")
    with open(path, "ab") as fp:
        fp.write(w.bytes())
    later = datetime(2026, 1, 1, tzinfo=UTC).timestamp()
    os.utime(path, (later, later))
    report = cli(capsys, "sync", "--source", str(tmp_path / "src"), "--no-summaries", "--json")
    assert report["events_added"] == 2
    shown = cli(capsys, "show", SID, "--json")
    assert _times(shown)[-2:] == [
        ("one more untimed question about invoices", T4.isoformat(), True),
        ("one more untimed answer", T4.isoformat(), True),
    ]


def test_messages_appended_without_a_time_take_the_time_they_were_stored(
    backend: str, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = Settings.from_env()
    with Memoir.open(settings) as memoir:
        key = memoir.store.users.add("alice")
        auth = {"Authorization": f"Bearer {key}"}
        began = datetime.now(UTC)
        with TestClient(create_app(memoir), raise_server_exceptions=False) as client:
            made = client.post("/api/sessions", json={"id": "fed"}, headers=auth)
            assert made.status_code == 201, made.text
            posted = client.post(
                "/api/sessions/fed/events",
                json={
                    "messages": [
                        {"role": "user", "content": "the quokka census is overdue"},
                        {"role": "assistant", "content": "quokka counts start monday"},
                        {
                            "role": "user",
                            "content": "and the wombat survey",
                            "timestamp": "2025-02-03T04:05:06Z",
                        },
                        {"role": "assistant", "content": "wombats are next week"},
                    ]
                },
                headers=auth,
            )
            assert posted.status_code == 200, posted.text
            ended = datetime.now(UTC)
            events = client.get("/api/sessions/fed/events", headers=auth).json()["data"]
            stamps = [(e["timestamp"], e["time_inferred"]) for e in events["events"]]
            # the two before the one with a time took it (the next known); the one after,
            # too (the previous): nothing took the stored time here
            wombat = "2025-02-03T04:05:06+00:00"
            assert stamps == [(wombat, True), (wombat, True), (wombat, False), (wombat, True)]
            posted = client.post(
                "/api/sessions/fed/events",
                json={"messages": [{"role": "user", "content": "pelican migration notes"}]},
                headers=auth,
            )
            assert posted.status_code == 200, posted.text
            stored = datetime.now(UTC)
            last = client.get("/api/sessions/fed/events?after=4", headers=auth).json()["data"]
            (pelican,) = last["events"]
            at = datetime.fromisoformat(pelican["timestamp"])
            assert pelican["time_inferred"] is True and ended <= at <= stored
            # the page's search and its "recent" list keep it, bracketed by those times
            window = {
                "after": (ended - timedelta(seconds=1)).isoformat(),
                "before": (stored + timedelta(seconds=1)).isoformat(),
            }
            found = client.get("/api/search", params={"q": "pelican", **window}, headers=auth)
            fed = named_session_id("alice", "fed")  # the id local's "fed" is stored under
            assert [h["exchange_id"] for h in found.json()["data"]["hits"]] == [f"{fed}:5"]
            early = client.get(
                "/api/search",
                params={"q": "pelican", "before": began.isoformat()},
                headers=auth,
            )
            assert early.json()["data"]["hits"] == []
            listed = client.get(
                "/api/sessions", params={"order": "recent", **window}, headers=auth
            ).json()["data"]["sessions"]
            assert [(s["id"], s["name"]) for s in listed] == [(fed, "fed")]
        # the library's own append: the time it was stored
        memoir.append("lib", [{"role": "user", "content": "the narwhal tusk question"}])
        done = datetime.now(UTC)
    hits = cli(
        capsys,
        "search",
        "narwhal",
        "--mode",
        "text",
        "--json",
        "--after",
        stored.isoformat(),
        "--before",
        (done + timedelta(seconds=1)).isoformat(),
    )
    assert [h["exchange_id"] for h in hits] == [f"{named_session_id('local', 'lib')}:1"]
    shown = cli(capsys, "show", "lib", "--json")  # local's name for it
    (event,) = shown["events"]
    assert event["time_inferred"] is True
    assert stored <= datetime.fromisoformat(event["timestamp"]) <= done
    assert "(no date)" not in cli(capsys, "search", "narwhal", "--mode", "text")
