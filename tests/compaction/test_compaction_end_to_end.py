"""Compaction end to end: a verbatim tail, summaries of what happened (not of stand-ins),
one validation at any size, honest metadata — and the two reproductions of the issue."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from memoir.compaction import Compactor, validate_sequence
from memoir.compaction.sequence import MessageCounter
from memoir.errors import CompactionError
from memoir.llm import OfflineModel, ScriptedModel
from memoir.llm.port import Transient

from .helpers import GOOD, FakeStore, assistant, big_text, call, result, system, user

COUNTER = MessageCounter()
BOILERPLATE = ("content omitted", "summary request", "produced output", "reconstructing")


def module_output(k: int, rnd: random.Random) -> str:
    """~6.5k tokens of what `cat` of a module prints; every fifth is a failing test run."""
    lines = [
        f"src/pkg/mod_{k}.py:{i}: value_{i} = compute({rnd.randint(0, 10**6)}, rate={i % 9})"
        for i in range(330)
    ]
    if k % 5 == 4:
        lines += [f"E   AssertionError: handler_{k} returned 500, expected 200", "exit status 1"]
    return "\n".join(lines)


def tool_calls(n: int) -> list[dict[str, Any]]:
    """The first reproduction: OpenAI-style tool calls with ~6.5k-token results."""
    rnd = random.Random(26)
    msgs = [system("You are a coding agent."), user("Find why the handlers fail and fix it.")]
    for k in range(n):
        cmd = f"pytest tests/test_mod_{k}.py -q" if k % 5 == 4 else f"cat src/pkg/mod_{k}.py"
        msgs.append(call((f"call_{k}", "bash")))
        msgs[-1]["tool_calls"][0]["function"]["arguments"] = json.dumps({"command": cmd})
        msgs.append(result(f"call_{k}", module_output(k, rnd)))
    return msgs


def test_forty_large_tool_results_keep_the_recent_ones_and_what_the_rest_did() -> None:
    msgs = tool_calls(40)
    sizes = [COUNTER.count(m) for m in msgs if m["role"] == "tool"]
    assert min(sizes) > 6_000 and max(sizes) < 7_500 and COUNTER.total(msgs) > 260_000
    res = Compactor(OfflineModel()).compact(msgs, window=32_000)
    # nothing older than the tail: the user's request and every call stay; the newest
    # result verbatim, the others as stand-ins saying what ran and how it ended
    assert res.strategy == "stand_in" and validate_sequence(res.messages) == []
    assert res.tokens_after < res.threshold == 24_000
    assert res.tokens_after >= 0.4 * res.threshold  # was one message of 54 tokens
    assert res.messages[1] == msgs[1]
    tools = [m for m in res.messages if m["role"] == "tool"]
    assert len(tools) == 40 and tools[-1] == msgs[-1]
    assert all(m["content"].startswith("[content omitted from the context") for m in tools[:-1])
    assert (
        'of bash command="pytest tests/test_mod_34.py -q"; exit status 1; error: "E '
        'AssertionError: handler_34 returned 500, expected 200"' in tools[34]["content"]
    )
    assert res.kept_verbatim + res.removed_count + len(res.omitted) == len(msgs) - 1


def test_a_longer_run_is_summarized_as_work_not_as_stand_ins() -> None:
    msgs = tool_calls(120)
    res = Compactor(OfflineModel()).compact(msgs, window=32_000)
    assert res.strategy == "summary" and validate_sequence(res.messages) == []
    assert 0.4 * res.threshold <= res.tokens_after < res.threshold
    assert [m for m in res.messages if m["role"] == "tool"][-1] == msgs[-1]
    summary = res.summary or ""
    assert "Goals and constraints:\n- Find why the handlers fail and fix it." in summary
    assert "`pytest tests/test_mod_4.py -q` → exit status 1: E AssertionError: handler_4" in (
        " ".join(summary.split())
    )
    assert "Open errors:" in summary and "Last state:" in summary
    assert not any(words in summary.lower() for words in BOILERPLATE)  # never the topic
    in_context = [o for o in res.omitted if o.where == "context"]
    assert res.kept_verbatim + res.removed_count + len(in_context) == len(msgs) - 1


def log_history() -> list[dict[str, Any]]:
    """The second reproduction: one 1.5 MB user message among small ones."""
    log = "\n".join(
        f"2024-05-01T10:{i % 60:02d}:00 worker-{i % 7} ERROR job {i} failed" for i in range(30_000)
    )
    assert len(log) > 1_500_000
    return [
        system("sys"),
        user("first"),
        assistant("ok"),
        user(log),
        assistant("fine"),
        user("last q"),
    ]


@pytest.mark.parametrize("summarizer", ["offline", "down"])
def test_a_huge_pasted_log_goes_alone_and_the_small_messages_stay(summarizer: str) -> None:
    msgs = log_history()
    model = OfflineModel() if summarizer == "offline" else ScriptedModel(default=Transient("x"))
    res = Compactor(model).compact(msgs, window=32_000)
    assert res.strategy == "stand_in" and res.model_calls == 0
    assert validate_sequence(res.messages) == []
    assert [m["content"] for m in res.messages if m is not res.messages[3]] == [
        "sys",
        "first",
        "ok",
        "fine",
        "last q",
    ]
    stand = res.messages[3]["content"]
    assert stand.startswith("[content omitted from the context: user message, ~")
    assert '30,000 lines; it began: "2024-05-01T10:00:00 worker-0 ERROR job 0 failed"' in stand
    assert "(#4 of the full history)" in stand  # where to re-read it
    assert res.removed_count == 0 and res.kept_verbatim == 4
    assert [(o.position, o.role, o.tool, o.where) for o in res.omitted] == [
        (4, "user", None, "context")
    ]
    assert res.omitted[0].tokens == COUNTER.count(msgs[3]) - 4


def test_the_memory_pipeline_still_sees_the_stored_event_of_the_paste() -> None:
    """The stand-in is in the context only: the checkpoint names the replaced position and
    covers nothing yet, so the event is extracted from the store when it is covered."""
    store = FakeStore()
    res = Compactor(OfflineModel(), store=store).compact(
        log_history(), window=32_000, session_id="s"
    )
    row = store.rows[-1]
    assert row.id == res.checkpoint_id and row.data["strategy"] == "stand_in"
    assert row.watermark == 1 and row.data["replaced"] == [4]  # only the system message
    assert row.data["context_through"] == 6 and row.data["omitted"][0]["where"] == "context"


# -- one validation at any size --------------------------------------------------------

ANTHROPIC = [
    {"role": "user", "content": "read x"},
    {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "r", "input": {}}]},
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "x"}]},
]


@pytest.mark.parametrize("size", ["under", "over"])
@pytest.mark.parametrize(
    ("history", "says"),
    [
        ([user("x"), result("orphan", "data")], "answers no open tool call"),
        (ANTHROPIC, "a tool_use content block; pass tool calls OpenAI-style"),
        ([user("go"), call(("c1", "ls")), assistant("done")], "have no result"),
    ],
)
def test_the_same_checks_run_under_and_over_the_threshold(
    size: str, history: list[dict[str, Any]], says: str
) -> None:
    grown = [dict(m) for m in history]
    if size == "over":
        grown[0] = user("start " + big_text(30_000))
    compactor = Compactor(ScriptedModel(default=GOOD))
    with pytest.raises(CompactionError, match="cannot compact an invalid message sequence") as e:
        compactor.compact(grown, window=8_000)
    assert says in str(e.value)


def test_what_is_tidied_over_the_threshold_also_passes_under_it() -> None:
    runs = [user("a"), user("b"), {"role": "developer", "content": "x"}, assistant("c")]
    res = Compactor(ScriptedModel()).compact(runs, window=8_000)
    assert res.strategy == "none" and res.messages == runs  # accepted, and left as given


# -- honest metadata on every path ------------------------------------------------------


def talk(turns: int) -> list[dict[str, Any]]:
    msgs: list[dict[str, Any]] = [system()]
    for k in range(turns):
        msgs += [user(f"request {k}: " + big_text(900, seed=k)), assistant(f"done {k}.")]
    return msgs


@pytest.mark.parametrize("path", ["summary", "truncate"])
def test_removed_omitted_and_kept_agree(path: str) -> None:
    msgs = talk(30)
    model = ScriptedModel([GOOD]) if path == "summary" else ScriptedModel(default=Transient("x"))
    res = Compactor(model).compact(msgs, window=16_000)
    assert res.strategy == path
    in_context = [o for o in res.omitted if o.where == "context"]
    assert res.kept_verbatim + res.removed_count + len(in_context) == len(msgs) - 1
    if path == "truncate":  # the backstop says what it dropped (it said omitted: [])
        dropped = [o for o in res.omitted if o.where == "dropped"]
        assert len(dropped) == res.removed_count > 0
        assert [o.position for o in dropped] == list(range(2, 2 + res.removed_count))
    else:
        assert not [o for o in res.omitted if o.where == "dropped"]
    data = res.trace_data()
    assert (data["removed_count"], data["kept_verbatim"]) == (res.removed_count, res.kept_verbatim)
    assert data["omitted"] == [o.as_dict() for o in res.omitted]
    document = res.to_json()
    assert list(document)[:7] == [
        "messages",
        "strategy",
        "tokens_before",
        "tokens_after",
        "removed_count",
        "omitted",
        "kept_verbatim",
    ]


def test_the_trace_event_carries_the_accounts() -> None:
    store = FakeStore()
    res = Compactor(ScriptedModel(default=Transient("x")), store=store).compact(
        talk(30), window=16_000, session_id="s"
    )
    data = store.traces.find("s", "compaction")[-1].data
    assert data["strategy"] == "truncate" and data["kept_verbatim"] == res.kept_verbatim
    assert len([o for o in data["omitted"] if o["where"] == "dropped"]) == data["removed_count"]
    assert "request 0" not in json.dumps(data)  # sizes, never content


# -- the tail ---------------------------------------------------------------------------


def test_the_last_tail_budget_of_messages_is_kept_verbatim() -> None:
    msgs = talk(30)
    res = Compactor(ScriptedModel(default=GOOD)).compact(msgs, window=16_000)
    used, recent = 0, []
    for m in reversed(msgs[1:]):
        used += COUNTER.count(m)
        if used > res.tail_budget:
            break
        recent.append(m)
    assert len(recent) >= 8
    blob = json.dumps(res.messages)
    assert all(json.dumps(m["content"])[1:-1] in blob for m in recent)
    assert res.tail_budget == 6_000  # half the threshold of 12,000


def test_a_tool_call_and_its_result_stay_together_when_the_budget_runs_out_between() -> None:
    msgs = [system(), user("go " + big_text(3_000))]
    msgs += [call(("a", "read_file"), ("b", "grep"), text="two reads.")]
    msgs += [result("a", big_text(2_000, seed=1)), result("b", big_text(300, seed=2))]
    msgs += [assistant("Both read."), user("next?")]
    res = Compactor(ScriptedModel(default=GOOD), tail_budget=800).compact(msgs, window=6_000)
    assert validate_sequence(res.messages) == []
    ids = {m.get("tool_call_id") for m in res.messages if m["role"] == "tool"}
    assert ids in (set(), {"a", "b"})


def test_the_tail_ratio_sets_how_much_is_kept() -> None:
    msgs = talk(40)
    small = Compactor(ScriptedModel(default=GOOD), tail_ratio=0.2).compact(msgs, window=16_000)
    large = Compactor(ScriptedModel(default=GOOD), tail_ratio=0.6).compact(msgs, window=16_000)
    assert small.tail_budget == 2_400 and large.tail_budget == 7_200
    assert small.kept_verbatim < large.kept_verbatim
    assert small.tokens_after < large.tokens_after < large.threshold
