"""Checkpoints, replay across turns, rolling forward, memory boundary, traces."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from memoir.compaction import Compactor, validate_sequence
from memoir.compaction.values import disposition
from memoir.config import Settings
from memoir.llm import ScriptedModel
from memoir.llm.port import ModelRequest
from memoir.model import SessionFlags

from .helpers import FakeStore, assistant, big_text, call, result, system, user

WINDOW = 32_000


class Summaries:
    """Scripted replies 'Summary 1.', 'Summary 2.', … recording what each request read."""

    def __init__(self) -> None:
        self.n = 0

    def __call__(self, request: ModelRequest) -> str:
        self.n += 1
        return f"Summary {self.n}."


def grow(history: list[dict[str, Any]], k: int) -> None:
    history.append(call((f"c{k}", "read_file"), text=f"reading part {k}."))
    history.append(result(f"c{k}", f"MARK{k} " + big_text(2_000, seed=k)))


def run_turns(compactor: Compactor, turns: int, sid: str = "s1") -> list[Any]:
    history: list[dict[str, Any]] = [system(), user("Refactor the parser, part by part.")]
    results = []
    for k in range(turns):
        grow(history, k)
        if compactor.should_compact(history, window=WINDOW, session_id=sid):
            results.append(compactor.compact(history, window=WINDOW, session_id=sid))
        else:
            results.append(None)
    return results


def stores(tmp_path: Path) -> dict[str, Any]:
    found: dict[str, Any] = {"fake": FakeStore()}
    try:
        from memoir.store import open_store

        found["sqlite"] = open_store(Settings.from_env({"MEMOIR_HOME": str(tmp_path)}))
    except Exception:
        try:
            from memoir.store.sqlite_store import SQLiteStore  # type: ignore[import-not-found]

            found["sqlite"] = SQLiteStore(tmp_path / "memoir.db")
        except Exception:
            pass
    return found


@pytest.fixture(params=["fake", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    found = stores(tmp_path)
    if request.param not in found:
        pytest.skip("the SQLite store is not available yet")
    yield found[request.param]
    if hasattr(found[request.param], "close"):
        found[request.param].close()


def test_repeated_compaction_rolls_forward(store: Any) -> None:
    model = ScriptedModel(default=Summaries())
    compactor = Compactor(model, store=store)
    results = run_turns(compactor, 30)
    done = [r for r in results if r is not None and r.strategy == "summary"]
    assert len(done) >= 2
    rows = store.checkpoints.of("s1")
    assert [r.id for r in rows] == [d.checkpoint_id for d in done]
    first, second = rows[0], rows[1]
    assert first.previous_id is None and second.previous_id == first.id
    assert second.watermark > first.watermark
    assert first.memory_boundary == first.watermark and first.disposition == "eligible"
    assert first.data["summary"] == "Summary 1."
    assert first.data["tail_from"] == first.watermark + 1
    assert first.data["strategy"] == "summary" and first.data["kept"] == [2]  # the task
    # the second request rolls forward: previous summary + only newly covered messages
    req2 = model.requests[1].messages[-1].content
    assert "<previous_summary>\nSummary 1.\n</previous_summary>" in req2
    covered_before = {k for k in range(30) if f"MARK{k} " in model.requests[0].messages[-1].content}
    assert covered_before and not any(f"MARK{k} " in req2 for k in covered_before)
    assert f"MARK{max(covered_before) + 1} " in req2
    assert model.calls == len(done)  # turns between compactions replayed, not re-compacted


def test_turns_between_compactions_replay_the_checkpoint() -> None:
    store = FakeStore()
    model = ScriptedModel(default=Summaries())
    compactor = Compactor(model, store=store)
    history: list[dict[str, Any]] = [system(), user("Refactor the parser.")]
    k = 0
    while not compactor.should_compact(history, window=WINDOW, session_id="s1"):
        grow(history, k)
        k += 1
    first = compactor.compact(history, window=WINDOW, session_id="s1")
    grow(history, k)
    replayed = compactor.compact(history, window=WINDOW, session_id="s1")
    assert replayed.strategy == "none" and replayed.replayed_from == first.checkpoint_id
    assert replayed.messages[: len(first.messages)] == first.messages
    assert replayed.messages[-1] is history[-1]
    assert validate_sequence(replayed.messages) == []
    assert model.calls == 1
    # a fresh compactor (another process) finds the checkpoint in the store
    other = Compactor(ScriptedModel(), store=store)
    assert other.compact(history, window=WINDOW, session_id="s1").messages == replayed.messages
    assert not other.should_compact(history, window=WINDOW, session_id="s1")


def test_a_checkpoint_of_another_history_is_ignored() -> None:
    store = FakeStore()
    compactor = Compactor(ScriptedModel(default=Summaries()), store=store)
    run_turns(compactor, 14)
    assert store.rows
    different = [system(), user("something else entirely"), call(("z", "ls")), result("z", "a")]
    res = Compactor(ScriptedModel(), store=store).compact(different, window=WINDOW, session_id="s1")
    assert res.strategy == "none" and res.replayed_from is None and res.messages == different


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        (None, "eligible"),
        (SessionFlags(), "eligible"),
        (SessionFlags(incognito=True), "policy_denied"),
        (SessionFlags(memory_disabled=True), "policy_denied"),
        (SessionFlags(archived=True), "policy_denied"),
        (SessionFlags(subagent=True), "policy_denied"),
    ],
)
def test_disposition_is_frozen_from_the_session_flags(
    flags: SessionFlags | None, expected: str
) -> None:
    assert disposition(flags) == expected
    store = FakeStore(flags=flags)
    run_turns(Compactor(ScriptedModel(default=Summaries()), store=store), 14)
    assert store.rows and {r.disposition for r in store.rows} == {expected}


def test_explicit_flags_win_over_the_store() -> None:
    store = FakeStore(flags=SessionFlags())
    compactor = Compactor(ScriptedModel(default=Summaries()), store=store)
    history: list[dict[str, Any]] = [user("go")]
    for k in range(14):
        grow(history, k)
    compactor.compact(history, window=WINDOW, session_id="s9", flags=SessionFlags(subagent=True))
    assert store.rows[0].disposition == "policy_denied"


def test_truncate_checkpoint_carries_the_previous_summary_and_replays_stand_ins() -> None:
    store = FakeStore()
    model = ScriptedModel(default=Summaries())
    compactor = Compactor(model, store=store)
    history: list[dict[str, Any]] = [system(), user("Refactor the parser.")]
    for k in range(14):
        grow(history, k)
    first = compactor.compact(history, window=WINDOW, session_id="s1")
    assert first.strategy == "summary"
    history.append(call(("huge", "read_file")))
    history.append(result("huge", big_text(60_000, seed=99)))
    model.default = None
    model.queue(*[ConnectionRefused() for _ in range(3)])
    second = compactor.compact(history, window=WINDOW, session_id="s1")
    # issue 26: the new result is too large for the tail on its own, so it is stood in and
    # everything after the first checkpoint stays — no summary needed (it was a truncate)
    assert second.strategy == "stand_in" and second.tokens_after < 24_000
    assert model.calls == 1
    assert "Summary 1." in second.messages[1]["content"]  # the previous summary is kept
    row = store.rows[-1]
    assert row.previous_id == first.checkpoint_id and row.data["summary"] == "Summary 1."
    # the huge result, and older tool output beyond what the tail holds verbatim
    assert row.data["replaced"][-1] == len(history)
    replay = Compactor(ScriptedModel(), store=store).compact(
        history, window=WINDOW, session_id="s1"
    )
    assert replay.strategy == "none" and replay.messages == second.messages


def ConnectionRefused() -> Exception:
    from memoir.llm.port import Transient

    return Transient("connection refused")


def test_trace_is_stored_and_logged_without_content(caplog: pytest.LogCaptureFixture) -> None:
    store = FakeStore()
    secret = "SECRET-PAYLOAD " + big_text(40_000)
    history = [system(), user("read it"), call(("c1", "read_file")), result("c1", secret)]
    for k in range(8):  # more recent talk than the tail holds: the secret is summarized
        history += [user(f"part {k}: " + big_text(1_600, seed=k)), assistant(f"done {k}.")]
    compactor = Compactor(ScriptedModel(["Read it; the file is large."]), store=store)
    with caplog.at_level(logging.INFO, logger="memoir.compaction"):
        res = compactor.compact(history, window=WINDOW, session_id="s1")
    traces = store.traces.find("s1", "compaction")
    assert len(traces) == 1
    data = traces[0].data
    assert data["strategy"] == "summary" and data["removed_count"] == res.removed_count
    assert data["tokens_before"] > 24_000 > data["tokens_after"]
    assert data["cap"] == 6000 and data["output_budget"] == 6000
    assert data["threshold"] == 24_000 and data["threshold_source"] == "default"
    assert data["omitted"] == [
        {
            "position": 4,
            "role": "tool",
            "tool": "read_file",
            "tokens": res.omitted[0].tokens,
            "where": "request",
        }
    ]
    assert data["kept_verbatim"] == res.kept_verbatim > 0 and data["tail_budget"] == 12_000
    assert data["kept_verbatim"] + data["removed_count"] == len(history) - 1
    assert "SECRET" not in json.dumps(data) and "SECRET" not in caplog.text
    assert '"strategy": "summary"' in caplog.text


def test_threshold_ratio_from_settings() -> None:
    settings = Settings.from_env({"MEMOIR_COMPACT_THRESHOLD_RATIO": "0.5"})
    compactor = Compactor.from_settings(settings, ScriptedModel())
    res = compactor.compact([user("hi")], window=10_000)
    assert res.threshold == 5_000
    assert res.threshold_source == "env MEMOIR_COMPACT_THRESHOLD_RATIO"
    assert (
        Compactor.from_settings(Settings.from_env({}), None).budget(100).ratio_source == "default"
    )


def test_a_smaller_window_than_the_checkpoint_was_written_for_still_fits() -> None:
    store = FakeStore()
    long_summary = " ".join(f"Fact {k} was established." for k in range(400))
    compactor = Compactor(ScriptedModel([long_summary]), store=store)
    history: list[dict[str, Any]] = [system(), user("Refactor the parser.")]
    for k in range(14):
        grow(history, k)
    assert compactor.compact(history, window=WINDOW, session_id="s1").strategy == "summary"
    small = Compactor(ScriptedModel(default=Summaries()), store=store, tail_budget=0)
    res = small.compact(history, window=2_000, session_id="s1")
    assert res.strategy in ("summary", "truncate")
    assert res.tokens_after < 1_500 and validate_sequence(res.messages) == []


def test_keeping_results_in_band_also_rolls_forward() -> None:
    """Without a store: the caller keeps result.messages and appends to them."""
    model = ScriptedModel(default=Summaries())
    compactor = Compactor(model)
    history: list[dict[str, Any]] = [system(), user("Refactor the parser.")]
    compactions = 0
    for k in range(40):
        grow(history, k)
        if compactor.should_compact(history, window=WINDOW):
            history = compactor.compact(history, window=WINDOW).messages
            compactions += 1
            assert validate_sequence(history) == []
    assert compactions >= 2 and model.calls == compactions
    second = model.requests[1].messages[-1].content
    assert "<previous_summary>\nSummary 1.\n</previous_summary>" in second
    assert "[Summary of the earlier conversation" not in second
    assert "[user]\nRefactor the parser." in second  # the pinned task is still read
    assert "Refactor the parser." in history[1]["content"]
    assert history[1]["content"].count("<summary>") == 1  # summaries never nest


def test_a_kept_result_keeps_its_summary_through_the_truncate_backstop() -> None:
    """Without a store, a failed summary (here after a paste) must not cost the summary
    the caller's kept history carries."""
    model = ScriptedModel(["The project is codenamed BLUEBIRD."], default=ConnectionRefused())
    compactor = Compactor(model)
    history: list[dict[str, Any]] = [system()]
    for k in range(12):
        history += [user(f"q{k} " + "w " * 150), {"role": "assistant", "content": "v " * 150}]
    history = compactor.compact(history, window=4_000).messages
    assert "BLUEBIRD" in history[1]["content"]
    history += [
        user("here is the log: " + "err " * 3_500),
        {"role": "assistant", "content": "I see the error."},
        user("so what now?"),
    ]
    result = compactor.compact(history, window=4_000)
    assert result.strategy == "truncate"
    assert result.messages[1]["content"].count("BLUEBIRD") == 1  # carried, not duplicated
    assert result.messages[-1] == user("so what now?")
    assert validate_sequence(result.messages) == []
    assert result.tokens_after < compactor.budget(4_000).threshold


def test_stand_ins_never_replace_a_different_message() -> None:
    """A checkpoint that only replaced a message (nothing summarized, watermark 0) must not
    put its stand-in over whatever message now sits at that position."""
    store = FakeStore()
    compactor = Compactor(ScriptedModel(default="A summary."), store=store)
    history = [user("read it"), call(("c1", "read_file")), result("c1", big_text(5_000))]
    assert compactor.compact(history, window=1_000, session_id="s1").strategy == "stand_in"
    assert store.rows[-1].watermark == 0 and store.rows[-1].data["replaced"] == [3]
    other = [user("What is 2+2?"), {"role": "assistant", "content": "4."}, user("thanks")]
    again = Compactor(ScriptedModel(), store=store).compact(other, window=1_000, session_id="s1")
    assert again.strategy == "none" and again.replayed_from is None
    assert again.messages == other
    with_system = [system(), user("What is 2+2?")]
    third = Compactor(ScriptedModel(), store=store).compact(
        with_system, window=1_000, session_id="s1"
    )
    assert third.messages == with_system and validate_sequence(third.messages) == []


@pytest.mark.parametrize(
    ("watermark", "data", "applies"),
    [
        # fingerprints kept: checked, whatever the watermark
        (0, {"replaced": [1], "replaced_fingerprints": {"1": "SAME"}}, True),
        (0, {"replaced": [1], "replaced_fingerprints": {"1": "OTHER"}}, False),
        (0, {"replaced": [9], "replaced_fingerprints": {"9": "SAME"}}, False),  # not here
        # older rows without them: trusted only behind a checked watermark
        (0, {"replaced": [1]}, False),
        (2, {"replaced": [3], "fingerprint": "SAME"}, True),
        (2, {"replaced": [3], "fingerprint": "OTHER"}, False),
        (0, {"replaced": []}, True),
    ],
)
def test_replay_point_checks_replaced_messages(
    watermark: int, data: dict[str, Any], applies: bool
) -> None:
    from datetime import UTC, datetime

    from memoir.compaction.values import replay_point
    from memoir.store.values import CheckpointRow

    row = CheckpointRow(
        id="c", session_id="s", created_at=datetime(2024, 1, 1, tzinfo=UTC),
        watermark=watermark, memory_boundary=watermark, disposition="eligible",
        previous_id=None, data={"summary": "", **data},
    )  # fmt: skip
    messages = [user("a"), user("b"), user("c")]
    found = replay_point(row, messages, [1, 2, 3], lambda m: "SAME")
    assert (found is not None) == applies
