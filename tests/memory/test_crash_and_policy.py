"""Crash safety and privacy of memory extraction.

- A process killed (SIGKILL) at each commit point between a checkpoint's write and its
  settlement loses nothing: a recovery run afterwards leaves the store exactly as a run
  that never crashed (no item twice, no range lost, the cursor where it belongs).
- Hypothesis flips a session's policy across its history; a recording model proves that
  nothing said while the session was denied ever reaches a model — not as a turn, not
  through an accumulated compaction summary.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memoir import service
from memoir.app import Memoir
from memoir.config import Settings
from memoir.llm import OfflineModel
from memoir.llm.port import ModelRequest
from memoir.memory.item_store import memory_parts
from memoir.model import SessionFlags
from memoir.store.values import CheckpointRow

from .test_pipeline import SAID, _checkpoint, _memories, _put

SCRIPT = textwrap.dedent(
    """
    import os, signal, sys
    from datetime import UTC, datetime, timedelta
    from memoir import service
    from memoir.app import Memoir
    from memoir.config import Settings
    from memoir.memory.item_store import memory_parts
    from memoir.llm.port import Truncated
    from memoir.model import Author, Event, EventKind, Harness, Session, SessionFlags
    from memoir.model import build_exchanges
    from memoir.store import IngestBatch
    from memoir.store.values import CheckpointRow

    home, point, scenario = sys.argv[1], sys.argv[2], sys.argv[3]
    T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
    said = [
        ("user", "I prefer tabs over spaces in every repository."),
        ("assistant", "Noted."),
        ("user", "We decided to use PostgreSQL for the billing service."),
        ("assistant", "PostgreSQL it is."),
    ]
    def die(label):
        if label == point:
            os.kill(os.getpid(), signal.SIGKILL)
    m = Memoir.open(Settings.from_env({"MEMOIR_HOME": home}, sources=(), llm="offline"))
    store = m.store
    flags = SessionFlags(incognito=scenario == "denied")
    events = [
        Event("s1", n, EventKind.USER_TEXT if who == "user" else EventKind.ASSISTANT_TEXT,
              Author.USER if who == "user" else Author.ASSISTANT, text, T0 + timedelta(minutes=n))
        for n, (who, text) in enumerate(said, start=1)
    ]
    session = Session("s1", "proj", Harness.API, flags=flags)
    store.ingest.apply(IngestBatch(session, tuple(events), tuple(build_exchanges(events))))
    memories = service.memory_engine(m)
    if scenario == "failing":
        class Failing:
            name = "offline"
            def complete(self, request):
                raise Truncated("cut")
        memories.runner.model = Failing()
    part = memory_parts(store).memory
    for name in ("enqueue", "settle", "deny", "fail"):
        original = getattr(part, name)
        def wrapped(*a, __original=original, __name=name, **kw):
            result = __original(*a, **kw)
            die(__name)
            return result
        setattr(part, name, wrapped)
    model = memories.runner.model
    class Dying:
        name = model.name
        def complete(self, request):
            answer = model.complete(request)
            die("model")
            return answer
    memories.runner.model = Dying()
    row = CheckpointRow("ck1", "s1", T0 + timedelta(hours=1), 4, 4,
                        "policy_denied" if scenario == "denied" else "eligible", None,
                        {"summary": "so far", "context_through": 4, "window": 32000})
    store.checkpoints.put(row)
    die("checkpoint")
    memories.on_checkpoint(row)
    memories.lane.wait_idle(30)
    m.close()
    """
)


def _run(home: Path, point: str, scenario: str) -> int:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(home), point, scenario],
        capture_output=True,
        text=True,
        timeout=120,
    )
    if done.returncode not in (0, -9):
        raise AssertionError(done.stderr)
    return done.returncode


def _state(home: Path) -> dict[str, Any]:
    with Memoir.open(Settings.from_env({"MEMOIR_HOME": str(home)}, sources=(), llm="offline")) as m:
        service.recover_memories(m)
        store = m.store
        items = sorted(
            (i.content, tuple((s.ordinal, s.quote) for s in i.sources), i.operation_id)
            for i in memory_parts(store).items.find()
        )
        return {
            "items": items,
            "cursor": memory_parts(store).memory.cursor("s1"),
            "receipts": sorted(
                (r.operation_id, r.outcome) for r in memory_parts(store).memory.receipts()
            ),
            "pending": memory_parts(store).memory.pending("s1"),
            "queued": memory_parts(store).memory.queued(),
            "denials": [
                (d.range_after, d.range_through) for d in memory_parts(store).memory.denials("s1")
            ],
        }


POINTS = {
    "eligible": ["checkpoint", "enqueue", "model", "settle"],
    "failing": ["checkpoint", "enqueue", "fail"],
    "denied": ["checkpoint", "enqueue", "deny", "settle"],
}


@pytest.mark.slow
@pytest.mark.parametrize(
    ("scenario", "point"), [(s, p) for s, points in POINTS.items() for p in points]
)
def test_a_kill_at_any_commit_point_is_recovered_as_if_it_never_happened(
    tmp_path: Path, scenario: str, point: str
) -> None:
    reference, crashed = tmp_path / "reference", tmp_path / "crashed"
    assert _run(reference, "never", scenario) == 0
    assert _run(crashed, point, scenario) == -9  # it really died there
    expected, got = _state(reference), _state(crashed)
    assert got == expected
    assert expected["cursor"] == 4 and expected["pending"] is None and expected["queued"] == []
    if scenario == "eligible":
        assert len(expected["items"]) == 2  # both statements, once each
    if scenario == "denied":
        assert expected["items"] == [] and expected["denials"] == [(0, 4)]


# privacy --------------------------------------------------------------------------------


class Recording:
    def __init__(self) -> None:
        self.inner = OfflineModel()
        self.name = "offline"
        self.requests: list[ModelRequest] = []

    def complete(self, request: ModelRequest) -> Any:
        self.requests.append(request)
        return self.inner.complete(request)


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(st.lists(st.tuples(st.booleans(), st.integers(1, 3), st.booleans()), min_size=1, max_size=6))
def test_nothing_said_while_denied_ever_reaches_a_model(
    tmp_path_factory: pytest.TempPathFactory, steps: list[tuple[bool, int, bool]]
) -> None:
    """Each step: the session's policy now (denied or not), some user statements carrying
    a unique marker, a checkpoint freezing that policy (its summary quoting the markers it
    covers), then the lane runs. No request may hold a marker said while denied."""
    from memoir.store import open_store

    home = tmp_path_factory.mktemp("policy")
    store = open_store(Settings.from_env({"MEMOIR_HOME": str(home)}, sources=()))
    try:
        model = Recording()
        memories = _memories(store, model)
        denied_markers: list[str] = []
        allowed_markers: list[str] = []
        covered: list[str] = []
        for n, (denied, count, remember) in enumerate(steps):
            markers = [f"zq{n}x{k}" for k in range(count)]
            said = [("user", f"I prefer the {m} setting for my editor.") for m in markers]
            _put(store, "s1", [*said, ("assistant", "ok")], incognito=False)
            store.sessions.set_flags("s1", SessionFlags(incognito=denied))
            (denied_markers if denied else allowed_markers).extend(markers)
            covered.extend(markers)
            row = _checkpoint("s1", n + 1, store.events.last_ordinal("s1"), denied=denied)
            row.data["summary"] = "The user talked about " + ", ".join(covered) + "."
            store.checkpoints.put(row)
            if remember and not denied:
                memories.remember("s1")
            memories.recover()
        seen = "\n".join(
            (r.system or "") + "\n".join(m.content for m in r.messages) for r in model.requests
        )
        leaked = [m for m in denied_markers if m in seen]
        assert leaked == []
        for item in memory_parts(store).items.find():
            assert not any(m in item.content for m in denied_markers)
        if allowed_markers and not steps[0][0]:
            assert model.requests  # eligible text was extracted at all
    finally:
        store.close()


def test_a_summary_accumulated_over_a_denied_range_is_never_sent(tmp_path: Path) -> None:
    from memoir.store import open_store

    store = open_store(Settings.from_env({"MEMOIR_HOME": str(tmp_path)}, sources=()))
    try:
        model = Recording()
        memories = _memories(store, model)
        _put(store, "s1", SAID[:2], incognito=True)
        store.checkpoints.put(_checkpoint("s1", 1, 2, denied=True))
        memories.recover()
        _put(store, "s1", [("user", "I live in Lisbon."), ("assistant", "ok")])
        store.sessions.set_flags("s1", SessionFlags())
        later = CheckpointRow(
            "ck2",
            "s1",
            datetime(2026, 3, 2, tzinfo=UTC),
            2,
            2,
            "eligible",
            None,
            {"summary": "PRIVATE-SUMMARY of the incognito part", "context_through": 2},
        )
        store.checkpoints.put(later)  # a summary written over the denied range
        store.checkpoints.put(_checkpoint("s1", 3, 4))
        memories.recover()
        assert model.requests and all(
            "PRIVATE-SUMMARY" not in m.content for r in model.requests for m in r.messages
        )
        assert all("tabs" not in m.content for r in model.requests for m in r.messages)
    finally:
        store.close()
