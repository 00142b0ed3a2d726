"""Migration v14: project names re-derived from what each session stored, on both
backends, from a database at v13 with rows in it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from store_builders import T0, apply_before_v16, batch, conversation, source

from conftest import fresh_pg_schema
from memoir.memory.item_store import memory_parts
from memoir.model import Harness, Session
from memoir.store import SearchFilters, Store
from memoir.store.migrations import CURRENT_VERSION, old_safe, rederive

Opener = Callable[[int | None], Store]


@pytest.mark.parametrize(
    ("project", "harness", "path", "cwd", "expected"),
    [
        # the folder on the path whose old safe form is the stored name
        ("______", "generic", "/src/проект/a.jsonl", None, "проект"),
        ("______", "generic", "/src/данные/b.jsonl", None, "данные"),
        ("caf_", "claude-code", "/src/café/x.jsonl", None, "café"),
        ("my_app", "generic", "/src/my app/x.jsonl", None, "my app"),
        ("proj", "claude-code", "/src/proj/x.jsonl", None, "proj"),  # unchanged
        # a subagent's file lies deeper: the project folder is still on its path
        ("__", "claude-code", "/src/项目/u1/subagents/agent-1.jsonl", None, "项目"),
        # Codex: from the cwd
        ("-home-ann-------", "codex", "/c/2025/r.jsonl", "/home/ann/проект", "-home-ann-проект"),
        ("-home-ann-app", "codex", "/c/2025/r.jsonl", "/home/ann/app", "-home-ann-app"),
        ("codex", "codex", "/c/2025/r.jsonl", None, "codex"),
        # Claude Code's lossy folder of the cwd: from the cwd
        (
            "-home-ann-------",
            "claude-code",
            "/cl/-home-ann-------/s.jsonl",
            "/home/ann/данные",
            "-home-ann-данные",
        ),
        # cannot be told: kept
        ("______", "generic", None, None, "______"),
        ("______", "generic", "/elsewhere/x.jsonl", None, "______"),
        ("______", "generic", "/src/проект/данные/x.jsonl", None, "______"),  # two candidates
        ("_", "generic", "/src/x.jsonl", None, "_"),
    ],
)
def test_rederive(
    project: str, harness: str, path: str | None, cwd: str | None, expected: str
) -> None:
    assert rederive(project, harness, path, cwd) == expected


def test_old_safe_is_the_pre_v14_scheme() -> None:
    assert old_safe("проект") == old_safe("данные") == "______"
    assert old_safe("../etc") == "_etc" and old_safe("..") == "_"


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def opener(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Opener]:
    opened: list[Store] = []
    if request.param == "sqlite":
        from memoir.store.sqlite_store import SQLiteStore

        def open_sqlite(target: int | None) -> Store:
            opened.append(SQLiteStore(tmp_path / "old.db", target_version=target))
            return opened[-1]

        yield open_sqlite
    else:
        from memoir.store.postgres_store import PostgresStore

        with fresh_pg_schema() as url:

            def open_pg(target: int | None) -> Store:
                opened.append(PostgresStore(url, target_version=target))
                return opened[-1]

            try:
                yield open_pg
            finally:
                for s in opened:
                    s.close()
            return
    for s in opened:
        s.close()


def _stored(
    store: Store, sid: str, project: str, harness: Harness, path: str | None, cwd: str | None
) -> None:
    session = Session(
        id=sid,
        project=project,
        harness=harness,
        source_path=path,
        cwd=cwd,
        created_at=T0,
        updated_at=T0,
    )
    events = conversation(sid, [(f"question {sid} about ledgers", f"answer {sid}", None)])
    src = None
    if path is not None:
        src = replace(
            source(sid, path),
            harness=harness.value,
            archive_path=f"/home/ann/.memoir/archive/{project}/{sid}.jsonl",
            parser_state={"format": "generic", "project": project, "subagent": False},
        )
    apply_before_v16(store, batch(session, events, source=src))


def _fill_v13(store: Store) -> None:
    assert store.schema_version() == 13
    _stored(store, "a", "______", Harness.GENERIC, "/src/проект/a.jsonl", None)
    _stored(store, "b", "______", Harness.GENERIC, "/src/данные/b.jsonl", None)
    _stored(store, "c", "-home-ann-------", Harness.CODEX, "/c/r-c.jsonl", "/home/ann/проект")
    _stored(store, "e", "proj", Harness.CLAUDE_CODE, "/src/proj/e.jsonl", None)
    _stored(store, "f", "______", Harness.GENERIC, None, None)  # nothing to derive from
    with store._db.tx() as tx:  # type: ignore[attr-defined]
        tx.run(
            "INSERT INTO memory_items (id, session_id, project, scope, kind, content, "
            "normalized, operation_id, created_at, owner, scope_key) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                "m1",
                "a",
                "______",
                "project",
                "fact",
                "uses ledgers",
                "uses ledgers",
                "op1",
                tx.time(T0),
                "local",
                "______",
            ),
        )
    memory_parts(store).items.switch_project("______", disabled=True)


def test_v14_renames_projects_everywhere_and_keeps_every_session(opener: Opener) -> None:
    old = opener(13)
    _fill_v13(old)
    old.close()
    store = opener(None)
    assert store.schema_version() == CURRENT_VERSION
    projects = {sid: store.sessions.get(sid).project for sid in "abcef"}  # type: ignore[union-attr]
    assert projects == {
        "a": "проект",
        "b": "данные",
        "c": "-home-ann-проект",
        "e": "proj",
        "f": "______",
    }
    # a resumed sync names the session by its source's parser state
    state = store.ingest.source("/src/проект/a.jsonl")
    assert state is not None and state.parser_state["project"] == "проект"
    # the archive copy stays where it was (the migration cannot reach the archive)
    assert state.archive_path == "/home/ann/.memoir/archive/______/a.jsonl"
    # the index rows were rewritten: the project filter selects one of the two
    hits = store.index.search("ledgers", SearchFilters(project="проект"), 10)
    assert [h.exchange_id for h in hits] == ["a:1"]
    kept = store.index.search("ledgers", SearchFilters(project="______"), 10)
    assert [h.exchange_id for h in kept] == ["f:1"]
    item = memory_parts(store).items.get("m1")
    assert item is not None and (item.project, item.scope_key) == ("проект", "проект")
    assert memory_parts(store).items.disabled_projects() == ["______", "данные", "проект"]
    assert store.stats()["sessions"] == 5
    assert store.integrity_problems() == []
