"""Real LangGraph graphs on a MemoirStore (each backend): a ``StateGraph`` whose nodes write
and read memories through the runtime's store and ``get_store()``, remembered across
threads; and a LangMem-style agent — a scripted chat model (langchain_core's
``GenericFakeChatModel``: no network) calling a manage-memory tool and, in a later thread, a
search-memory tool, both given the store by LangGraph's ``ToolNode`` — sync and async."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from langgraph.config import get_store
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import InjectedStore, ToolNode, tools_condition
from langgraph.runtime import Runtime
from langgraph.store.base import BaseStore

from memoir import Memoir, Settings, service
from memoir.integrations.langgraph import MemoirStore
from memoir.store import Store


@pytest.fixture
def memoir(home: Path, store: Store) -> Iterator[Memoir]:
    settings = Settings.from_env({"MEMOIR_HOME": str(home), "MEMOIR_EMBEDDER": "none"}, sources=())
    m = Memoir(settings, store)
    yield m
    m.close()


@dataclass
class Ctx:
    user_id: str


class Turn(TypedDict, total=False):
    said: str
    recalled: list[str]


def _remember(state: Turn, runtime: Runtime[Ctx]) -> dict[str, Any]:
    said = state["said"]
    if said.startswith("remember: "):
        assert runtime.store is not None
        n = len(runtime.store.search(("memories", runtime.context.user_id), limit=100))
        runtime.store.put(("memories", runtime.context.user_id), f"m{n}", {"text": said[10:]})
    return {}


def _recall(state: Turn, runtime: Runtime[Ctx]) -> dict[str, Any]:
    store = get_store()  # the same store, found the other way
    hits = store.search(("memories", runtime.context.user_id), query=state["said"], limit=2)
    return {"recalled": [h.value["text"] for h in hits if h.score]}


def test_a_state_graph_remembers_across_threads(memoir: Memoir) -> None:
    builder = StateGraph(Turn, context_schema=Ctx)
    builder.add_node("remember", _remember)
    builder.add_node("recall", _recall)
    builder.add_edge(START, "remember")
    builder.add_edge("remember", "recall")
    builder.add_edge("recall", END)
    lg = MemoirStore(memoir)
    graph = builder.compile(store=lg)
    alice, bob = Ctx("alice"), Ctx("bob")
    graph.invoke({"said": "remember: Alice's cat is called Miso"}, context=alice)
    graph.invoke({"said": "remember: Alice drinks her coffee black"}, context=alice)
    graph.invoke({"said": "remember: Bob's cat is called Pixel"}, context=bob)
    out = graph.invoke({"said": "what is my cat called?"}, context=alice)
    assert out["recalled"] == ["Alice's cat is called Miso"]
    out = graph.invoke({"said": "what is my cat called?"}, context=bob)
    assert out["recalled"] == ["Bob's cat is called Pixel"]
    # kept in the home: a new store on the same Memoir reads them
    again = MemoirStore(memoir).get(("memories", "alice"), "m1")
    assert again is not None and again.value == {"text": "Alice drinks her coffee black"}
    assert lg.list_namespaces(prefix=("memories",)) == [("memories", "alice"), ("memories", "bob")]
    lg.close()


def _namespace(config: RunnableConfig) -> tuple[str, ...]:
    return ("memories", config["configurable"]["user_id"])


@tool
def manage_memory(
    content: str, config: RunnableConfig, store: Annotated[BaseStore, InjectedStore()]
) -> str:
    """Save something worth remembering about the user."""
    key = f"mem-{len(store.search(_namespace(config), limit=100))}"
    store.put(_namespace(config), key, {"content": content})
    return f"saved {key}"


@tool
def search_memory(
    query: str, config: RunnableConfig, store: Annotated[BaseStore, InjectedStore()]
) -> str:
    """Search what was remembered about the user."""
    hits = store.search(_namespace(config), query=query, limit=3)
    return "\n".join(h.value["content"] for h in hits if h.score) or "nothing"


def _call(name: str, args: dict[str, Any], n: int) -> AIMessage:
    return AIMessage("", tool_calls=[{"name": name, "args": args, "id": f"call-{n}"}])


def _agent(memoir: Memoir, script: list[AIMessage]) -> Any:
    model = GenericFakeChatModel(messages=iter(script))

    def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    builder.add_node("tools", ToolNode([manage_memory, search_memory]))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "agent")
    return builder.compile(store=MemoirStore(memoir))


SCRIPT = [
    _call("manage_memory", {"content": "The user prefers a dark theme in every editor"}, 1),
    AIMessage("Noted: dark theme."),
    _call("manage_memory", {"content": "The user's project deadline is Friday"}, 2),
    AIMessage("Noted: Friday."),
    _call("search_memory", {"query": "editor theme preference"}, 3),
    AIMessage("You like a dark theme."),
]


def _tool_results(out: dict[str, Any]) -> list[str]:
    return [str(m.content) for m in out["messages"] if isinstance(m, ToolMessage)]


def test_a_langmem_style_agent_saves_and_later_finds_a_memory(memoir: Memoir) -> None:
    graph = _agent(memoir, list(SCRIPT))
    config: RunnableConfig = {"configurable": {"user_id": "u1"}}
    first = graph.invoke({"messages": [HumanMessage("I like dark themes")]}, config)
    assert _tool_results(first) == ["saved mem-0"]
    assert first["messages"][-1].content == "Noted: dark theme."
    graph.invoke({"messages": [HumanMessage("deadline is Friday")]}, config)
    later = graph.invoke({"messages": [HumanMessage("what theme do I like?")]}, config)
    assert _tool_results(later) == ["The user prefers a dark theme in every editor"]
    assert later["messages"][-1].content == "You like a dark theme."
    # the memories are Memoir's: read through the library, for the home's user
    kept = service.keyed_memories(memoir).search(("memories", "u1"), limit=10)
    assert sorted(i.value["content"] for i in kept) == [
        "The user prefers a dark theme in every editor",
        "The user's project deadline is Friday",
    ]


def test_the_agent_runs_async_on_the_store(memoir: Memoir) -> None:
    graph = _agent(memoir, list(SCRIPT))

    async def run() -> list[str]:
        config: RunnableConfig = {"configurable": {"user_id": "u2"}}
        await graph.ainvoke({"messages": [HumanMessage("dark please")]}, config)
        await graph.ainvoke({"messages": [HumanMessage("Friday")]}, config)
        later = await graph.ainvoke({"messages": [HumanMessage("theme?")]}, config)
        return _tool_results(later)

    assert asyncio.run(run()) == ["The user prefers a dark theme in every editor"]
    assert service.keyed_memories(memoir, "u1").search(()) == []  # another user's lane: empty
