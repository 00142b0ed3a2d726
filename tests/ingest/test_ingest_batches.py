"""sync commits a large transcript in bounded batches (issue 24, item 4): read in tiny
batches, a file is stored exactly as one read stores it; a sync stopped between batches
resumes where its last batch committed, nothing lost or stored twice; a one-document JSON
transcript, which cannot be read in parts, has a size limit. Real stores: SQLite, and
PostgreSQL when the test cluster is configured."""

from __future__ import annotations

import io
import json
import os
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from memoir.config import Settings
from memoir.demo.builders import ClaudeWriter, CodexWriter, tool_use_block
from memoir.ingest import sync as sync_module
from memoir.ingest.detect import Format
from memoir.ingest.lines import LineReader
from memoir.ingest.reader import ReadResult, read_lines
from memoir.ingest.sync import NO_INDEX_MARKER, SyncReport
from memoir.ingest.verify import verify
from memoir.store import Store
from memoir.store.values import SearchFilters
from memoir.summaries.persist import SummaryUpkeep
from memoir.summaries.stores import open_summary_store

SID = "cccccccc-1111-4222-8333-444444444444"
ONE_BATCH = 1 << 40
TINY_BATCH = 3000  # a line or two of the transcripts below


def upkeep(settings: Settings, store: Store) -> SummaryUpkeep:
    return SummaryUpkeep(settings.archive_dir, open_summary_store(settings, store), store)


def sync(settings: Settings, store: Store, **options: Any) -> SyncReport:
    return sync_module.sync(settings, store, observer=upkeep(settings, store), **options)


@pytest.fixture
def twin(store: Store, tmp_path: Path) -> Iterator[Store]:
    """A second empty store on the same backend as ``store``: the one-batch baseline."""
    from conftest import fresh_store

    with fresh_store(store.backend, tmp_path / "baseline.db") as other:
        yield other


def _claude() -> bytes:
    """Short exchanges, then one prompt followed by a long agent run (one exchange that
    spans many batches, its tool excerpt and tool names built across them), a bad line,
    and a last record without its newline (accepted: a complete object)."""
    w = ClaudeWriter(SID)
    w.summary("a preamble before any prompt")
    for n in range(10):
        w.user(f"question {n} about topic{n}")
        w.assistant(f"thinking {n}", tool_use_block(f"t{n}", "Bash", {"command": f"make t{n}"}))
        w.tool(f"t{n}", f"output {n} " * 150)
        w.assistant(f"answer {n}")
        if n % 3 == 0:
            w.snapshot()
    w.user("refactor the billing module longrunword")
    for k in range(40):
        name = "WebFetch" if k == 30 else ("Read", "Edit", "Bash", "Grep", "Glob")[k % 5]
        w.assistant(f"step {k}", tool_use_block(f"r{k}", name, {"file_path": f"src/m{k}.py"}))
        w.tool(f"r{k}", f"\x1b[31mresult {k}\x1b[0m " + "x" * 250 + f" end{k}")
        if k in (1, 4):  # harness text inside the run: it goes to the excerpt, in order
            w.user(f"<system-reminder>\nreminder {k} harnessword\n</system-reminder>")
    w.assistant("all done with the billing module")
    data = w.bytes()
    middle = data.index(b"\n", len(data) // 3) + 1
    return data[:middle] + b'{"not json\n' + data[middle:-1]


def _codex() -> bytes:
    w = CodexWriter("cx-batches")
    for n in range(40):
        w.user(f"codex question {n}").reasoning(f"hmm {n}")
        w.call(f"c{n}", "shell", {"cmd": f"ls {n}"}, f"file{n}.py " * 100)
        w.assistant(f"codex answer {n}")
    return w.bytes()


def _generic() -> bytes:
    lines = []
    for n in range(40):
        lines.append({"role": "user", "content": f"generic question {n}", "name": "Ann"})
        call = {"id": f"g{n}", "function": {"name": "lookup", "arguments": "x" * 900}}
        lines.append({"role": "assistant", "content": f"let me look {n}", "tool_calls": [call]})
        lines.append({"role": "tool", "tool_call_id": f"g{n}", "content": "y" * 1200})
        lines.append({"role": "assistant", "content": f"generic answer {n}"})
    # one long exchange whose only timestamps are on tool results past the excerpt budget:
    # its start and end times come from events the carried exchange must keep
    lines.append({"role": "user", "content": "a long untimed run"})
    for k in range(30):
        call = {"id": f"h{k}", "function": {"name": "lookup", "arguments": "a" * 700}}
        lines.append({"role": "assistant", "content": "", "tool_calls": [call]})
        result: dict[str, Any] = {"role": "tool", "tool_call_id": f"h{k}", "content": "b" * 700}
        if 10 <= k <= 20:
            result["timestamp"] = f"2025-10-16T10:{k:02d}:00Z"
        lines.append(result)
    lines.append({"role": "assistant", "content": "done"})
    return b"".join(json.dumps(x).encode() + b"\n" for x in lines)


_CASES = {
    "claude": (_claude, "p", f"{SID}.jsonl", SID),
    "codex": (_codex, "2025/10/15", "rollout-2025-10-15T10-00-00-cx-batches.jsonl", "cx-batches"),
    "generic": (_generic, "chats", "team-chat.jsonl", "team-chat"),
}


def _home(tmp_path: Path, name: str, src: Path) -> Settings:
    return Settings.from_env({"MEMOIR_HOME": str(tmp_path / name)}, sources=(src,))


def _put(src: Path, folder: str, name: str, data: bytes) -> Path:
    path = src / folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def _stored(cfg: Settings, store: Store, path: Path, sid: str) -> dict[str, Any]:
    """Everything sync stored for one transcript, with what differs between two homes
    (the archive folder, database keys) left out."""
    state = store.ingest.source(str(path))
    assert state is not None
    archived = Path(state.archive_path or "")
    hits = store.index.search("longrunword OR end39 OR answer", SearchFilters(), 50)
    return {
        "events": store.events.of(sid),
        "exchanges": store.exchanges.of(sid),
        "session": store.sessions.get(sid),
        "source": replace(state, archive_path=str(archived.relative_to(cfg.archive_dir))),
        "skipped": store.ingest.skipped(),
        "archive": archived.read_bytes(),
        "stats": store.stats(),
        "hits": sorted(h.exchange_id for h in hits),
        "problems": store.integrity_problems(),
    }


def _counts(report: SyncReport) -> tuple[int, ...]:
    return (
        report.files_indexed,
        report.files_copied,
        report.bytes_indexed,
        report.events_added,
        report.exchanges_added,
        report.exchanges_updated,
        report.lines_skipped,
        len(report.errors),
    )


class _Batches:
    """Counts the batches committed (``store.ingest.apply`` calls)."""

    def __init__(self, store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls = 0
        real = store.ingest.apply

        def apply(batch: Any) -> None:
            self.calls += 1
            real(batch)

        monkeypatch.setattr(store.ingest, "apply", apply)


@pytest.mark.parametrize("case", sorted(_CASES))
def test_a_file_of_many_batches_is_stored_as_in_one(
    case: str, store: Store, twin: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    make, folder, name, sid = _CASES[case]
    data = make()
    src = tmp_path / "src"
    path = _put(src, folder, name, data)
    one, many = _home(tmp_path, "one", src), _home(tmp_path, "many", src)

    monkeypatch.setattr(sync_module, "BATCH_BYTES", ONE_BATCH)
    baseline_batches = _Batches(twin, monkeypatch)
    baseline = sync(one, twin)
    assert baseline_batches.calls == 1

    monkeypatch.setattr(sync_module, "BATCH_BYTES", TINY_BATCH)
    batches = _Batches(store, monkeypatch)
    report = sync(many, store)
    assert batches.calls > 20, "the file was not read in batches"
    assert report.errors == [] and report.files_indexed == 1
    assert _counts(report) == _counts(baseline)
    assert _stored(many, store, path, sid) == _stored(one, twin, path, sid)
    assert _stored(many, store, path, sid)["archive"] == data
    if case == "claude":
        last = store.exchanges.of(sid)[-1]
        assert last.user_text == "refactor the billing module longrunword"
        excerpt = last.tool_excerpt
        assert "reminder 1 harnessword" in excerpt
        assert excerpt.index("reminder 1") < excerpt.index("result 2") < excerpt.index("reminder 4")
    if case == "generic":
        last = store.exchanges.of(sid)[-1]
        assert last.user_text == "a long untimed run"
        assert last.started_at is not None and last.started_at.minute == 10
        assert last.ended_at is not None and last.ended_at.minute == 20
    assert sync(many, store).files_unchanged == 1  # the last batch recorded size and mtime


def test_a_grown_file_read_on_in_batches_rebuilds_its_open_exchange_alike(
    store: Store, twin: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Growth in the middle of the long exchange: the stored open exchange is read back a
    page of events at a time, then carried across the new batches; the result is what one
    read of the whole file stores."""
    data = _claude()
    cut = data.index(b"step 20")
    cut = data.rindex(b"\n", 0, cut) + 1
    src = tmp_path / "src"
    path = _put(src, "p", f"{SID}.jsonl", data)
    one, many = _home(tmp_path, "one", src), _home(tmp_path, "many", src)
    stamp = 2 * 10**18
    os.utime(path, ns=(stamp, stamp))
    monkeypatch.setattr(sync_module, "BATCH_BYTES", ONE_BATCH)
    sync(one, twin)
    path.write_bytes(data[:cut])
    first = sync(many, store)
    monkeypatch.setattr(sync_module, "BATCH_BYTES", TINY_BATCH)
    monkeypatch.setattr(sync_module, "_EVENT_PAGE", 3)
    path.write_bytes(data)
    os.utime(path, ns=(stamp, stamp))
    grown = sync(many, store)
    assert (grown.exchanges_added, grown.exchanges_updated, grown.files_reset) == (0, 1, 0)
    assert grown.events_added == len(twin.events.of(SID)) - first.events_added
    assert _stored(many, store, path, SID) == _stored(one, twin, path, SID)
    long_run = store.exchanges.of(SID)[-1]
    assert long_run.user_text == "refactor the billing module longrunword"
    assert long_run.tool_names == ("Read", "Edit", "Bash", "Grep", "Glob", "WebFetch")


@pytest.mark.parametrize("where", ["after_a_commit", "before_a_commit"])
@pytest.mark.parametrize("stop", [KeyboardInterrupt, RuntimeError])
def test_a_sync_stopped_between_batches_resumes_without_loss_or_doubling(
    where: str,
    stop: type[BaseException],
    store: Store,
    twin: Store,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    data = _claude()
    src = tmp_path / "src"
    path = _put(src, "p", f"{SID}.jsonl", data)
    one, many = _home(tmp_path, "one", src), _home(tmp_path, "many", src)
    monkeypatch.setattr(sync_module, "BATCH_BYTES", ONE_BATCH)
    sync(one, twin)

    monkeypatch.setattr(sync_module, "BATCH_BYTES", TINY_BATCH)
    real = sync_module._commit
    commits: list[int] = []

    def stopping(*args: Any, **kwargs: Any) -> None:
        if where == "before_a_commit" and len(commits) == 12:
            raise stop("stopped")  # the archive copy is checkpointed past the last commit
        real(*args, **kwargs)
        commits.append(1)
        if where == "after_a_commit" and len(commits) == 12:
            raise stop("stopped")

    monkeypatch.setattr(sync_module, "_commit", stopping)
    if stop is KeyboardInterrupt:
        with pytest.raises(KeyboardInterrupt):
            sync(many, store)
    else:
        assert len(sync(many, store).errors) == 1
    state = store.ingest.source(str(path))
    assert state is not None and 0 < state.offset == state.size < len(data)
    stored = store.events.of(SID)
    assert [e.ordinal for e in stored] == list(range(1, len(stored) + 1))
    archived = many.archive_dir / "p" / f"{SID}.jsonl"
    assert archived.stat().st_size >= state.offset  # a copy renamed into place, not a temp

    monkeypatch.setattr(sync_module, "_commit", real)
    resumed = sync(many, store)
    assert resumed.errors == [] and resumed.files_reset == 0
    assert resumed.events_added == len(store.events.of(SID)) - len(stored)
    assert resumed.bytes_indexed == len(data) - state.offset
    assert _stored(many, store, path, SID) == _stored(one, twin, path, SID)
    assert verify(many, store, observer=upkeep(many, store)).problems == []


def test_a_marker_in_a_later_batch_removes_what_the_earlier_ones_stored(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = _claude()
    marker = ClaudeWriter(SID).user(f"{NO_INDEX_MARKER} keep this one out").bytes()
    src = tmp_path / "src"
    path = _put(src, "p", f"{SID}.jsonl", data + b"\n" + marker)
    cfg = _home(tmp_path, "home", src)
    monkeypatch.setattr(sync_module, "BATCH_BYTES", TINY_BATCH)
    batches = _Batches(store, monkeypatch)
    report = sync(cfg, store)
    assert batches.calls > 20  # earlier batches were stored, then taken back
    assert report.sessions_removed == [SID] and report.files_indexed == 0
    assert store.sessions.get(SID) is None and store.events.of(SID) == []
    assert store.ingest.source(str(path)) is None
    assert not (cfg.archive_dir / "p" / f"{SID}.jsonl").exists()
    assert store.index.search("longrunword", SearchFilters(), 5) == []
    assert sync(cfg, store).files_ignored == 1


def test_read_lines_in_batches_off_one_iterator_reads_each_line_once() -> None:
    data = _claude()
    whole = read_lines(
        iter(LineReader(io.BytesIO(data))),
        Format.CLAUDE,
        path="x",
        session_id=SID,
        next_ordinal=1,
        state={},
        offset=0,
        line_count=0,
    )
    lines = iter(LineReader(io.BytesIO(data), chunk=4096))
    parts: list[ReadResult] = []
    offset, count, ordinal, state = 0, 0, 1, {}
    while True:
        part = read_lines(
            lines,
            Format.CLAUDE,
            path="x",
            session_id=SID,
            next_ordinal=ordinal,
            state=state,
            offset=offset,
            line_count=count,
            max_bytes=2000,
        )
        parts.append(part)
        assert part.offset - offset < 2000 + 4096  # past the limit by one line at most
        offset, count, state = part.offset, part.line_count, part.state
        ordinal += len(part.events)
        if not part.more:
            break
    assert len(parts) > 20 and not whole.more
    assert [e for p in parts for e in p.events] == list(whole.events)
    assert [s for p in parts for s in p.skipped] == list(whole.skipped)
    assert (offset, count, state) == (whole.offset, whole.line_count, whole.state)


def test_a_one_document_json_transcript_over_the_limit_is_left_out_and_reported(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    messages = [{"role": "user", "content": f"q{n} " + "w" * 100} for n in range(20)]
    src = tmp_path / "src"
    big = _put(src, "chats", "big.json", json.dumps(messages).encode())
    as_lines = b"".join(json.dumps(m).encode() + b"\n" for m in messages)
    _put(src, "chats", "lines.jsonl", as_lines)  # as large, but JSONL: read in batches
    _put(src, "chats", "small.json", json.dumps(messages[:2]).encode())
    cfg = _home(tmp_path, "home", src)
    assert sync_module.MAX_JSON_BYTES == 64 * 2**20  # the limit itself, made small here
    monkeypatch.setattr(sync_module, "MAX_JSON_BYTES", 1024)

    report = sync(cfg, store)
    assert report.files_indexed == 2
    assert report.errors == [
        f"{big}: not indexed: a JSON transcript that is one document (not JSONL) is read "
        f"whole, and this one is 0.0 MiB, over the limit of 0 MiB; write it as JSONL (one "
        "message a line) to have it read"
    ]
    assert store.sessions.get("big") is None and store.sessions.get("lines") is not None
    assert not (cfg.archive_dir / "chats" / "big.jsonl").exists()
    assert len(sync(cfg, store).errors) == 1  # said on every sync until it is fixed
    problems = verify(cfg, store, observer=upkeep(cfg, store)).problems
    assert [(p.kind, p.where) for p in problems] == [("unreadable_file", str(big))]

    big.write_text(json.dumps(messages[:5]))  # under the limit now
    fixed = sync(cfg, store)
    assert (fixed.errors, fixed.files_indexed) == ([], 1)
    assert len(store.events.of("big")) == 5
    assert verify(cfg, store, observer=upkeep(cfg, store)).problems == []


def test_the_json_limit_message_gives_the_size_in_mib(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = tmp_path / "src"
    messages = [{"role": "user", "content": "z" * 1000}] * 1200  # ~1.2 MB
    big = _put(src, "chats", "huge.json", json.dumps(messages).encode())
    monkeypatch.setattr(sync_module, "MAX_JSON_BYTES", 1024 * 1024)
    report = sync(_home(tmp_path, "home", src), store)
    assert report.files_indexed == 0
    assert report.errors and "is 1.2 MiB, over the limit of 1 MiB" in report.errors[0]
    assert str(big) in report.errors[0]
