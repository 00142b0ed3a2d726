"""Resuming from any byte offset gives the same events as one read of the whole file."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from memoir.demo import ClaudeWriter, CodexWriter, tool_use_block
from memoir.ingest.discover import Format
from memoir.ingest.reader import ReadResult, read_bytes
from memoir.model import build_exchanges

SID = "11111111-2222-4333-8444-555555555555"


def _claude() -> bytes:
    w = ClaudeWriter(SID)
    w.user("first question").assistant("thinking out loud", tool_use_block("t1", "Bash", {"c": 1}))
    w.tool("t1", "output one").assistant("answer one").snapshot()
    w.user("second question — ünïcödé ✓").assistant("answer two", split=False)
    w.summary("two questions")
    return w.bytes()


def _codex() -> bytes:
    w = CodexWriter("cx").user("q1").reasoning("hmm").call("c1", "shell", {"a": 1}, "ok")
    return w.assistant("a1").user("q2").assistant("a2").bytes()


def _in_steps(data: bytes, fmt: Format, cuts: list[int]) -> list[ReadResult]:
    results: list[ReadResult] = []
    offset, line, ordinal, state = 0, 0, 1, {}
    for cut in [*sorted(cuts), len(data)]:
        r = read_bytes(
            data[:cut],
            fmt,
            session_id=SID,
            offset=offset,
            line_count=line,
            next_ordinal=ordinal,
            state=state,
        )
        results.append(r)
        offset, line, state = r.offset, r.line_count, r.state
        ordinal += len(r.events)
    return results


def _key(results: list[ReadResult]) -> list[tuple[object, ...]]:
    return [
        (e.ordinal, e.kind, e.text, e.tool_name, e.call_id, e.source_line, e.source_offset)
        for r in results
        for e in r.events
    ]


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_any_cut_points_give_the_same_events(data: st.DataObject) -> None:
    fmt, raw = data.draw(st.sampled_from([(Format.CLAUDE, _claude()), (Format.CODEX, _codex())]))
    newlines = [i + d for i, b in enumerate(raw) if b == 10 for d in (-1, 0, 1)]
    cut = st.one_of(st.integers(0, len(raw)), st.sampled_from(newlines))
    cuts = data.draw(st.lists(cut, max_size=4))
    whole = read_bytes(raw, fmt, session_id=SID)
    steps = _in_steps(raw, fmt, cuts)
    assert _key(steps) == _key([whole])
    assert steps[-1].offset == whole.offset == len(raw)
    assert steps[-1].state.get("tools") == whole.state.get("tools")
    events = [e for r in steps for e in r.events]
    assert build_exchanges(events) == build_exchanges(whole.events)
    assert all(not r.skipped for r in steps)


def test_cut_just_before_a_newline_keeps_line_numbers() -> None:
    raw = _claude()
    first_newline = raw.index(b"\n")
    steps = _in_steps(raw, Format.CLAUDE, [first_newline])
    assert steps[0].offset == first_newline  # the complete object was accepted
    assert _key(steps) == _key([read_bytes(raw, Format.CLAUDE, session_id=SID)])
