"""Fresh is findable in every mode (issue 34.1): an exchange stored a moment ago by any
write path, matching a query exactly, ranks in the default mode where text mode ranks it
— in a home whose older, near-miss exchanges all have vectors.

Three homes per write path and backend: the hash embedder with embedding on write (the
fresh exchange has its vector when the write returns), the same with it switched off (the
fresh exchange has none: fusion must treat it as a text-only candidate), and no embedder
(text only)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from memoir import search as backfill
from memoir import service
from memoir.app import Memoir
from memoir.config import Settings
from memoir.demo import ClaudeWriter
from memoir.model.event import named_session_id
from memoir.server import create_app
from memoir.store.port import Store


@pytest.fixture(autouse=True)
def _embedding_on_write(monkeypatch: pytest.MonkeyPatch) -> None:
    """On, as it is outside the test suite (tests/conftest.py turns it off)."""
    monkeypatch.setattr(backfill, "WRITE_MAX", 256)


QUERY = "invoice export timing out"
FRESH_PROMPT = "the nightly invoice export to the Zephyrine bucket keeps timing out"
FRESH_REPLY = "Let us raise the upload timeout and split the export by month."
# older turns sharing most of the query's words (none holds them all), embedded
NEAR_MISSES = [
    ("the invoice export finished early today, no problems at all", "Good to hear."),
    ("our nightly backup keeps timing out on the bucket upload", "Try a larger timeout."),
    ("exporting the invoice list to csv for accounting", "Done, saved as invoices.csv."),
    ("the export job for reports keeps timing out since Monday", "Check the worker logs."),
    ("invoice numbering is off by one after the export", "Fixed the sequence."),
    ("timing out again on the staging deploy", "Retry with a longer deadline."),
]

HOMES = ["hash", "hash-write-off", "none"]


@pytest.fixture(params=HOMES)
def memoir(request: pytest.FixtureRequest, home: Path, store: Store) -> Iterator[Memoir]:
    """A Memoir on ``store`` whose near-miss exchanges are stored and (with an embedder)
    embedded, before any fresh write."""
    choice = str(request.param)
    settings = Settings.from_env(
        home=home,
        embedder="none" if choice == "none" else "hash",
        embed_on_write=choice == "hash",
    )
    made = Memoir(settings, store)
    _store_near_misses(made)
    if choice != "none":
        service.embed_pending(made)
        assert service.embed_pending(made).embedded == 0  # every near miss has its vector
    yield made


def _store_near_misses(memoir: Memoir) -> None:
    """Each near miss in a session of its own, as stale turns of other days are."""
    for n, (prompt, reply) in enumerate(NEAR_MISSES):
        memoir.append(
            f"older-{n}",
            [{"role": "user", "content": prompt}, {"role": "assistant", "content": reply}],
        )


def _via_sync(memoir: Memoir, tmp: Path) -> str:
    session = "5e5510f0-aaaa-4bbb-8ccc-000000000001"
    writer = ClaudeWriter(session, cwd="/home/ann/code/billing")
    writer.user("Morning.").assistant("Morning! What are we on today?")
    writer.user(FRESH_PROMPT).assistant(FRESH_REPLY)
    folder = tmp / "projects" / "-home-ann-code-billing"
    folder.mkdir(parents=True)
    (folder / f"{session}.jsonl").write_bytes(writer.bytes())
    memoir.sync(sources=tmp / "projects")
    [exchange] = [x for x in memoir.exchanges(session) if FRESH_PROMPT in x.user_text]
    return exchange.id


def _messages() -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": FRESH_PROMPT},
        {"role": "assistant", "content": FRESH_REPLY},
    ]


def _via_append(memoir: Memoir, tmp: Path) -> str:
    memoir.append("fresh", _messages())
    return memoir.exchanges("fresh")[0].id


def _via_append_messages(memoir: Memoir, tmp: Path) -> str:
    service.create_session(memoir, "local", session_id="fresh")
    assert service.append_messages(memoir, "local", "fresh", _messages()) == (2, 0)
    return memoir.exchanges("fresh")[0].id


def _via_http(memoir: Memoir, tmp: Path) -> str:
    key = memoir.store.users.new_key("local")  # the HTTP user is the one searching here
    headers = {"Authorization": f"Bearer {key}"}
    with TestClient(create_app(memoir), raise_server_exceptions=True) as client:
        made = client.post("/api/sessions", json={"id": "fresh"}, headers=headers)
        assert made.status_code == 201, made.text
        url = "/api/sessions/fresh/events"
        added = client.post(url, json={"messages": _messages()}, headers=headers)
        assert added.status_code in (200, 201), added.text
    return memoir.exchanges("fresh")[0].id


WRITES: dict[str, Callable[[Memoir, Path], str]] = {
    "sync": _via_sync,
    "append": _via_append,
    "append_messages": _via_append_messages,
    "http": _via_http,
}


@pytest.mark.parametrize("write", sorted(WRITES))
def test_a_fresh_exact_match_ranks_in_the_default_mode_where_text_ranks_it(
    memoir: Memoir, write: str, tmp_path: Path
) -> None:
    fresh = WRITES[write](memoir, tmp_path)
    text = [h.exchange_id for h in memoir.search(QUERY, mode="text", limit=7)]
    default = [h.exchange_id for h in memoir.search(QUERY, limit=7)]
    assert text[0] == fresh
    assert default[0] == fresh, default
    embedder = service.embedder(memoir)
    if embedder is None:
        return
    stored = memoir.store.embeddings.vectors(embedder.name, [fresh])
    # embedding on write gave it its vector before the write returned; switched off, the
    # fusion alone keeps it first, and `memoir embed` is what embeds it
    assert (fresh in stored) is memoir.settings.embed_on_write
    if not memoir.settings.embed_on_write:
        assert service.embed_pending(memoir).embedded >= 1
        assert memoir.search(QUERY, limit=7)[0].exchange_id == fresh


def test_a_failing_embedder_never_fails_the_write(
    home: Path, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    memoir = Memoir(Settings.from_env(home=home, embedder="hash"), store)

    def broken(*args: object, **kwargs: object) -> object:
        raise RuntimeError("the model crashed")

    monkeypatch.setattr("memoir.search.embedders.HashEmbedder.embed_with_tokens", broken)
    result = memoir.append("fresh", _messages())
    assert result.added == 2
    assert memoir.store.embeddings.backlog("hash-256", 10) != []  # left for memoir embed
    fresh = named_session_id("local", "fresh")  # the id local's "fresh" is stored under
    assert [h.exchange_id for h in memoir.search(QUERY)] == [f"{fresh}:1"]


def test_embedding_on_write_is_bounded_and_newest_first(
    home: Path, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("memoir.search.WRITE_MAX", 3)
    memoir = Memoir(Settings.from_env(home=home, embedder="hash"), store)
    turns = [
        message
        for n in range(5)
        for message in (
            {"role": "user", "content": f"question {n}"},
            {"role": "assistant", "content": f"answer {n}"},
        )
    ]
    memoir.append("long", turns)
    ids = [x.id for x in memoir.exchanges("long")]
    stored = memoir.store.embeddings.vectors("hash-256", ids)
    assert sorted(stored) == sorted(ids[-3:])  # the newest three; the rest wait
    assert {xid for xid, _ in memoir.store.embeddings.backlog("hash-256", 10)} == set(ids[:2])


def test_the_cli_sync_embeds_on_write(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from cli_run import run_cli

    monkeypatch.setenv("MEMOIR_HOME", str(home))
    monkeypatch.setenv("MEMOIR_EMBEDDER", "hash")
    with Memoir.at(home) as memoir:
        _store_near_misses(memoir)
        service.embed_pending(memoir)
    session = "5e5510f0-aaaa-4bbb-8ccc-000000000002"
    folder = tmp_path / "projects" / "-home-ann-code-billing"
    folder.mkdir(parents=True)
    writer = ClaudeWriter(session).user(FRESH_PROMPT).assistant(FRESH_REPLY)
    (folder / f"{session}.jsonl").write_bytes(writer.bytes())
    code, out, err = run_cli(
        ["sync", "--source", str(tmp_path / "projects"), "--no-summaries", "--json"], capsys
    )
    assert code == 0, err
    code, out, err = run_cli(["search", QUERY, "--json", "--limit", "7"], capsys)
    assert code == 0, err
    import json

    hits = json.loads(out)
    hits = hits["hits"] if isinstance(hits, dict) else hits
    assert hits[0]["session_id"] == session
    with Memoir.at(home) as memoir:
        assert f"{session}:1" in memoir.store.embeddings.vectors("hash-256", [f"{session}:1"])


@pytest.mark.parametrize(
    ("raw", "expected"),
    [(None, True), ("1", True), ("on", True), ("0", False), ("off", False), ("False", False)],
)
def test_the_embed_on_write_setting(raw: str | None, expected: bool) -> None:
    env = {} if raw is None else {"MEMOIR_EMBED_ON_WRITE": raw}
    assert Settings.from_env(env).embed_on_write is expected
