"""Hypothesis strategies: valid OpenAI-style histories with tool rounds."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from memoir.compaction import validate_sequence

__all__ = ["histories"]

_WORDS = st.sampled_from(["alpha", "beta", "数据", "ログ", "x" * 40, "done.", "fix", "🙂"])


@st.composite
def _text(draw: Any, big: bool = True) -> str:
    words = draw(st.lists(_WORDS, min_size=1, max_size=12))
    repeat = draw(st.sampled_from([1, 1, 1, 20, 200, 2000] if big else [1, 5]))
    return " ".join(words) * repeat


@st.composite
def histories(draw: Any, max_turns: int = 12) -> list[dict[str, Any]]:
    """system? then turns: a user message, assistant rounds (text or parallel tool calls
    with results), occasionally ending on tool results or a user message."""
    msgs: list[dict[str, Any]] = []
    if draw(st.booleans()):
        msgs.append({"role": "system", "content": draw(_text(big=False))})
    ids = 0
    turns = draw(st.integers(1, max_turns))
    for turn in range(turns):
        msgs.append({"role": "user", "content": draw(_text())})
        rounds = draw(st.integers(0 if turn == turns - 1 else 1, 4))
        for r in range(rounds):
            n_calls = draw(st.integers(0, 3))
            if n_calls == 0:
                msgs.append({"role": "assistant", "content": draw(_text())})
                break
            calls = []
            for _ in range(n_calls):
                ids += 1
                name = draw(st.sampled_from(["read_file", "grep", "ls", "写文件"]))
                calls.append(
                    {
                        "id": f"call_{ids}",
                        "type": "function",
                        "function": {"name": name, "arguments": "{}"},
                    }
                )
            text = draw(st.one_of(st.none(), _text(big=False)))
            msgs.append({"role": "assistant", "content": text, "tool_calls": calls})
            order = draw(st.permutations(calls))
            for c in order:
                msgs.append({"role": "tool", "tool_call_id": c["id"], "content": draw(_text())})
            if r == rounds - 1 and draw(st.booleans()):
                msgs.append({"role": "assistant", "content": draw(_text(big=False))})
    problems = validate_sequence(msgs)
    assert not problems, problems
    return msgs
