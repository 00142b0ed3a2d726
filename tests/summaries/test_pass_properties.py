"""Random histories of growth, failures and time through the real pass: the invariants
that must hold whatever happens."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from memoir.llm import ScriptedModel
from memoir.llm.port import Transient
from memoir.summaries.state import SummaryKind, parse_summary_file

from .helpers import (
    HOUR_MS,
    NOW_MS,
    append,
    archive,
    conversation,
    make_memoir,
    run_pass,
    summary_file,
)

MAX = 3
step = st.tuples(
    st.booleans(),  # the transcript grows before this sync
    st.booleans(),  # the model fails during this sync
    st.integers(0, 3 * HOUR_MS),  # time passing before this sync
)


@settings(max_examples=40, deadline=None)
@given(steps=st.lists(step, min_size=1, max_size=14))
def test_invariants(steps: list[tuple[bool, bool, int]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        memoir = make_memoir(home, summary_max_attempts=MAX)
        path = archive(home, "s", conversation("s", 2))
        memoir.store.index_file(path)
        now, had_body, gave_up, calls = NOW_MS, False, False, 0
        for n, (grow, fails, wait) in enumerate(steps):
            now += wait
            if grow:
                append(path, conversation("s", 1, words=5 + n))
                memoir.store.index_file(path)
            model = ScriptedModel(default=Transient("down") if fails else f"Summary {n}.")
            run_pass(memoir, limit=10, now_ms=now, model=model)
            calls += model.calls
            state = parse_summary_file(summary_file(path).read_text())
            if gave_up:
                assert model.calls == 0, "no call after giving up"
            if had_body:
                assert state.kind is SummaryKind.REAL and state.body.startswith("Summary ")
            if state.failure is not None:
                assert state.failure.attempts <= MAX
                gave_up = state.failure.attempts >= MAX
            if state.coverage is not None:
                assert state.coverage.amount <= path.stat().st_size
            if state.kind is SummaryKind.REAL and state.failure is None:
                assert state.coverage is not None
                assert state.coverage.amount == path.stat().st_size  # fresh after success
            had_body = had_body or state.kind is SummaryKind.REAL
        assert calls <= len(steps)
