"""The summary poll's route reads its own request (the hot path: no dependency for
FastAPI to solve when the request has no query string; with one, FastAPI parses it as
documented) and runs in a loop call on both backends (no hand-off to a thread); a synced
session's summary files are read on a thread. Refusals are answered as before, and both
ways answer alike."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from memoir import service
from memoir.app import Memoir
from memoir.config import Settings
from memoir.demo import ClaudeWriter
from memoir.server import create_app
from memoir.service import sessions
from memoir.store import in_loop_call
from memoir.store.port import Store
from memoir.store.values import SummaryRow

from .server_api import Api

NO_KEY = (401, "unauthorized", "send an API key: Authorization: Bearer KEY")
SECRET = "aws_access_key_id = AKIAQYLPMN5HHHFPZAM2"

# headers beyond Alice's key (None: no key), the query string, and the answer
CASES: list[Any] = [
    pytest.param({"Authorization": None}, "", NO_KEY, id="no-key"),
    pytest.param({"Authorization": "Basic abc"}, "", NO_KEY, id="not-bearer"),
    pytest.param({"Authorization": "Bearer "}, "", NO_KEY, id="empty-key"),
    pytest.param(
        {"Authorization": "Bearer mk_nope"},
        "",
        (401, "unauthorized", "unknown or revoked API key"),
        id="unknown-key",
    ),
    # the key is checked before the query's parameters, as FastAPI solves them
    pytest.param({"Authorization": None}, "?reveal=maybe", NO_KEY, id="bad-query-no-key"),
    pytest.param(
        {},
        "?reveal=maybe",
        (
            422,
            "invalid_request",
            "query.reveal: Input should be a valid boolean, unable to interpret input",
        ),
        id="bad-query",
    ),
    pytest.param({"who": "bob"}, "", (404, "not_found", "no session 's'"), id="not-yours"),
    pytest.param(
        {"who": "bob"}, "?reveal=1", (404, "not_found", "no session 's'"), id="not-yours-q"
    ),
]


@pytest.mark.parametrize(("headers", "query", "answer"), CASES)
def test_a_refused_poll_is_answered_as_before(
    api: Api, headers: dict[str, str | None], query: str, answer: tuple[int, str, str]
) -> None:
    api.make_session("s")
    sent: dict[str, str | None] = {**(api.bob if headers.get("who") else api.alice), **headers}
    kept = {k: v for k, v in sent.items() if v is not None and k != "who"}
    r = api.client.get(f"/api/sessions/s/summary{query}", headers=kept)
    status, code, message = answer
    assert r.status_code == status, r.text
    assert r.json() == {"error": {"code": code, "message": message}}
    assert r.headers["content-type"] == "application/json"
    assert ("www-authenticate" in r.headers) == (status == 401)


def test_a_poll_with_a_query_and_one_without_answer_alike(api: Api) -> None:
    sid = api.make_session("s")
    messages = [{"role": "user", "content": f"m{i}", "id": str(i)} for i in range(4)]
    service.append_messages(api.memoir, "alice", sid, messages)
    api.memoir.store.summaries.put(
        SummaryRow(sid, "real", body=f"The plan. {SECRET}", covered=3, model="m")
    )
    service.regenerate_summary(api.memoir, "alice", sid)  # a queued job beside it
    url = f"/api/sessions/{sid}/summary"
    plain = api.client.get(url, headers=api.alice)
    assert plain.status_code == 200, plain.text
    asked = api.client.get(f"{url}?reveal=false", headers=api.alice)
    assert plain.content == asked.content
    assert plain.headers["content-type"] == asked.headers["content-type"] == "application/json"
    data = plain.json()["data"]
    assert (
        data["summary"].startswith("The plan. ") and "AKIAQYLPMN5HHHFPZAM2" not in data["summary"]
    )
    assert data["coverage"] == {"amount": 3, "last_exchange": None, "unit": "events", "current": 4}
    assert data["model"] == "m" and data["job"]["state"] == "queued"
    revealed = api.client.get(f"{url}?reveal=true", headers=api.alice).json()["data"]
    assert revealed["summary"] == f"The plan. {SECRET}"
    assert {**revealed, "summary": None} == {**data, "summary": None}


def test_the_poll_runs_in_a_loop_call(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    """On both backends: the poll is one short read (PostgreSQL's wait awaited on the
    loop; an SQLite reader of the write-ahead log never waits for a writer)."""
    sid = api.make_session("s")
    seen: list[bool] = []
    real = service.session_summary

    def spy(*args: Any, **kwargs: Any) -> Any:
        seen.append(in_loop_call())
        return real(*args, **kwargs)

    monkeypatch.setattr(service, "session_summary", spy)
    for query in ("", "?reveal=true"):
        r = api.client.get(f"/api/sessions/{sid}/summary{query}", headers=api.alice)
        assert r.status_code == 200, r.text
        assert r.json()["data"]["summary"] is None
    assert seen == [True, True]


def test_a_synced_sessions_summary_files_are_read_on_a_thread(
    tmp_path: Path, home: Path, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    sid = "11111111-2222-4333-8444-555555555555"
    src = tmp_path / "projects"
    path = src / "-home-me-proj" / f"{sid}.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(ClaudeWriter(sid).user("first").user("second").bytes())
    settings = Settings.from_env({"MEMOIR_HOME": str(home)}, sources=(src,))
    assert settings.summary_store == "files"
    memoir = Memoir(settings, store)
    memoir.sync()
    owner = store.sessions.get(sid)
    assert owner is not None
    key = store.users.new_key(owner.user)
    where: list[tuple[bool, int]] = []
    real = sessions._from_files

    def spy(*args: Any) -> Any:
        where.append((in_loop_call(), threading.get_ident()))
        return real(*args)

    monkeypatch.setattr(sessions, "_from_files", spy)
    with TestClient(create_app(memoir), raise_server_exceptions=False) as client:
        r = client.get(f"/api/sessions/{sid}/summary", headers={"Authorization": f"Bearer {key}"})
        loop_thread = client.portal.call(threading.get_ident)  # type: ignore[union-attr]
    assert r.status_code == 200, r.text
    assert r.json()["data"]["summary"] is None and r.json()["data"]["coverage"] is None
    assert len(where) == 1
    in_call, thread = where[0]
    assert not in_call and thread != loop_thread
