"""Histories in the shapes agents really send: every block counted, runs of user messages,
OpenAI-only roles and fields, a head holding an image, odd field types."""

from __future__ import annotations

import json
import tempfile
from typing import Any

import pytest

from memoir.compaction import Compactor, validate_sequence
from memoir.config import Settings
from memoir.errors import CompactionError
from memoir.llm import ScriptedModel
from memoir.llm.port import Transient
from memoir.store import open_store

BIG = "lorem ipsum dolor sit amet " * 8000  # ~40k tokens


def test_anthropic_blocks_and_thinking_are_counted_at_their_size() -> None:
    c = Compactor(ScriptedModel(default="Summary."))
    blocks = [
        {"role": "user", "content": [{"type": "text", "text": "read the log"}]},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t1", "name": "read", "input": {"p": "x"}}],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": BIG}]},
    ]
    assert c.tokens.total(blocks) > 30_000 and c.should_compact(blocks, window=32_000)
    with pytest.raises(CompactionError, match="tool_use content block"):  # said, not ignored
        c.compact(blocks, window=32_000)
    thinking = {"role": "assistant", "content": [{"type": "thinking", "thinking": BIG}]}
    refusal = {"role": "assistant", "content": None, "refusal": BIG}
    assert c.tokens.total([thinking]) > 30_000 and c.tokens.total([refusal]) > 30_000


@pytest.mark.parametrize("run", ["paste then question", "a thousand notes"])
def test_the_latest_user_message_of_a_run_survives(run: str) -> None:
    if run == "paste then question":
        msgs = [
            {"role": "system", "content": "You are a coding agent."},
            {"role": "user", "content": "Here is my file:\n" + BIG},
            {"role": "user", "content": "Why does f return the wrong type?"},
        ]
        latest, window = "Why does f return the wrong type?", 32_000
    else:
        msgs = [{"role": "user", "content": f"note number {i}"} for i in range(1000)]
        latest, window = "note number 999", 4_000
    r = Compactor(ScriptedModel(default="Summary.")).compact(msgs, window=window)
    assert r.tokens_after < r.threshold and validate_sequence(r.messages) == []
    assert latest in json.dumps(r.messages)


def test_joined_runs_do_not_make_every_turn_compact_again() -> None:
    store = open_store(Settings.from_env({"MEMOIR_HOME": tempfile.mkdtemp()}))
    model = ScriptedModel(default="Summary so far.")
    c = Compactor(model, store=store)
    full: list[dict[str, Any]] = [{"role": "system", "content": "agent"}]
    calls = []
    for t in range(12):
        full += [
            {"role": "user", "content": f"<reminder {t}>"},
            {"role": "user", "content": f"request {t} " + "x " * 650},
            {"role": "assistant", "content": f"reply {t} " + "z " * 90},
        ]
        r = c.compact(full, window=4000, session_id="s")
        assert r.strategy == "none" or r.tokens_before >= r.threshold  # only above it
        calls.append(model.calls)
    store.close()
    assert calls[-1] < 8  # a summary every few turns, not one per turn (it was 9 of 12)


@pytest.mark.parametrize(
    "odd",
    [
        {"role": "developer", "content": "Follow the style guide."},
        {"role": "assistant", "content": None, "refusal": "I can't help with that."},
        {"role": "assistant", "content": ""},
        {"role": "system", "content": "Mid-conversation instruction."},
    ],
)
def test_what_openai_accepts_is_compacted_not_refused(odd: dict[str, Any]) -> None:
    filler = {"role": "assistant", "content": "word " * 6000}
    if odd["role"] == "developer":
        msgs = [odd, {"role": "user", "content": "hi"}, filler, {"role": "user", "content": "go"}]
    else:
        msgs = [{"role": "user", "content": "hi"}, filler, {"role": "user", "content": "more"}]
        msgs += [odd, {"role": "user", "content": "go on"}]
    c = Compactor(ScriptedModel(default="Summary of it all."))
    assert c.should_compact(msgs, window=8000)
    r = c.compact(msgs, window=8000)
    assert r.tokens_after < r.threshold and validate_sequence(r.messages) == []


def test_a_greeting_before_the_first_user_message_is_kept_as_a_note() -> None:
    msgs = [
        {"role": "assistant", "content": "Hello! How can I help?"},
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "word " * 6000},
        {"role": "user", "content": "go on"},
    ]
    r = Compactor(ScriptedModel(default="Summary of it all.")).compact(msgs, window=8000)
    assert validate_sequence(r.messages) == [] and "go on" in json.dumps(r.messages)


def test_a_head_holding_an_image_still_carries_the_summary_to_the_backstop() -> None:
    def turn(i: int, image: bool = False) -> list[dict[str, Any]]:
        words: Any = f"step {i} " + "w " * 200
        if image:
            words = [
                {"type": "text", "text": f"look at screenshot {i}"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
            ]
        return [{"role": "user", "content": words}, {"role": "assistant", "content": "v " * 300}]

    hist: list[dict[str, Any]] = [{"role": "system", "content": "agent"}]
    for i in range(12):
        hist += turn(i)
    hist += turn(12, image=True)
    # a tail of 1,500 tokens holds the last reply but not the image turn before it (1,610
    # tokens): the head carries that latest user message, image and all
    compactor = Compactor(ScriptedModel(["SECRET-FACT-42 was decided."]), tail_budget=1_500)
    first = compactor.compact(hist, window=8000)
    assert isinstance(first.messages[1]["content"], list)  # the head carries the image
    hist = list(first.messages)
    for i in range(13, 30):
        hist += turn(i)
    down = Compactor(ScriptedModel(default=Transient("down"))).compact(hist, window=8000)
    assert down.strategy == "truncate" and "SECRET-FACT-42" in json.dumps(down.messages)


def test_odd_field_types_are_a_compaction_error_or_ignored_never_a_type_error() -> None:
    tail = [{"role": "assistant", "content": "b " * 9000}, {"role": "user", "content": "c"}]
    c = Compactor(ScriptedModel(default="S."))
    with pytest.raises(CompactionError, match="known role"):
        c.compact([{"role": "user", "content": "a"}, {"role": ["user"]}, *tail], window=4000)
    named = [{"role": "user", "content": "a", "name": {"a": 1}}, *tail]  # a name that is none
    assert validate_sequence(c.compact(named, window=4000).messages) == []
