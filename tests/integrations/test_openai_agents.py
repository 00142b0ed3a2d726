"""``MemoirSession`` under the real OpenAI Agents SDK, driven by a scripted ``Model`` (no
network): runs over several turns on both backends, items that come back equal (tool
calls, outputs, reasoning), a new session object reading what an earlier one wrote,
``pop_item`` / ``clear_session``, compaction past the budget with the tail verbatim, and
the ``recall`` tool answering from long-term memory."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from agents import Agent, RunConfig, Runner, Session, function_tool
from agents.items import ModelResponse
from agents.models.interface import Model
from agents.usage import Usage
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

from memoir.aio import AsyncMemoir
from memoir.app import Memoir
from memoir.config import Settings
from memoir.integrations.openai_agents import MemoirSession, chat_groups
from memoir.model.event import named_session_id
from memoir.store.port import Store

NO_TRACES = RunConfig(tracing_disabled=True)


def said(text: str) -> ResponseOutputMessage:
    return ResponseOutputMessage(
        id="msg_1",
        type="message",
        role="assistant",
        status="completed",
        content=[ResponseOutputText(type="output_text", text=text, annotations=[])],
    )


def calls(name: str, arguments: str, call_id: str) -> ResponseFunctionToolCall:
    return ResponseFunctionToolCall(
        id=f"fc_{call_id}", type="function_call", name=name, arguments=arguments, call_id=call_id
    )


class ScriptedModel(Model):
    """A Model answering from a queue of outputs, recording every input it was sent."""

    def __init__(self, turns: list[list[Any]]) -> None:
        self.turns = list(turns)
        self.inputs: list[list[Any]] = []

    async def get_response(self, system_instructions: Any, input: Any, *a: Any, **k: Any) -> Any:
        self.inputs.append(input if isinstance(input, list) else [input])
        return ModelResponse(output=self.turns.pop(0), usage=Usage(), response_id=None)

    def stream_response(self, *a: Any, **k: Any) -> AsyncIterator[Any]:
        raise NotImplementedError("the tests run without streaming")


@function_tool
def weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


@pytest.fixture
def memoir(home: Path, store: Store) -> Iterator[AsyncMemoir]:
    settings = Settings.from_env({"MEMOIR_HOME": str(home), "MEMOIR_EMBEDDER": "hash"}, sources=())
    async_memoir = AsyncMemoir(Memoir(settings, store))
    yield async_memoir
    asyncio.run(async_memoir.aclose())


def _run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_it_is_a_session_of_the_sdk(memoir: AsyncMemoir) -> None:
    assert isinstance(MemoirSession("s", memoir), Session)


def test_runs_over_turns_store_items_a_new_session_reads_back(memoir: AsyncMemoir) -> None:
    model = ScriptedModel(
        [
            [calls("weather", '{"city":"Oslo"}', "call_1")],
            [said("It is sunny in Oslo.")],
            [said("You asked about Oslo.")],
        ]
    )
    agent = Agent(name="helper", model=model, tools=[weather])

    async def go() -> tuple[Any, Any, list[Any]]:
        session = MemoirSession("chat-1", memoir)
        first = await Runner.run(agent, "Weather in Oslo?", session=session, run_config=NO_TRACES)
        second = await Runner.run(agent, "What did I ask?", session=session, run_config=NO_TRACES)
        again = await MemoirSession("chat-1", memoir).get_items()
        return first, second, again

    first, second, again = _run(go())
    assert first.final_output == "It is sunny in Oslo."
    assert second.final_output == "You asked about Oslo."
    # the second turn's model saw the first turn, read back from Memoir
    seen = model.inputs[2]
    assert seen[0] == {"role": "user", "content": "Weather in Oslo?"}
    assert [i.get("type") for i in seen[1:4]] == [
        "function_call",
        "function_call_output",
        "message",
    ]
    assert seen[2]["output"] == "sunny in Oslo" and seen[2]["call_id"] == "call_1"
    assert seen[-1] == {"role": "user", "content": "What did I ask?"}
    assert len(again) == 6 and again[:5] == seen  # a new object, the same items, in order
    assert again[-1]["content"][0]["text"] == "You asked about Oslo."
    # stored as a conversation Memoir searches
    hits = _run(memoir.search("Oslo", mode="text"))
    # the session's name is the SDK's session id; it is stored under its user's digest of it
    assert {h.session_id for h in hits} == {named_session_id(memoir.user, "chat-1")}


REASONING = {
    "type": "reasoning",
    "id": "rs_1",
    "summary": [{"type": "summary_text", "text": "check the calendar"}],
    "encrypted_content": "gAAAA-opaque",
}
ITEMS: list[dict[str, Any]] = [
    {"role": "user", "content": [{"type": "input_text", "text": "Plan Friday"}]},
    REASONING,
    {
        "type": "function_call",
        "id": "fc_9",
        "call_id": "c9",
        "name": "calendar",
        "arguments": '{"day": "fri", "n": 2.5}',
        "status": "completed",
    },
    {"type": "function_call_output", "call_id": "c9", "output": '{"free": [9, 14]}'},
    {"type": "web_search_call", "id": "ws_1", "status": "completed", "action": {"query": "x"}},
    {
        "type": "message",
        "id": "msg_2",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": "Free at 9 and 14.", "annotations": []}],
    },
    {"role": "user", "content": ""},  # empty: still an item
    {"role": "user", "content": "naïve ünïcode ✓ \u2028 line"},
]


def test_every_kind_of_item_comes_back_equal_and_pop_and_clear(memoir: AsyncMemoir) -> None:
    async def go() -> None:
        session = MemoirSession("items", memoir)
        assert await session.get_items() == [] and await session.pop_item() is None
        await session.add_items(ITEMS[:4])
        await session.add_items(ITEMS[4:])
        assert await MemoirSession("items", memoir).get_items() == ITEMS
        assert await session.get_items(limit=2) == ITEMS[-2:]
        assert await session.get_items(limit=0) == []
        assert await session.pop_item() == ITEMS[-1]
        assert await session.pop_item() == ITEMS[-2]
        assert await session.get_items() == ITEMS[:-2]
        await session.add_items([ITEMS[0]])  # the same item again is stored again
        assert await MemoirSession("items", memoir).get_items() == [*ITEMS[:-2], ITEMS[0]]
        await session.clear_session()
        assert await session.get_items() == []
        await session.add_items([ITEMS[1]])
        assert await MemoirSession("items", memoir).get_items() == [REASONING]

    _run(go())


def _long_history(turns: int) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for n in range(turns):
        items += [
            {"role": "user", "content": f"Question {n}: how do we deploy service {n}? " * 6},
            {
                "type": "function_call",
                "call_id": f"c{n}",
                "name": "lookup",
                "arguments": f'{{"n": {n}}}',
            },
            {"type": "function_call_output", "call_id": f"c{n}", "output": f"runbook {n} " * 20},
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": f"Deploy {n} with make. " * 8}],
            },
        ]
    return items


def test_compaction_past_the_budget_summary_then_the_tail_verbatim(memoir: AsyncMemoir) -> None:
    items = _long_history(24)

    async def go() -> tuple[list[Any], list[Any], MemoirSession]:
        session = MemoirSession("long", memoir, window=4000)
        await session.add_items(items[:4])
        small = await session.get_items()
        await session.add_items(items[4:])
        return small, await session.get_items(), session

    small, view, session = _run(go())
    assert small == items[:4]  # under the budget: unchanged
    assert session.last_compaction is not None
    assert session.last_compaction.strategy == "summary"
    head, tail = view[0], view[1:]
    assert head["role"] == "user" and "Summary" in head["content"]
    assert 4 <= len(tail) < len(items) and tail == items[-len(tail) :]  # verbatim suffix
    calls_kept = {i["call_id"] for i in tail if i.get("type") == "function_call"}
    outputs_kept = {i["call_id"] for i in tail if i.get("type") == "function_call_output"}
    assert calls_kept == outputs_kept  # no call without its output, nor the reverse
    # the stored history is whole; a new session reads the same compacted view back
    assert _run(MemoirSession("long", memoir).get_items()) == items
    again = _run(MemoirSession("long", memoir, window=4000).get_items())
    assert again[1:] == tail and "Summary" in again[0]["content"]


def test_a_compacted_view_feeds_a_real_run(memoir: AsyncMemoir) -> None:
    model = ScriptedModel([[said("Done.")]])
    agent = Agent(name="helper", model=model)

    async def go() -> tuple[Any, list[Any]]:
        session = MemoirSession("long-run", memoir, window=4000)
        await session.add_items(_long_history(24))
        done = await Runner.run(agent, "And now?", session=session, run_config=NO_TRACES)
        return done, await MemoirSession("long-run", memoir).get_items()

    result, stored = _run(go())
    assert result.final_output == "Done."
    # the run stored only its own items after the whole history: never the summary
    assert stored[:-2] == _long_history(24)
    assert stored[-2] == {"role": "user", "content": "And now?"}
    assert stored[-1]["content"][0]["text"] == "Done."
    sent = model.inputs[0]
    assert "Summary" in sent[0]["content"] and sent[-1] == {"role": "user", "content": "And now?"}
    assert len(sent) < 24 * 4


def test_the_recall_tool_answers_from_long_term_memory(memoir: AsyncMemoir) -> None:
    sync = memoir.memoir
    sync.append(
        "earlier",
        [
            {
                "role": "user",
                "content": "Remember that we decided to use PostgreSQL for the database.",
            }
        ],
        project="agents",
    )
    assert sync.remember("earlier").receipt.items >= 1  # type: ignore[union-attr]
    model = ScriptedModel(
        [
            [calls("recall", '{"query": "database"}', "r1")],
            [said("We use PostgreSQL.")],
        ]
    )

    async def go() -> Any:
        session = MemoirSession("asks", memoir)
        agent = Agent(name="helper", model=model, tools=[session.recall_tool()])
        return await Runner.run(agent, "Which database?", session=session, run_config=NO_TRACES)

    result = _run(go())
    assert result.final_output == "We use PostgreSQL."
    output = next(i for i in model.inputs[1] if i.get("type") == "function_call_output")
    assert output["call_id"] == "r1" and "PostgreSQL" in output["output"]
    assert output["output"].startswith("- [decision]")


def test_chat_groups_join_an_assistant_turn_and_keep_outputs_apart() -> None:
    groups = chat_groups(ITEMS[:6])
    assert [(m["role"], members) for m, members in groups] == [
        ("user", [0]),
        ("assistant", [1, 2]),
        ("tool", [3]),
        ("assistant", [4, 5]),
    ]
    assert groups[1][0]["tool_calls"][0]["id"] == "c9"
    assert groups[3][0]["content"] == "Free at 9 and 14."


SYSTEM_ITEM = {"role": "system", "content": "Be brief."}
VIEW_ITEMS: list[dict[str, Any]] = [SYSTEM_ITEM, *ITEMS[:6], {"role": "user", "content": "ok"}]
SUMMARY = {"role": "user", "content": "[Summary] planning Friday"}


def _context(kept_from: int, system: bool = True) -> list[Any]:
    """What a compactor hands back: the leading system message, the summary, then the
    chat groups from ``kept_from`` on, the very objects."""
    groups = chat_groups(VIEW_ITEMS)
    lead = [groups[0][0]] if system else []
    return [*lead, SUMMARY, *(m for m, _ in groups[kept_from:])], groups


@pytest.mark.parametrize(
    ("kept_from", "tail_from_item", "head_has"),
    [
        (2, 2, None),  # the assistant turn (reasoning + call) and all after: kept as items
        (3, 5, "(tool output)"),  # a tool output cannot lead: it joins the summary
        (4, 5, None),  # the hosted-tool turn
        (5, 7, None),  # only the last user message
    ],
)
def test_the_view_keeps_a_suffix_of_whole_groups_after_the_summary(
    kept_from: int, tail_from_item: int, head_has: str | None
) -> None:
    from memoir.integrations.openai_agents import _view

    context, groups = _context(kept_from)
    view = _view(context, groups, VIEW_ITEMS)
    assert view[0] is SYSTEM_ITEM  # the instructions given first stay, as given
    assert view[1]["role"] == "user" and view[1]["content"].startswith("[Summary]")
    assert view[2:] == VIEW_ITEMS[tail_from_item:]
    if head_has is not None:
        assert head_has in view[1]["content"]


def test_a_view_of_everything_kept_is_the_items() -> None:
    from memoir.integrations.openai_agents import _view

    groups = chat_groups(VIEW_ITEMS)
    assert _view([m for m, _ in groups], groups, VIEW_ITEMS) == VIEW_ITEMS


def test_a_call_waiting_for_its_output_passes_while_it_fits_else_is_refused(
    memoir: AsyncMemoir,
) -> None:
    from memoir.errors import CompactionError

    waiting = [ITEMS[0], ITEMS[2]]  # a prompt and a call with no output yet

    async def go() -> None:
        small = MemoirSession("waits", memoir, window=4000)
        await small.add_items(waiting)
        assert await small.get_items() == waiting
        big = MemoirSession("waits-long", memoir, window=4000)
        await big.add_items([*_long_history(24), ITEMS[2]])
        with pytest.raises(CompactionError, match="have no result"):
            await big.get_items()

    _run(go())
