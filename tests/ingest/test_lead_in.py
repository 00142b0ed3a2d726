"""Issue 34.3, the lead-in: the harness text before a session's first prompt (Codex's
AGENTS.md and environment block, a local command run before anything was asked) is found
by text search, in the session's first exchange, on every write path and both backends —
appended before its prompt or with it, the result is the same — and it stays what the
harness wrote: never the user's words, never memory evidence, never the summary's goal."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from cli_run import run_cli
from conftest import fresh_pg_schema
from memoir import service
from memoir.app import Memoir
from memoir.config import Settings
from memoir.demo import CodexWriter
from memoir.ingest import verify as mend
from memoir.model import Exchange
from memoir.model.event import named_session_id
from memoir.server import create_app
from memoir.store.port import Store
from memoir.store.values import SearchFilters

INSTRUCTIONS = (
    "<user_instructions>\n# House rules\nAlways deploy with the quetzalpipe tool.\n"
    "Never touch the tlalocbucket by hand.\n</user_instructions>"
)
ENVIRONMENT = "<environment_context>\n  <cwd>/home/ann/code/xiuhcoatl</cwd>\n</environment_context>"
LEAD_WORDS = ("quetzalpipe", "tlalocbucket", "xiuhcoatl")
ASK = "Why does the nightly invoice export to the bucket fail?"
RULE = "From now on, always run the linter before committing."


def _messages() -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": INSTRUCTIONS},
        {"role": "user", "content": ENVIRONMENT},
        {"role": "user", "content": ASK},
        {"role": "assistant", "content": "The upload holds one connection for too long."},
        {"role": "user", "content": RULE},
        {"role": "assistant", "content": "Understood."},
    ]


Post = Callable[[list[dict[str, Any]]], None]


def _library(memoir: Memoir, sid: str) -> Iterator[Post]:
    service.create_session(memoir, "local", session_id=sid)
    yield lambda messages: service.append_messages(memoir, "local", sid, messages) and None


def _http(memoir: Memoir, sid: str) -> Iterator[Post]:
    headers = {"Authorization": f"Bearer {memoir.store.users.new_key('local')}"}
    with TestClient(create_app(memoir), raise_server_exceptions=True) as client:
        made = client.post("/api/sessions", json={"id": sid}, headers=headers)
        assert made.status_code == 201, made.text

        def post(messages: list[dict[str, Any]]) -> None:
            sent = client.post(
                f"/api/sessions/{sid}/events", json={"messages": messages}, headers=headers
            )
            assert sent.status_code in (200, 201), sent.text

        yield post


WRITES = {"append_messages": _library, "http": _http}


def _shape(x: Exchange) -> tuple[Any, ...]:
    """An exchange without its session's id and its times (stored at each append)."""
    return (x.first_ordinal, x.last_ordinal, x.user_text, x.assistant_text, x.tool_excerpt)


def _found(memoir: Memoir, word: str, **filters: Any) -> list[str]:
    """The hits' exchange ids, each session's id given as local's name for it."""
    names = {named_session_id("local", n): n for n in ("whole", "parts", "s")}
    ids = [h.exchange_id.partition(":") for h in memoir.search(word, mode="text", **filters)]
    return [f"{names[sid]}:{n}" for sid, _, n in ids]


@pytest.mark.parametrize("write", sorted(WRITES))
def test_a_lead_in_appended_before_its_prompt_is_found_in_the_first_exchange(
    write: str, home: Path, store: Store
) -> None:
    memoir = Memoir(Settings.from_env(home=home, embedder="none"), store)
    messages = _messages()
    for post in WRITES[write](memoir, "whole"):
        post(messages)
    for post in WRITES[write](memoir, "parts"):
        post(messages[:2])  # harness text only so far: archived, no exchange yet
        assert memoir.exchanges("parts") == []
        assert _found(memoir, "quetzalpipe") == ["whole:3"]
        post(messages[2:3])  # the prompt: the first exchange takes the lead-in
        post(messages[3:4])  # its reply: the exchange grows, rebuilt with the lead-in
        post(messages[4:])  # a second exchange, which never takes it
    parts = memoir.exchanges("parts")
    assert [_shape(x) for x in parts] == [_shape(x) for x in memoir.exchanges("whole")]
    first = parts[0]
    assert (first.id, first.user_text) == (f"{named_session_id('local', 'parts')}:3", ASK)
    for word in LEAD_WORDS:
        assert word in first.tool_excerpt and word not in first.user_text
        assert sorted(_found(memoir, word)) == ["parts:3", "whole:3"], word
        assert _found(memoir, word, filters=SearchFilters(role="user")) == []  # not the user's
    assert sorted(_found(memoir, "linter")) == ["parts:5", "whole:5"]


def test_a_lost_first_exchange_is_rebuilt_with_its_lead_in(
    home: Path, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``verify --repair`` builds lost exchanges again from the events, a page at a time
    (one event a page here): the first takes the lead-in as when it was written."""
    memoir = Memoir(Settings.from_env(home=home, embedder="none"), store)
    service.create_session(memoir, "local", session_id="s")
    service.append_messages(memoir, "local", "s", _messages())
    kept = memoir.exchanges("s")
    s = named_session_id("local", "s")  # the id local's session "s" is stored under
    with store._tx() as tx:  # type: ignore[attr-defined]
        pk = tx.run("SELECT pk FROM exchanges WHERE id = ?", (f"{s}:3",))[0][0]
        if store.backend == "sqlite":
            tx.run("DELETE FROM exchange_fts WHERE rowid = ?", (pk,))
        else:
            tx.run("DELETE FROM exchange_search WHERE exchange_pk = ?", (pk,))
        tx.run("DELETE FROM exchanges WHERE id = ?", (f"{s}:3",))
    assert _found(memoir, "quetzalpipe") == []
    monkeypatch.setattr(mend, "_EVENT_PAGE", 1)
    assert mend.rebuild_exchanges(store, s) is True
    assert memoir.exchanges("s") == kept
    assert _found(memoir, "quetzalpipe") == ["s:3"]


# --- end to end: a Codex rollout synced by the CLI ------------------------------------

SID = "0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def cli_home(
    request: pytest.FixtureRequest, home: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Path]:
    monkeypatch.setenv("MEMOIR_HOME", str(home))
    monkeypatch.setenv("MEMOIR_SUMMARY_QUIESCENCE_HOURS", "0")
    if request.param == "sqlite":
        yield home
        return
    with fresh_pg_schema() as url:
        monkeypatch.setenv("MEMOIR_DATABASE_URL", url)
        yield home


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> Any:
    code, out, err = run_cli(list(args), capsys)
    assert code == 0, err
    return json.loads(out)


def test_a_codex_lead_in_synced_is_found_by_text_and_never_the_users(
    cli_home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    w = CodexWriter(SID, cwd="/home/ann/code/xiuhcoatl")
    w.context(INSTRUCTIONS).context(ENVIRONMENT)
    w.user(ASK).assistant("The upload holds one connection for too long.")
    w.user(RULE).assistant("Understood.")
    path = tmp_path / "codex" / "2025" / "10" / "15" / f"rollout-2025-10-15T14-00-00-{SID}.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(w.bytes())
    report = _cli(capsys, "sync", "--source", str(tmp_path / "codex"), "--json")
    assert report["summaries"]["summarized"] == 1

    shown = _cli(capsys, "show", SID[:8], "--json")
    lead = [(e["kind"], e["payload"].get("harness")) for e in shown["events"][:2]]
    assert lead == [("harness", "user_instructions"), ("harness", "environment_context")]
    first = shown["events"][2]["ordinal"]
    for word in ("quetzalpipe", "tlalocbucket"):
        hits = _cli(capsys, "search", word, "--mode", "text", "--json")
        assert [h["exchange_id"] for h in hits] == [f"{SID}:{first}"], word
        assert word in hits[0]["snippet"]
        assert _cli(capsys, "search", word, "--mode", "text", "--role", "user", "--json") == []

    _cli(capsys, "remember", SID[:8], "--json")  # sync's memory pass may have kept it first
    items = _cli(capsys, "memories", "list", "--json")["items"]
    assert [(i["content"], i["sources"][0]["quote"]) for i in items] == [(RULE, RULE)]
    context = _cli(capsys, "memories", "context", "--json")["text"]
    summary = _cli(capsys, "show", SID[:8], "--json")["summary"]
    assert summary.startswith(ASK.rstrip("?")), summary
    for words in (*LEAD_WORDS, "House rules", "deploy", "environment_context"):
        assert words not in context, words
        assert words not in summary, words
