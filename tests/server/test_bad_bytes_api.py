"""Bad bytes are the caller's error on every backend: a NUL in the path, the query or a
header is a 400 in the usual error shape before anything reads the store (PostgreSQL's
driver refuses NUL in a text parameter; that used to surface as a 503 outage), the store
itself reports NUL as an input error, and a transcript line holding ``\\u0000`` syncs on
both backends and reads back the same."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memoir.app import Memoir
from memoir.config import Settings
from memoir.demo import ClaudeWriter
from memoir.errors import ConfigError, StoreError
from memoir.server.plumbing import nul_in_request
from memoir.store.port import Store

from .server_api import Api

SID = "11111111-2222-4333-8444-555555555555"


@pytest.mark.parametrize(
    ("scope", "where"),
    [
        ({"path": "/api/sessions/ab\x00cd"}, "path"),
        ({"path": "/api/search", "query_string": b"q=a%00b"}, "query"),
        ({"path": "/api/search", "query_string": b"q=a%00"}, "query"),
        ({"path": "/api/search", "query_string": b"q=a\x00b"}, "query"),
        ({"path": "/", "headers": [(b"x-thing", b"a\x00b")]}, "header x-thing"),
        ({"path": "/api/sessions/abcd"}, None),
        ({"path": "/api/search", "query_string": b"q=100%25"}, None),  # a literal "%" sign
        ({"path": "/api/search", "query_string": b"q=%2500"}, None),  # "%00" as text
        ({"path": "/", "headers": [(b"authorization", b"Bearer k")]}, None),
    ],
)
def test_where_a_nul_is(scope: dict[str, object], where: str | None) -> None:
    assert nul_in_request(scope) == where


@pytest.mark.parametrize(
    ("url", "where"),
    [
        ("/api/sessions/ab%00cd", "path"),
        ("/api/sessions/ab%00cd/events", "path"),
        ("/api/sessions/ab%00cd/summary", "path"),
        ("/api/search?q=invoice%00", "query"),
        ("/api/sessions?project=a%00b", "query"),
        ("/api/memories?query=a%00", "query"),
    ],
)
def test_a_nul_is_a_400_on_every_backend(api: Api, url: str, where: str) -> None:
    r = api.client.get(url, headers=api.alice)
    assert r.status_code == 400, r.text
    assert r.json() == {
        "error": {"code": "bad_request", "message": f"the request's {where} holds a NUL byte"}
    }
    # and without a key: the same answer (it is refused before anything else)
    assert api.client.get(url).status_code == 400


def test_the_store_calls_nul_an_input_error(api: Api) -> None:
    """Below the HTTP edge: a NUL reaching the store is never an outage."""
    try:
        found = api.memoir.store.sessions.get("ab\x00cd")
    except StoreError as exc:  # pragma: no cover - the failure this test guards
        pytest.fail(f"a NUL was reported as the store failing: {exc}")
    except ConfigError as exc:  # PostgreSQL: the driver refuses it, as the caller's error
        assert "NUL" in str(exc)
    else:  # SQLite stores any text: nothing by that id
        assert found is None


def test_a_transcript_line_with_nul_syncs_and_reads_back(
    tmp_path: Path, home: Path, store: Store
) -> None:
    src = tmp_path / "projects"
    path = src / "-home-me-proj" / f"{SID}.jsonl"
    path.parent.mkdir(parents=True)
    writer = ClaudeWriter(SID).user("before").user("nul \x00 inside").user("after")
    path.write_bytes(writer.bytes())
    assert b"\\u0000" in path.read_bytes()  # JSON's escape, as a harness writes it
    settings = Settings.from_env({"MEMOIR_HOME": str(home)}, sources=(src,))
    memoir = Memoir(settings, store)
    report = memoir.sync()
    assert report.lines_skipped == 0
    texts = [e.text for e in memoir.events(SID)]
    assert texts == ["before", "nul \ufffd inside", "after"]
    archived = json.loads(
        (settings.archive_dir / "-home-me-proj" / f"{SID}.jsonl").read_text().splitlines()[1]
    )
    assert archived["message"]["content"] == "nul \x00 inside"  # the archive keeps the bytes
