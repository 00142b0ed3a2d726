"""sync end to end against a real store (``store``: SQLite, and PostgreSQL when the test
cluster is configured): archive, resume, growth, rewrites, policy."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from memoir.config import Settings
from memoir.demo import ClaudeWriter, CodexWriter, tool_use_block
from memoir.ingest import batches as batches_module
from memoir.ingest import sync as sync_module
from memoir.ingest.batches import NO_INDEX_MARKER, SyncReport
from memoir.store import Store, open_store
from memoir.summaries.persist import SummaryUpkeep, open_summary_store

TINY = "67a8478e-78dc-44ab-82ea-f65c8ead85f6"
SHORT = "982581eb-41b9-46da-86c1-ac34168117a8"
UUID_A = "aaaaaaaa-1111-4222-8333-444444444444"


def upkeep(settings: Settings, store: Store) -> SummaryUpkeep:
    """The observer ``Memoir.sync`` hands the engine: the summaries' upkeep."""
    return SummaryUpkeep(settings.archive_dir, open_summary_store(settings, store), store)


def sync(settings: Settings, store: Store, **options: Any) -> SyncReport:
    """The ingest engine's sync, told what it rewrites or removes as ``Memoir.sync`` has it."""
    return sync_module.sync(settings, store, observer=upkeep(settings, store), **options)


@pytest.fixture
def src(tmp_path: Path) -> Path:
    path = tmp_path / "projects"
    path.mkdir()
    return path


@pytest.fixture
def cfg(home: Path, src: Path) -> Settings:
    return Settings.from_env({"MEMOIR_HOME": str(home)}, sources=(src,))


def _put(src: Path, project: str, name: str, data: bytes) -> Path:
    path = src / project / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def _append(path: Path, data: bytes) -> None:
    with open(path, "ab") as fp:
        fp.write(data)


def test_fixtures_sync_archive_and_noop(
    cfg: Settings, store: Store, src: Path, claude_fixtures: Path
) -> None:
    (src / "-home-ann-app").mkdir()
    for f in claude_fixtures.glob("*.jsonl"):
        shutil.copy(f, src / "-home-ann-app" / f.name)
    report = sync(cfg, store)
    assert (report.files_scanned, report.files_indexed, report.files_copied) == (3, 3, 3)
    assert report.exchanges_added == 3 and report.lines_skipped == 0
    assert len(store.exchanges.of(TINY)) == 2
    assert len(store.exchanges.of(SHORT)) == 1
    assert store.exchanges.of("medium-conversation") == []
    archive = cfg.archive_dir / "-home-ann-app"
    assert (archive / f"{TINY}.jsonl").read_bytes() == (
        claude_fixtures / "tiny-conversation.jsonl"
    ).read_bytes()
    stats = store.stats()
    assert (stats["sessions"], stats["exchanges"], stats["projects"]) == (3, 3, 1)
    again = sync(cfg, store)
    assert (again.files_unchanged, again.files_indexed, again.events_added) == (3, 0, 0)


def test_unchanged_files_are_not_opened(
    cfg: Settings, store: Store, src: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _put(src, "p", f"{UUID_A}.jsonl", ClaudeWriter(UUID_A).user("hello").bytes())
    sync(cfg, store)

    def boom(*args: object) -> None:
        raise AssertionError("opened an unchanged file")

    monkeypatch.setattr(sync_module, "ingest_file", boom)
    assert sync(cfg, store).files_unchanged == 1


def test_growth_resumes_and_updates_the_open_exchange(
    cfg: Settings, store: Store, src: Path, claude_fixtures: Path
) -> None:
    path = _put(src, "p", "tiny.jsonl", (claude_fixtures / "tiny-conversation.jsonl").read_bytes())
    sync(cfg, store)
    before = store.exchanges.of(TINY)
    # the episodic-memory growth scenario: 8 237 → 41 069 bytes, no new exchange
    _append(path, (claude_fixtures / "medium-conversation.jsonl").read_bytes())
    grown = sync(cfg, store)
    assert grown.bytes_indexed == 41_069 - 8_237
    assert (grown.exchanges_added, grown.files_copied) == (0, 1)
    state = store.ingest.source(str(path))
    assert state is not None and (state.offset, state.size, state.line_count) == (
        41_069,
        41_069,
        30,
    )
    archived = Path(state.archive_path or "")
    assert archived.stat().st_size == 41_069
    # now the assistant continues the last exchange: same id, updated in place
    more = ClaudeWriter(TINY).assistant("One more thing: keep the tests green.").bytes()
    _append(path, more)
    report = sync(cfg, store)
    assert (report.exchanges_added, report.exchanges_updated) == (0, 1)
    after = store.exchanges.of(TINY)
    assert [x.id for x in after] == [x.id for x in before]
    assert after[-1].assistant_text.endswith("One more thing: keep the tests green.")
    ordinals = [e.ordinal for e in store.events.of(TINY)]
    assert ordinals == list(range(1, len(ordinals) + 1))


def test_partial_line_is_indexed_once_complete(cfg: Settings, store: Store, src: Path) -> None:
    line = ClaudeWriter(UUID_A).user("a question about caching").bytes()
    path = _put(src, "p", f"{UUID_A}.jsonl", line[:40])
    assert sync(cfg, store).events_added == 0
    _append(path, line[40:])
    assert sync(cfg, store).events_added == 1
    sync(cfg, store)
    assert [e.text for e in store.events.of(UUID_A)] == ["a question about caching"]
    archived = cfg.archive_dir / "p" / f"{UUID_A}.jsonl"
    assert archived.read_bytes() == line


def test_rewritten_file_is_reindexed_and_old_copy_kept(
    cfg: Settings, store: Store, src: Path
) -> None:
    w = ClaudeWriter(UUID_A).user("first version").assistant("answer one")
    path = _put(src, "p", f"{UUID_A}.jsonl", w.bytes())
    sync(cfg, store)
    path.write_bytes(ClaudeWriter(UUID_A).user("rewritten").bytes())  # shrunk
    report = sync(cfg, store)
    assert report.files_reset == 1
    assert [e.text for e in store.events.of(UUID_A)] == ["rewritten"]
    assert [x.user_text for x in store.exchanges.of(UUID_A)] == ["rewritten"]
    kept = list((cfg.archive_dir / "p" / ".replaced").iterdir())
    assert len(kept) == 1 and b"first version" in kept[0].read_bytes()
    # same size, different indexed bytes: also a rewrite
    data = path.read_bytes()
    path.write_bytes(data.replace(b"rewritten", b"REWRITTEN"))
    assert sync(cfg, store).files_reset == 1
    assert [e.text for e in store.events.of(UUID_A)] == ["REWRITTEN"]


def test_bad_lines_are_counted_and_listed(cfg: Settings, store: Store, src: Path) -> None:
    good1 = ClaudeWriter(UUID_A).user("before the junk").bytes()
    good2 = ClaudeWriter(UUID_A).user("after the junk").bytes()
    junk = b'{"type":"user","mess\n' + b"\xff\xfe\n" + b'{"type":"novel"}\n'
    path = _put(src, "p", f"{UUID_A}.jsonl", good1 + junk + good2)
    report = sync(cfg, store)
    assert report.lines_skipped == 3
    assert [e.text for e in store.events.of(UUID_A)] == ["before the junk", "after the junk"]
    rows = store.ingest.skipped(str(path))
    assert [(r.line, r.reason) for r in rows] == [
        (2, "malformed_json"),
        (3, "invalid_utf8"),
        (4, "unknown_type"),
    ]
    assert (cfg.archive_dir / "p" / f"{UUID_A}.jsonl").read_bytes() == path.read_bytes()


def test_binary_file_is_ignored_counted_and_skipped_cheaply(
    cfg: Settings, store: Store, src: Path
) -> None:
    _put(src, "p", "core.jsonl", b"\x7fELF\x00\x00\x01\x02" * 100)
    report = sync(cfg, store)
    assert (report.files_ignored, report.lines_skipped, report.files_indexed) == (1, 0, 0)
    assert not cfg.archive_dir.exists() or not any(cfg.archive_dir.rglob("*.jsonl"))
    assert sync(cfg, store).files_ignored == 1
    assert store.stats()["sessions"] == 0


def test_no_index_marker_removes_the_session(cfg: Settings, store: Store, src: Path) -> None:
    w = ClaudeWriter(UUID_A).user("my salary negotiation notes").assistant("noted")
    path = _put(src, "p", f"{UUID_A}.jsonl", w.bytes())
    sync(cfg, store)
    assert store.sessions.get(UUID_A) is not None
    summary = cfg.archive_dir / "p" / f"{UUID_A}-summary.txt"
    summary.write_text("__COVERAGE__ {}\nmy salary negotiation notes")
    _append(path, ClaudeWriter(UUID_A).user(f"{NO_INDEX_MARKER} forget this one").bytes())
    report = sync(cfg, store)
    assert report.sessions_removed == [UUID_A]
    assert store.sessions.get(UUID_A) is None
    assert not (cfg.archive_dir / "p" / f"{UUID_A}.jsonl").exists()
    assert not summary.exists(), "the summary of a no-index conversation must go too"
    _append(path, ClaudeWriter(UUID_A).user("still private").bytes())
    sync(cfg, store)
    assert store.sessions.get(UUID_A) is None


class _Told:
    """An observer that notes what the index held when it was told."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.calls: list[tuple[str, str, object]] = []

    def rewritten(self, session_id: str) -> None:
        texts = [e.text for e in self.store.events.of(session_id)]
        self.calls.append(("rewritten", session_id, texts))

    def removed(self, session_id: str, project: str) -> None:
        gone = self.store.sessions.get(session_id) is None
        self.calls.append(("removed", session_id, (project, gone)))


def test_the_observer_is_told_as_each_change_is_made(
    cfg: Settings, store: Store, src: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Told inside the sync, right after the change is committed; a removal a sync did not
    get to remember (it stopped before saving its ignored list) is told again."""
    told = _Told(store)
    path = _put(src, "p", f"{UUID_A}.jsonl", ClaudeWriter(UUID_A).user("first version").bytes())
    sync_module.sync(cfg, store, observer=told)
    assert told.calls == []  # a new file: nothing derived from it yet
    path.write_bytes(ClaudeWriter(UUID_A).user("rewritten").bytes())  # shrunk
    sync_module.sync(cfg, store, observer=told)
    assert told.calls == [("rewritten", UUID_A, ["rewritten"])]  # the new rows are in
    told.calls.clear()
    _append(path, ClaudeWriter(UUID_A).user(f"{NO_INDEX_MARKER} forget it").bytes())

    def stop(self: object) -> None:
        raise KeyboardInterrupt  # the sync stops before it remembers the file as ignored

    monkeypatch.setattr(sync_module.IgnoredFiles, "save", stop)
    with pytest.raises(KeyboardInterrupt):
        sync_module.sync(cfg, store, observer=told)
    assert told.calls == [("removed", UUID_A, ("p", True))]  # the rows were gone first
    monkeypatch.undo()
    sync_module.sync(cfg, store, observer=told)
    assert told.calls == [("removed", UUID_A, ("p", True))] * 2  # told again
    sync_module.sync(cfg, store, observer=told)
    assert len(told.calls) == 2  # remembered now: left alone


def test_marker_from_the_assistant_does_not_count(cfg: Settings, store: Store, src: Path) -> None:
    w = ClaudeWriter(UUID_A).user("what is the marker?").assistant(f"It is {NO_INDEX_MARKER}.")
    _put(src, "p", f"{UUID_A}.jsonl", w.bytes())
    sync(cfg, store)
    assert store.sessions.get(UUID_A) is not None


def test_excluded_project_is_not_archived(home: Path, src: Path) -> None:
    cfg = Settings.from_env(
        {"MEMOIR_HOME": str(home), "MEMOIR_EXCLUDE_PROJECTS": "secret"}, sources=(src,)
    )
    _put(src, "-home-ann-secret", f"{UUID_A}.jsonl", ClaudeWriter(UUID_A).user("x").bytes())
    store = open_store(cfg)
    try:
        report = sync(cfg, store)
        assert (report.files_ignored, report.files_indexed) == (1, 0)
        assert store.stats()["sessions"] == 0
    finally:
        store.close()
    assert not (cfg.archive_dir / "-home-ann-secret").exists()


def test_deleted_source_keeps_archive_and_index(cfg: Settings, store: Store, src: Path) -> None:
    path = _put(src, "p", f"{UUID_A}.jsonl", ClaudeWriter(UUID_A).user("keep me").bytes())
    sync(cfg, store)
    path.unlink()
    report = sync(cfg, store)
    assert report.files_scanned == 0
    assert [e.text for e in store.events.of(UUID_A)] == ["keep me"]
    assert (cfg.archive_dir / "p" / f"{UUID_A}.jsonl").exists()


def test_subagent_codex_and_generic(cfg: Settings, store: Store, src: Path, tmp_path: Path) -> None:
    parent = (
        ClaudeWriter(UUID_A)
        .user("delegate")
        .assistant(tool_use_block("t1", "Task", {"prompt": "look"}))
    )
    _put(src, "p", f"{UUID_A}.jsonl", parent.bytes())
    sub = ClaudeWriter(UUID_A, sidechain=True).user("look").assistant("found it")
    _put(src, "p", f"{UUID_A}/subagents/agent-1.jsonl", sub.bytes())
    codex_root = tmp_path / "sessions"
    cx = CodexWriter("cx-1", cwd="/home/ann/app").user("hi codex").assistant("hello")
    _put(codex_root, "2025/10/15", "rollout-2025-10-15T10-00-00-cx-1.jsonl", cx.bytes())
    generic_root = tmp_path / "generic"
    chat = b'[{"role":"user","content":"generic hello"},{"role":"assistant","content":"hi"}]'
    chat_path = _put(generic_root, "support", "chat-7.json", chat)
    report = sync(cfg, store, sources=[src, codex_root, generic_root])
    assert report.files_indexed == 4
    sub_session = store.sessions.get(f"{UUID_A}-agent-1")
    assert sub_session is not None and sub_session.flags.subagent
    assert sub_session.project == "p"
    codex = store.sessions.get("cx-1")
    assert codex is not None and codex.project == "-home-ann-app"
    assert (cfg.archive_dir / "-home-ann-app" / "cx-1.jsonl").exists()
    assert store.sessions.get("chat-7") is not None
    chat_path.write_bytes(chat[:-1] + b',{"role":"user","content":"again"}]')
    sync(cfg, store, sources=[generic_root])
    assert [x.user_text for x in store.exchanges.of("chat-7")] == ["generic hello", "again"]


def test_same_session_id_in_two_files_gets_two_sessions(
    cfg: Settings, store: Store, src: Path
) -> None:
    _put(src, "p", "one.jsonl", ClaudeWriter(UUID_A).user("first file").bytes())
    _put(src, "p", "two.jsonl", ClaudeWriter(UUID_A).user("second file").bytes())
    sync(cfg, store)
    sessions = store.sessions.recent()
    assert len(sessions) == 2
    assert sorted(len(store.events.of(s.session.id)) for s in sessions) == [1, 1]


def test_archive_garbage_from_a_crash_is_truncated(cfg: Settings, store: Store, src: Path) -> None:
    first = ClaudeWriter(UUID_A).user("one").bytes()
    path = _put(src, "p", f"{UUID_A}.jsonl", first)
    sync(cfg, store)
    archived = cfg.archive_dir / "p" / f"{UUID_A}.jsonl"
    _append(archived, b"half-written junk")
    second = ClaudeWriter(UUID_A).user("two").bytes()
    _append(path, second)
    sync(cfg, store)
    assert archived.read_bytes() == first + second
    archived.unlink()  # deleted by hand: the next growth re-copies everything
    _append(path, ClaudeWriter(UUID_A).user("three").bytes())
    sync(cfg, store)
    assert archived.read_bytes() == path.read_bytes()


def test_lone_surrogate_reaches_the_store(cfg: Settings, store: Store, src: Path) -> None:
    data = ClaudeWriter(UUID_A).user("half an emoji: X").bytes().replace(b"X", b"\\ud83d")
    _put(src, "p", f"{UUID_A}.jsonl", data)
    report = sync(cfg, store)
    assert (report.events_added, report.lines_skipped) == (1, 0)
    assert store.events.of(UUID_A)[0].text.startswith("half an emoji: ")


def test_a_failing_file_does_not_stop_the_others(
    cfg: Settings, store: Store, src: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memoir.ingest import plan as plan_module

    real = plan_module.plan_file

    def flaky(fd: int, cand: object, *args: object, **kwargs: object) -> object:
        if "bad" in str(cand.path):  # type: ignore[attr-defined]
            raise RuntimeError("reader bug")
        return real(fd, cand, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(sync_module, "plan_file", flaky)
    _put(src, "p", "bad.jsonl", ClaudeWriter(UUID_A).user("x").bytes())
    _put(src, "p", "good.jsonl", ClaudeWriter("bbbb").user("y").bytes())
    report = sync(cfg, store)
    assert report.files_indexed == 1
    assert len(report.errors) == 1 and "RuntimeError: reader bug" in report.errors[0]
    assert store.sessions.get("bbbb") is not None


def test_unexcluding_a_project_indexes_it(home: Path, src: Path) -> None:
    _put(src, "-home-ann-secret", f"{UUID_A}.jsonl", ClaudeWriter(UUID_A).user("x").bytes())
    env = {"MEMOIR_HOME": str(home), "MEMOIR_EXCLUDE_PROJECTS": "secret"}
    excluding = Settings.from_env(env, sources=(src,))
    store = open_store(excluding)
    try:
        assert sync(excluding, store).files_ignored == 1
        assert sync(excluding, store).files_ignored == 1  # still excluded, skipped on stat
        included = Settings.from_env({"MEMOIR_HOME": str(home)}, sources=(src,))
        assert sync(included, store).files_indexed == 1
        assert store.sessions.get(UUID_A) is not None
    finally:
        store.close()


def test_an_append_moves_the_project_folder_mtime(cfg: Settings, store: Store, src: Path) -> None:
    """The summary scan trusts folder mtimes (archive.BUMPS_FOLDER_MTIME)."""
    import os

    w = ClaudeWriter(UUID_A).user("first").assistant("one")
    path = _put(src, "p", f"{UUID_A}.jsonl", w.bytes())
    sync(cfg, store)
    folder = cfg.archive_dir / "p"
    os.utime(folder, ns=(1_000_000_000, 1_000_000_000))
    _append(path, ClaudeWriter(UUID_A).user("second").assistant("two").bytes())
    sync(cfg, store)
    assert folder.stat().st_mtime_ns > 1_000_000_000


def test_a_first_record_longer_than_the_head_is_detected_from_the_next(
    cfg: Settings, store: Store, src: Path
) -> None:
    from memoir.ingest.plan import HEAD_BYTES

    pasted = "log line 12345 " * (HEAD_BYTES // 10)  # one prompt well over the head
    path = _put(src, "p", f"{UUID_A}.jsonl", ClaudeWriter(UUID_A).user(pasted).bytes())
    report = sync(cfg, store)
    assert (report.files_indexed, report.files_ignored) == (0, 1)  # nothing after it yet
    _append(path, ClaudeWriter(UUID_A).assistant("sigma reply").user("q later").bytes())
    report = sync(cfg, store)
    assert (report.files_indexed, report.files_ignored) == (1, 0)
    texts = [e.text for e in store.events.of(UUID_A)]
    assert texts[0] == pasted and "sigma reply" in texts and "q later" in texts
    assert (cfg.archive_dir / "p" / f"{UUID_A}.jsonl").read_bytes() == path.read_bytes()


def test_a_file_name_that_is_not_utf8_is_resumed_like_any_other(
    cfg: Settings, store: Store, src: Path
) -> None:
    folder = src / "p"
    folder.mkdir()
    raw = os.fsencode(folder) + b"/caf\xe9.jsonl"
    with open(raw, "wb") as fp:
        fp.write(ClaudeWriter("cafe").user("first words").bytes())
    first = sync(cfg, store)
    assert first.files_indexed == 1 and first.errors == []
    with open(raw, "ab") as fp:
        fp.write(ClaudeWriter("cafe").user("grown words").bytes())
    second = sync(cfg, store)
    assert second.errors == [] and second.events_added == 1
    assert [p.rsplit("/", 1)[1] for p in store.ingest.sources()] == ["caf\\xe9.jsonl"]
    assert sync(cfg, store).files_unchanged == 1


def test_a_folder_that_cannot_be_listed_is_reported(
    cfg: Settings, store: Store, src: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib

    discover = importlib.import_module("memoir.ingest.discover")

    _put(src, "open", "a.jsonl", ClaudeWriter("aaaa").user("x").bytes())
    _put(src, "locked", "b.jsonl", ClaudeWriter("bbbb").user("y").bytes())
    real = os.scandir

    def scandir(path: str) -> object:
        if str(path).endswith("locked"):
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)

    monkeypatch.setattr(discover.os, "scandir", scandir)
    report = sync(cfg, store)
    assert report.files_indexed == 1
    assert report.errors == [f"{src / 'locked'}: folder not readable: Permission denied"]


@pytest.mark.parametrize("indent", [None, 2])
def test_a_json_list_that_grows_is_read_on_not_rewritten(
    cfg: Settings, store: Store, src: Path, indent: int | None
) -> None:
    import json

    path = src / "chats" / "team.json"
    path.parent.mkdir()
    messages: list[dict[str, str]] = []
    added = []
    for n in range(4):
        messages += [
            {"role": "user", "content": f"q{n}"},
            {"role": "assistant", "content": f"a{n}"},
        ]
        path.write_text(json.dumps(messages, indent=indent))
        report = sync(cfg, store)
        assert report.files_reset == 0 and report.errors == []
        added.append(report.exchanges_added)
    assert added == [1, 1, 1, 1]
    texts = [e.text for e in store.events.of("team")]
    assert texts == [m["content"] for m in messages]
    archived = cfg.archive_dir / "chats" / "team.jsonl"
    archive = archived if archived.exists() else next(cfg.archive_dir.glob("chats/team*"))
    assert archive.read_bytes() == path.read_bytes()
    assert not list(cfg.archive_dir.rglob(".replaced/*"))
    path.write_text(json.dumps([{"role": "user", "content": "rewritten"}], indent=indent))
    report = sync(cfg, store)
    assert report.files_reset == 1
    assert [e.text for e in store.events.of("team")] == ["rewritten"]


def test_a_moved_transcript_is_read_on_under_its_new_path(
    cfg: Settings, store: Store, src: Path
) -> None:
    from memoir.ingest.verify import verify

    name = f"{UUID_A}.jsonl"
    old = _put(src, "-home-ann-app", name, ClaudeWriter(UUID_A).user("q moveword").bytes())
    data = old.read_bytes() + b'{"not json\n'  # one skipped line travels with it
    old.write_bytes(data)
    sync(cfg, store)
    new = src / "-home-ann-renamed" / name
    new.parent.mkdir()
    old.rename(new)
    report = sync(cfg, store)
    assert (report.files_indexed, report.events_added, report.files_reset) == (1, 0, 0)
    _append(new, ClaudeWriter(UUID_A).user("q after the move").bytes())
    sync(cfg, store)
    assert [s.session.id for s in store.sessions.recent()] == [UUID_A]
    assert [e.text for e in store.events.of(UUID_A)] == ["q moveword", "q after the move"]
    assert list(store.ingest.sources()) == [str(new)]
    assert [row.path for row in store.ingest.skipped()] == [str(new)]
    report = verify(cfg, store, observer=upkeep(cfg, store))
    assert report.problems == []  # no orphan archive, no missing source
    assert [w.kind for w in report.warnings] == ["skipped_line"]


def test_a_different_transcript_with_a_gone_ones_id_is_not_taken_for_it(
    cfg: Settings, store: Store, src: Path
) -> None:
    first = _put(src, "p", "one.jsonl", ClaudeWriter(UUID_A).user("first file").bytes())
    sync(cfg, store)
    first.unlink()
    _put(src, "p", "two.jsonl", ClaudeWriter(UUID_A).user("other words").bytes())
    sync(cfg, store)
    assert len(store.sessions.recent()) == 2


def test_a_file_that_could_not_be_read_stays_a_verify_problem_until_it_can(
    cfg: Settings, store: Store, src: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memoir.ingest.verify import verify

    real = sync_module.plan_file
    locked = _put(src, "p", f"{UUID_A}.jsonl", ClaudeWriter(UUID_A).user("locked words").bytes())

    def denied(fd: int, cand: object, *args: object, **kwargs: object) -> object:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(sync_module, "plan_file", denied)
    assert len(sync(cfg, store).errors) == 1
    assert len(sync(cfg, store).errors) == 1  # tried again, not remembered as "ignored"
    problems = [
        (p.kind, p.where, p.detail)
        for p in verify(cfg, store, observer=upkeep(cfg, store)).problems
    ]
    assert problems == [("unreadable_file", str(locked), "the last sync could not read it")]
    monkeypatch.setattr(sync_module, "plan_file", real)
    assert sync(cfg, store).files_indexed == 1
    assert verify(cfg, store, observer=upkeep(cfg, store)).ok


def test_the_end_of_a_tool_output_past_the_event_bound_is_searchable(
    cfg: Settings, store: Store, src: Path
) -> None:
    from memoir.store.values import SearchFilters

    log = "".join(f"tests/test_mod{i}.py::test_case PASSED\n" for i in range(3_000))
    log += "FAILED tests/test_billing.py::test_refund_rounding - assert 10.01 == 10.0\n"
    assert len(log) > 100_000
    w = ClaudeWriter(UUID_A)
    w.user("run the test suite")
    w.assistant(tool_use_block("t1", "Bash", {"command": "pytest"}))
    w.tool("t1", log)
    w.assistant("One test fails.")
    _put(src, "-home-ann-app", f"{UUID_A}.jsonl", w.bytes())
    sync(cfg, store)
    hits = store.index.search("test_refund_rounding", SearchFilters(), 5)
    assert [h.exchange_id for h in hits] == [f"{UUID_A}:1"]


def test_a_project_excluded_after_it_was_stored_is_kept_until_purged(
    home: Path, src: Path, store: Store
) -> None:
    from memoir.store.values import SearchFilters

    uuid_b = "bbbbbbbb-1111-4222-8333-444444444444"
    _put(src, "-home-ann-secret", f"{UUID_A}.jsonl", ClaudeWriter(UUID_A).user("vault key").bytes())
    _put(src, "-home-ann-app", f"{uuid_b}.jsonl", ClaudeWriter(uuid_b).user("vault docs").bytes())
    plain = Settings.from_env({"MEMOIR_HOME": str(home)}, sources=(src,))
    sync(plain, store)
    secret_copy = plain.archive_dir / "-home-ann-secret" / f"{UUID_A}.jsonl"
    assert secret_copy.exists()
    excluding = Settings.from_env(
        {"MEMOIR_HOME": str(home), "MEMOIR_EXCLUDE_PROJECTS": "secret"}, sources=(src,)
    )

    kept = sync(excluding, store)
    assert (kept.excluded_kept, kept.sessions_removed) == ([UUID_A], [])
    assert store.sessions.get(UUID_A) is not None and secret_copy.exists()

    purged = sync(excluding, store, purge_excluded=True)
    assert (purged.sessions_removed, purged.excluded_kept) == ([UUID_A], [])
    assert purged.files_ignored == 1 and purged.files_indexed == 0
    assert store.sessions.get(UUID_A) is None and not secret_copy.exists()
    hits = store.index.search("vault", SearchFilters(), 10)
    assert [h.exchange_id.split(":")[0] for h in hits] == [uuid_b]
    assert (src / "-home-ann-secret" / f"{UUID_A}.jsonl").exists()  # the source is not ours

    after = sync(excluding, store)
    assert (after.files_ignored, after.files_indexed, after.excluded_kept) == (1, 0, [])
    assert store.sessions.get(uuid_b) is not None


def test_sources_given_as_one_string_are_one_folder(cfg: Settings, store: Store, src: Path) -> None:
    _put(src, "p", f"{UUID_A}.jsonl", ClaudeWriter(UUID_A).user("only this").bytes())
    report = sync(cfg, store, sources=str(src))  # not "/", "t", "m", "p", … one by one
    assert (report.files_scanned, report.files_indexed, report.errors) == (1, 1, [])


def test_two_replicas_syncing_the_same_grown_file_store_its_events_once(
    cfg: Settings, store: Store, src: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    w = ClaudeWriter(UUID_A)
    w.user("first question")
    w.assistant("first answer")
    path = _put(src, "p", f"{UUID_A}.jsonl", w.bytes())
    sync(cfg, store)
    w.user("second question")
    w.assistant("second answer")
    path.write_bytes(w.bytes())
    other = Settings.from_env({"MEMOIR_HOME": str(tmp_path / "replica-b")}, sources=(src,))
    real_commit = sync_module.commit_batch
    raced: list[batches_module.SyncReport] = []
    racing: list[bool] = []

    def commit_after_the_other_replica(*args: object, **kwargs: object) -> None:
        if not racing:  # replica B reads and writes the same growth while A is between
            racing.append(True)  # its read and its write
            raced.append(sync(other, store))
        real_commit(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(sync_module, "commit_batch", commit_after_the_other_replica)
    report = sync(cfg, store)
    assert raced[0].files_indexed == 1
    assert (report.files_indexed, report.files_indexed_elsewhere) == (0, 1)
    ordinals = [e.ordinal for e in store.events.of(UUID_A)]
    assert ordinals == sorted(set(ordinals)) and len(ordinals) == 4  # nothing twice
    assert [x.user_text for x in store.exchanges.of(UUID_A)] == [
        "first question",
        "second question",
    ]


def test_a_moved_json_list_is_read_on_under_its_new_path(
    cfg: Settings, store: Store, src: Path
) -> None:
    import json

    messages = [{"role": "user", "content": "q listword"}, {"role": "assistant", "content": "a"}]
    old = src / "a" / "team.json"
    old.parent.mkdir()
    old.write_text(json.dumps(messages))
    sync(cfg, store)
    new = src / "b" / "team.json"
    new.parent.mkdir()
    old.rename(new)
    moved = sync(cfg, store)
    assert (moved.files_indexed, moved.files_indexed_elsewhere, moved.errors) == (1, 0, [])
    messages += [{"role": "user", "content": "q after the move"}]
    new.write_text(json.dumps(messages))
    grown = sync(cfg, store)
    assert (grown.files_indexed, grown.files_indexed_elsewhere) == (1, 0)
    assert list(store.ingest.sources()) == [str(new)]
    sid = store.ingest.sources()[str(new)].session_id
    assert [e.text for e in store.events.of(sid)] == ["q listword", "a", "q after the move"]
