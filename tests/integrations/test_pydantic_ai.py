"""``MemoirCompaction`` under the real pydantic-ai, with its own test models (no network):
under the budget the history passes unchanged; past it the model sees one request with the
system prompt and the summary, then the newest messages verbatim with every tool call next
to its return, and the run succeeds — on both backends."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel

from memoir.aio import AsyncMemoir
from memoir.app import Memoir
from memoir.config import Settings
from memoir.integrations.pydantic_ai import MemoirCompaction, chat_messages
from memoir.store.port import Store

SYSTEM = "You are the deploy helper."


@pytest.fixture
def memoir(home: Path, store: Store) -> Iterator[AsyncMemoir]:
    settings = Settings.from_env({"MEMOIR_HOME": str(home), "MEMOIR_EMBEDDER": "hash"}, sources=())
    async_memoir = AsyncMemoir(Memoir(settings, store))
    yield async_memoir
    asyncio.run(async_memoir.aclose())


def history(turns: int) -> list[ModelMessage]:
    """``turns`` finished exchanges, each a prompt, a tool call, its return and an answer."""
    out: list[ModelMessage] = []
    for n in range(turns):
        prompt = UserPromptPart(f"Question {n}: how do we deploy service {n}? " * 6)
        parts: list[Any] = [SystemPromptPart(SYSTEM), prompt] if n == 0 else [prompt]
        out += [
            ModelRequest(parts=parts),
            ModelResponse(parts=[ToolCallPart("lookup", {"n": n}, tool_call_id=f"c{n}")]),
            ModelRequest(
                parts=[ToolReturnPart("lookup", f"runbook {n} " * 20, tool_call_id=f"c{n}")]
            ),
            ModelResponse(parts=[TextPart(f"Deploy {n} with make. " * 8)]),
        ]
    return out


class Recorder:
    """A FunctionModel's function: records what the model was sent, answers in text."""

    def __init__(self) -> None:
        self.seen: list[list[ModelMessage]] = []

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.seen.append(list(messages))
        return ModelResponse(parts=[TextPart("Use make deploy.")])


def _run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_under_the_budget_the_history_passes_unchanged(memoir: AsyncMemoir) -> None:
    processor = MemoirCompaction(memoir, window=100_000)
    past = history(2)
    recorder = Recorder()
    agent = Agent(FunctionModel(recorder), capabilities=[processor.capability()])
    result = _run(agent.run("And service 9?", message_history=past))
    assert result.output == "Use make deploy."
    sent = recorder.seen[0]
    assert sent[: len(past)] == past and len(sent) == len(past) + 1
    assert processor.last is not None and processor.last.strategy == "none"
    # the processor itself hands back the very list
    assert _run(processor(past)) is past


def test_past_the_budget_the_model_sees_summary_and_verbatim_tail(memoir: AsyncMemoir) -> None:
    processor = MemoirCompaction(memoir, window=4000)
    past = history(24)
    recorder = Recorder()
    agent = Agent(FunctionModel(recorder), capabilities=[processor.capability()])
    result = _run(agent.run("And service 99?", message_history=past))
    assert result.output == "Use make deploy."
    assert processor.last is not None and processor.last.strategy == "summary"
    sent = recorder.seen[0]
    head, tail = sent[0], sent[1:]
    assert isinstance(head, ModelRequest)
    assert head.parts[0] is past[0].parts[0]  # the system prompt stays first, as it was
    summary = head.parts[1]
    assert isinstance(summary, UserPromptPart) and "Summary" in str(summary.content)
    # the tail: the newest messages, the very objects, ending with the new prompt
    assert 4 <= len(tail) < len(past)
    assert all(a is b for a, b in zip(tail[:-1], past[-(len(tail) - 1) :], strict=True))
    last = tail[-1]
    assert isinstance(last, ModelRequest) and last.parts[-1].content == "And service 99?"
    called = {p.tool_call_id for m in tail for p in m.parts if isinstance(p, ToolCallPart)}
    returned = {p.tool_call_id for m in tail for p in m.parts if isinstance(p, ToolReturnPart)}
    assert called == returned and called  # every pair whole, none split
    # the run's history is the compacted one (pydantic-ai keeps what the processor made)
    assert len(result.all_messages()) == len(sent) + 1


def test_a_tool_run_past_the_budget_with_the_test_model(memoir: AsyncMemoir) -> None:
    processor = MemoirCompaction(memoir, window=4000)
    agent = Agent(TestModel(), capabilities=[processor.capability()])

    @agent.tool_plain
    def lookup(n: int) -> str:
        """A runbook."""
        return f"runbook {n}"

    result = _run(agent.run("Deploy service 7?", message_history=history(24)))
    # TestModel answers with the newest tool returns it was sent: the tail's, verbatim
    assert result.output == '{"lookup":"' + "runbook 23 " * 20 + '"}'
    assert processor.last is not None and processor.last.strategy == "summary"
    kinds = [[p.part_kind for p in m.parts] for m in result.all_messages()]
    assert kinds[0] == ["system-prompt", "user-prompt"]  # the summary request
    assert kinds[-2:] == [["user-prompt"], ["text"]]
    assert len(kinds) < 24 * 4


def test_each_model_call_of_a_tool_run_is_compacted_and_keeps_the_pair(
    memoir: AsyncMemoir,
) -> None:
    processor = MemoirCompaction(memoir, window=4000)
    sent: list[list[ModelMessage]] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        sent.append(list(messages))
        if len(sent) == 1:
            return ModelResponse(parts=[ToolCallPart("lookup", {"n": 7}, tool_call_id="new")])
        return ModelResponse(parts=[TextPart("Deploy 7 with the runbook.")])

    agent = Agent(FunctionModel(model), capabilities=[processor.capability()])

    @agent.tool_plain
    def lookup(n: int) -> str:
        """A runbook."""
        return f"runbook {n} says: make deploy"

    result = _run(agent.run("Deploy service 7?", message_history=history(24)))
    assert result.output == "Deploy 7 with the runbook."
    assert len(sent) == 2
    first, second = sent
    assert "Summary" in str(first[0].parts[-1].content)
    # the second call: the first call's compacted history, then the new call and its return
    assert second[: len(first)] == first
    call, answer = second[-2], second[-1]
    assert isinstance(call.parts[0], ToolCallPart) and call.parts[0].tool_call_id == "new"
    assert isinstance(answer.parts[0], ToolReturnPart)
    assert answer.parts[0].content == "runbook 7 says: make deploy"


def test_chat_messages_keep_order_roles_and_pairs() -> None:
    messages = history(1)
    chat = chat_messages(messages)
    assert [(m["role"], owner) for m, owner in chat] == [
        ("system", 0),
        ("user", 0),
        ("assistant", 1),
        ("tool", 2),
        ("assistant", 3),
    ]
    assert chat[2][0]["tool_calls"][0]["function"] == {"name": "lookup", "arguments": '{"n":0}'}
    assert chat[3][0]["tool_call_id"] == "c0"


@pytest.mark.parametrize(
    ("kept_from_chat", "tail_from_message", "head_has"),
    [
        (2, 1, None),  # from the tool call on: whole messages
        (3, 3, "(tool output) runbook 0"),  # a return cannot lead: it joins the summary
        (4, 3, None),  # the answer of turn 0
        (5, 4, None),  # the next prompt
        (6, 5, "more"),  # half a request kept: its kept half joins the summary
    ],
)
def test_the_view_keeps_a_suffix_of_whole_messages_after_the_summary(
    kept_from_chat: int, tail_from_message: int, head_has: str | None
) -> None:
    from memoir.integrations.pydantic_ai import _view

    messages = history(2)
    messages[4] = ModelRequest(parts=[UserPromptPart("Question 1"), UserPromptPart("more")])
    chat = chat_messages(messages)
    summary = {"role": "user", "content": "[Summary] deploys"}
    context = [chat[0][0], summary, *(m for m, _ in chat[kept_from_chat:])]
    view = _view(context, chat, messages)
    head = view[0]
    assert isinstance(head, ModelRequest)
    assert head.parts[0] is messages[0].parts[0]  # the system prompt, as it was
    assert str(head.parts[1].content).startswith("[Summary] deploys")
    assert all(a is b for a, b in zip(view[1:], messages[tail_from_message:], strict=True))
    if head_has is not None:
        assert head_has in str(head.parts[1].content)


def test_a_history_no_api_takes_passes_while_it_fits_else_is_refused(
    memoir: AsyncMemoir,
) -> None:
    from memoir.errors import CompactionError

    unanswered: list[ModelMessage] = [
        ModelResponse(parts=[ToolCallPart("lookup", {"n": 1}, tool_call_id="lost")]),
        ModelRequest(parts=[UserPromptPart("Never mind.")]),
    ]
    processor = MemoirCompaction(memoir, window=4000)
    short = [ModelRequest(parts=[UserPromptPart("Hi")]), *unanswered]
    assert _run(processor(short)) is short
    with pytest.raises(CompactionError, match="cannot compact an invalid message sequence"):
        _run(processor([*history(24), *unanswered]))
