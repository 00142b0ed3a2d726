"""What is already stored gets cleaned (issue 41, point 4), on both backends.

Derived text written before the detector knew today's formats — a summary, a compaction
checkpoint and its trace, a cached answer, memory items — is re-scanned: bounded per run,
resumable after a run dies half-way, counted, and never the events (the archive's copy).
"""

from __future__ import annotations

import json
import random
import string
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from cli_run import run_cli
from memoir import service
from memoir.config import Settings
from memoir.ingest.archive import rescan
from memoir.memory.item_rows import MemoryItemRow, MemorySourceRow, ReceiptRow, Settlement
from memoir.memory.item_store import memory_parts
from memoir.model import Author, Event, EventKind, Harness, Session, build_exchanges
from memoir.store import IngestBatch, Store
from memoir.store.parts import sessions as rescan_part
from memoir.store.values import CheckpointRow, SummaryRow, TraceRow
from memoir.summaries.port import DatabaseSummaryStore

_RNG = random.Random(414)
KEY = "sk-ant-" + "api03-" + "".join(_RNG.choice(string.ascii_letters) for _ in range(93)) + "AA"
TOKEN = "github" + "_pat_" + "".join(_RNG.choice(string.ascii_letters) for _ in range(82))
SID = "5ec7e7a1-0000-4000-8000-0000000041b4"
T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


def _item(item_id: str, content: str, quote: str) -> MemoryItemRow:
    return MemoryItemRow(
        id=item_id,
        session_id=SID,
        project="p",
        scope="project",
        kind="preference",
        content=content,
        normalized=content.casefold(),
        keys=(item_id,),
        operation_id="op1",
        created_at=T0,
        sources=(MemorySourceRow(SID, 1, quote),),
    )


def _seed(store: Store) -> None:
    """Rows as an earlier version wrote them, its detector blind to these formats."""
    said = f"From now on, always call the staging API with my Anthropic key {KEY}"
    events = [Event(SID, 1, EventKind.USER_TEXT, Author.USER, said, T0)]
    store.ingest.apply(
        IngestBatch(Session(SID, "p", Harness.API), tuple(events), tuple(build_exchanges(events)))
    )
    items = (
        _item("i1", "Prefers tabs.", "I prefer tabs"),
        _item("i2", "Call the staging API with the Anthropic key.", said),
        _item("i3", f"The release token is {TOKEN}.", "push releases with it"),
    )
    receipt = ReceiptRow("op1", SID, "compaction", "extracted", 0, 1, T0, items=3)
    assert memory_parts(store).memory.settle(
        Settlement(receipt, items=items, cursor_from=0, cursor_to=1)
    )
    for n, summary in enumerate(["The user set up the staging API.", f"Uses key {KEY}."]):
        data = {"summary": summary, "context_through": 1, "window": 32_000}
        store.checkpoints.put(
            CheckpointRow(f"ck{n}", SID, T0 + timedelta(hours=n), 1, 1, "eligible", None, data)
        )
    store.traces.record(TraceRow(SID, "compaction", T0, {"summary": f"token {TOKEN}"}))
    store.traces.record(TraceRow(SID, "compaction", T0, {"summary": "nothing secret"}))
    store.cache.put("episode:1", json.dumps({"text": f"the key {KEY} was set"}), 3600)
    store.cache.put("episode:2", json.dumps({"text": "plain"}), 3600)
    store.summaries.put(SummaryRow(SID, "real", body=f"Set the staging key {KEY}.", covered=1))


def _holds(text: str) -> bool:
    return KEY in text or TOKEN in text


def _stored_text(store: Store) -> str:
    parts = [json.dumps(c.data) for c in store.checkpoints.of(SID)]
    parts += [json.dumps(t.data) for t in store.traces.find(SID)]
    parts += [store.cache.get("episode:1") or "", store.cache.get("episode:2") or ""]
    parts += [i.content for i in memory_parts(store).items.find(history=True)]
    parts += [s.quote for i in memory_parts(store).items.find(history=True) for s in i.sources]
    row = store.summaries.get(SID)
    parts.append(row.body if row else "")
    return "\n".join(parts)


# every target's rows and how many of them hold a credential
EXPECTED = {
    "checkpoints": {"scanned": 2, "changed": 1},
    "traces": {"scanned": 2, "changed": 1},
    "cache": {"scanned": 2, "changed": 1},
    "memory": {"scanned": 3, "changed": 2},
    "summaries": {"scanned": 1, "changed": 1},
}


def test_a_rescan_cleans_derived_text_a_bounded_share_a_run(store: Store) -> None:
    _seed(store)
    assert _holds(_stored_text(store))
    summaries = DatabaseSummaryStore(store)
    runs = []
    while True:
        report = rescan(
            store.rescan, summaries, forget_in=memory_parts(store).items.forget_in, budget=3, page=2
        )
        runs.append(report)
        assert sum(n["scanned"] for n in report.run.values()) <= 3  # bounded
        if report.finished:
            break
        assert len(runs) < 10
    assert len(runs) >= 4  # 10 rows, 3 a run
    assert report.total == EXPECTED
    stored = _stored_text(store)
    assert not _holds(stored)
    assert "[redacted: Anthropic key]" in stored and "[redacted: GitHub token]" in stored
    assert [i.id for i in memory_parts(store).items.find(history=True)] == [
        "i1"
    ]  # refused: forgotten
    (ck0, ck1) = store.checkpoints.of(SID)
    assert ck1.data == {
        "summary": "Uses key [redacted: Anthropic key].",
        "context_through": 1,
        "window": 32_000,
    }
    assert ck0.data["summary"] == "The user set up the staging API."
    (event,) = store.events.of(SID)
    assert KEY in event.text  # the events (the archive's copy) keep the bytes

    again = rescan(
        store.rescan, summaries, forget_in=memory_parts(store).items.forget_in
    )  # done: nothing read again
    assert again.finished and sum(n["scanned"] for n in again.run.values()) == 0
    newer = rescan(
        store.rescan,
        summaries,
        forget_in=memory_parts(store).items.forget_in,
        detector="a-newer-detector",
    )
    assert newer.finished and newer.total == {
        t: {"scanned": n["scanned"] - (1 if t == "memory" else 0) * 2, "changed": 0}
        for t, n in EXPECTED.items()
    }


def test_a_rescan_killed_half_way_resumes_and_counts_each_row_once(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    _seed(store)
    summaries = DatabaseSummaryStore(store)
    real = rescan_part._put_state
    calls = {"n": 0}

    def dies_on_the_third_page(tx, state):  # type: ignore[no-untyped-def]
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt("killed")  # the page's transaction is rolled back
        real(tx, state)

    monkeypatch.setattr(rescan_part, "_put_state", dies_on_the_third_page)
    with pytest.raises(KeyboardInterrupt):
        rescan(store.rescan, summaries, forget_in=memory_parts(store).items.forget_in, page=1)
    states = store.rescan.states()
    assert states["checkpoints"].scanned == 2 and states["checkpoints"].done is False
    assert "traces" not in states  # the dying page left nothing behind
    assert any(_holds(json.dumps(t.data)) for t in store.traces.find(SID))

    monkeypatch.setattr(rescan_part, "_put_state", real)
    report = rescan(store.rescan, summaries, forget_in=memory_parts(store).items.forget_in, page=1)
    assert report.finished and report.total == EXPECTED  # each row counted once
    assert not _holds(_stored_text(store))


def test_an_upgrade_s_next_sync_cleans_a_summary_file_and_verify_counts_it(
    home: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from memoir.demo import ClaudeWriter
    from memoir.ingest import archive as rescan_module

    monkeypatch.setenv("MEMOIR_HOME", str(home))
    writer = ClaudeWriter(SID, cwd="/home/ann/code/staging")
    writer.user(f"From now on, always call the staging API with my Anthropic key {KEY}")
    writer.assistant("Noted.")
    path = tmp_path / "src" / "projects" / "-home-ann-code-staging" / f"{SID}.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(writer.bytes())
    sync = ["sync", "--source", str(path.parents[1]), "--json"]
    code, out, err = run_cli(sync, capsys)
    assert code == 0, err
    code, out, err = run_cli(["verify", "--json"], capsys)
    assert json.loads(out)["secret_rescan"]["finished"] is True  # the sync scanned it all
    (summary,) = (home / "archive").rglob(f"{SID}*summary*")
    # a summary an older version wrote, its detector blind to the key; then an upgrade
    summary.write_text(summary.read_text(encoding="utf-8") + f"\nThe key is {KEY}.\n")
    monkeypatch.setattr(rescan_module, "detector_id", lambda: "upgraded-detector")

    code, out, err = run_cli(["verify", "--json"], capsys)  # a plain verify writes nothing
    assert code == 0, out + err
    assert json.loads(out)["secret_rescan"]["finished"] is False
    assert KEY in summary.read_text(encoding="utf-8")

    code, out, err = run_cli(sync, capsys)
    assert code == 0, err
    code, out, err = run_cli(["verify", "--json"], capsys)
    rescanned = json.loads(out)["secret_rescan"]
    assert rescanned["detector"] == "upgraded-detector" and rescanned["finished"] is True
    assert rescanned["total"]["summaries"] == {"scanned": 1, "changed": 1}
    text = summary.read_text(encoding="utf-8")
    assert KEY not in text and "The key is [redacted: Anthropic key]." in text
    (transcript,) = (home / "archive").rglob(f"{SID}.jsonl")
    assert KEY in transcript.read_text(encoding="utf-8")  # the archive keeps the bytes
    code, out, err = run_cli(["verify"], capsys)
    assert "secret re-scan of derived text: masked or forgot 1 summaries (done)" in out


def test_a_second_process_leaves_the_rescan_to_the_one_running_it(settings: Settings) -> None:
    from memoir.app import Memoir

    with Memoir.open(settings) as memoir, Memoir.open(settings) as other:
        with other.store.claims.hold("secret-rescan", "busy"):
            report = service.rescan_secrets(memoir)
        assert report.skipped == "a secret re-scan is running"
        assert report.run == {} and not report.finished
        assert memoir.store.rescan.states() == {}
        done = service.rescan_secrets(memoir)
        assert done.skipped is None and done.finished


def test_a_page_with_items_to_forget_needs_the_memory_engines_forget_in(store: Store) -> None:
    _seed(store)
    state = rescan_part.RescanState("memory", "a-detector", cursor="i1", scanned=1, changed=1)
    with pytest.raises(ValueError, match="forget_in"):
        store.rescan.save(state, forget=["i1"])
    before = sorted(i.id for i in memory_parts(store).items.find())
    assert "i1" in before
    assert store.rescan.states() == {}  # nothing written: not the state, not the forgetting
    assert sorted(i.id for i in memory_parts(store).items.find()) == before
    store.rescan.save(state, forget=["i1"], forget_in=memory_parts(store).items.forget_in)
    assert store.rescan.states() == {"memory": state}
    assert sorted(i.id for i in memory_parts(store).items.find()) == [
        i for i in before if i != "i1"
    ]
