"""The OpenAI Agents SDK on Memoir: a ``Session`` kept in Memoir's event log, and a
``recall`` tool over long-term memory.

Each item the SDK adds is appended as one chat message (so it is searched, summarized and
mined for memories like any conversation), with the item itself, exactly as given, in the
message's ``metadata``. ``get_items`` reads the items back from the events, in order.
The log is append-only: ``pop_item`` and ``clear_session`` append a marker event, and the
items they took back stay in the archive (searchable; ``memoir forget`` removes memories).

With ``window`` (the model's context window, in tokens) ``get_items`` returns a compacted
view once the history reaches the compactor's threshold: one user item holding the summary
of the older items, then the newest items verbatim, tool calls with their outputs. The
stored items are never changed; the summary is a checkpoint Memoir keeps and rolls forward.

Example::

    async with AsyncMemoir.at("~/.memoir") as memoir:
        session = MemoirSession("chat-1", memoir, window=32_000)
        agent = Agent(name="helper", tools=[session.recall_tool()])
        result = await Runner.run(agent, "Which database did we pick?", session=session)
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from memoir import service
from memoir.errors import CompactionError, NotFound, install_hint

try:
    from agents import FunctionTool, function_tool
except ImportError as exc:  # the extra is not installed
    raise ImportError(
        "memoir.integrations.openai_agents needs the openai-agents extra: "
        + install_hint("openai-agents")
    ) from exc

if TYPE_CHECKING:
    from agents.memory.session_settings import SessionSettings

    from memoir.aio import AsyncCompactor, AsyncMemoir
    from memoir.compaction import CompactionResult

__all__ = ["MemoirSession", "chat_groups", "recall_tool", "stored_message"]

ITEM = "agents_item"  # metadata key: the item as the SDK gave it
OP = "agents_op"  # metadata key of a marker: "pop" (with "of": the ordinal) or "clear"
_TEXT_PARTS = ("input_text", "output_text", "text")


class MemoirSession:
    """A Session of the OpenAI Agents SDK (its ``Session`` protocol) stored in Memoir.

    ``session_id`` is also the Memoir session's name (made on the first write, owned by the
    ``AsyncMemoir``'s user, in ``project``). ``window``: compact ``get_items`` past the
    compactor's threshold of that many tokens (None: never). ``compactor``: the one to use
    (default: ``memoir.compactor()`` with the configured model, made on first need).
    """

    def __init__(
        self,
        session_id: str,
        memoir: AsyncMemoir,
        *,
        project: str = "agents",
        window: int | None = None,
        compactor: AsyncCompactor | None = None,
        session_settings: SessionSettings | None = None,
    ) -> None:
        self.session_id = session_id
        self.session_settings = session_settings
        self.memoir = memoir
        self.project = project
        self.window = window
        self._compactor = compactor
        self._made = False
        self.last_compaction: CompactionResult | None = None

    # the Session protocol -------------------------------------------------------------
    async def get_items(self, limit: int | None = None) -> list[Any]:
        """The history, oldest first (compacted past the budget); the latest ``limit``."""
        stored = await self._stored()
        items = [item for _, item in stored]
        if self.window is not None and items:
            items = await self._compacted(stored)
        if limit is None:
            return items
        return items[-limit:] if limit > 0 else []

    async def add_items(self, items: list[Any]) -> None:
        """Append the items, each as one message carrying the item exactly."""
        if not items:
            return
        await self._ensure()
        messages = [_with_item(as_plain(item)) for item in items]
        await self.memoir.call(service.append_messages, self.memoir.user, self.session_id, messages)

    async def pop_item(self) -> Any | None:
        """Take back the newest item (a marker is appended: the log keeps what was said)."""
        stored = await self._stored()
        if not stored:
            return None
        ordinal, item = stored[-1]
        marker = {
            "role": "developer",
            "content": "agents session: the last item was taken back",
            "metadata": {OP: "pop", "of": ordinal},
        }
        await self.memoir.call(service.append_messages, self.memoir.user, self.session_id, [marker])
        return item

    async def clear_session(self) -> None:
        """Empty the session's history from here on (a marker is appended)."""
        if not await self._stored():
            return
        marker = {
            "role": "developer",
            "content": "agents session: history cleared",
            "metadata": {OP: "clear"},
        }
        await self.memoir.call(service.append_messages, self.memoir.user, self.session_id, [marker])

    # long-term memory -----------------------------------------------------------------
    def recall_tool(self, *, limit: int = 5) -> FunctionTool:
        """A ``recall`` function tool over the user's memories of this session's project."""
        return recall_tool(self.memoir, project=self.project, limit=limit)

    # internals ------------------------------------------------------------------------
    async def _ensure(self) -> None:
        if not self._made:
            await self.memoir.call(
                service.create_session,
                self.memoir.user,
                session_id=self.session_id,
                project=self.project,
            )
            self._made = True

    async def _stored(self) -> list[tuple[int, Any]]:
        """(ordinal of its first event, item) of each live item, oldest first."""
        try:
            events = await self.memoir.events(self.session_id)
        except NotFound:
            return []
        live: list[tuple[int, Any]] = []
        for event in events:
            meta = event.payload.get("metadata")
            if not isinstance(meta, Mapping):
                continue
            if ITEM in meta:
                live.append((event.ordinal, meta[ITEM]))
            elif meta.get(OP) == "pop":
                live = [(o, i) for o, i in live if o != meta.get("of")]
            elif meta.get(OP) == "clear":
                live = []
        return live

    async def _compacted(self, stored: list[tuple[int, Any]]) -> list[Any]:
        """Summary item + verbatim tail when the history reaches the threshold."""
        assert self.window is not None
        if self._compactor is None:
            self._compactor = await self.memoir.compactor()
        groups = chat_groups([item for _, item in stored])
        messages = [message for message, _ in groups]
        positions = [stored[members[0]][0] for _, members in groups]
        try:
            result = await self._compactor.compact(
                messages, window=self.window, session_id=self.session_id, positions=positions
            )
        except CompactionError:
            # a sequence no model API takes as it stands (a tool call still waiting for its
            # output, as an interrupted run leaves): passed as stored while it fits
            threshold = self._compactor.budget(self.window).threshold
            if self._compactor.compactor.tokens.total(messages) < threshold:
                self.last_compaction = None
                return [item for _, item in stored]
            raise
        self.last_compaction = result
        if not result.compacted and result.replayed_from is None:
            return [item for _, item in stored]
        return _view(result.messages, groups, [item for _, item in stored])


def recall_tool(memoir: AsyncMemoir, *, project: str | None = None, limit: int = 5) -> FunctionTool:
    """A ``recall(query)`` function tool: the user's memory items best answering the query
    (``memoir.recall``), one a line as ``- [kind] content``."""

    @function_tool(
        name_override="recall",
        description_override=(
            "Recall what the user told you in earlier conversations (facts, preferences, "
            "decisions, plans, constraints) that answers the query."
        ),
    )
    async def recall(query: str) -> str:
        found = await memoir.recall(query, project=project, limit=limit)
        if not found:
            return "Nothing remembered about that."
        return "\n".join(f"- [{hit.item.kind}] {hit.item.content}" for hit in found)

    return recall


# pure: items as chat messages ---------------------------------------------------------
def as_plain(item: Any) -> dict[str, Any]:
    """An item as the JSON object it is (a pydantic model is dumped as the SDK sends it)."""
    if hasattr(item, "model_dump"):
        item = item.model_dump(mode="json", exclude_unset=True)
    if not isinstance(item, Mapping):
        raise TypeError(f"a session item is a mapping, not a {type(item).__name__}")
    plain = json.loads(json.dumps(item))  # what the store will give back: a JSON object
    assert isinstance(plain, dict)
    return plain


def _with_item(item: dict[str, Any]) -> dict[str, Any]:
    message = stored_message(item)
    message["id"] = uuid.uuid4().hex  # never the item's own id: a re-added item is stored
    message["metadata"] = {ITEM: item}
    return message


def _text(content: object) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    texts = []
    for part in content:
        if isinstance(part, Mapping):
            if part.get("type") in _TEXT_PARTS:
                texts.append(str(part.get("text", "")))
            elif part.get("type") == "refusal":
                texts.append(str(part.get("refusal", "")))
    return "\n\n".join(t for t in texts if t)


def _kind(item: Mapping[str, Any]) -> str:
    kind = item.get("type")
    if kind is None and "role" in item:
        return "message"
    return str(kind)


def _output(item: Mapping[str, Any]) -> str:
    output = item.get("output", "")
    text = _text(output) if isinstance(output, list) else output
    return text if isinstance(text, str) else json.dumps(text)


def _call(item: Mapping[str, Any]) -> dict[str, Any]:
    arguments = item.get("arguments", item.get("input", item.get("action", "")))
    return {
        "id": str(item["call_id"]),
        "type": "function",
        "function": {
            "name": str(item.get("name") or _kind(item)),
            "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments),
        },
    }


def _is_call(item: Mapping[str, Any]) -> bool:
    return _kind(item).endswith("_call") and isinstance(item.get("call_id"), str)


def _is_output(item: Mapping[str, Any]) -> bool:
    return _kind(item).endswith("_call_output") and isinstance(item.get("call_id"), str)


def stored_message(item: Mapping[str, Any]) -> dict[str, Any]:
    """The chat message an item is stored as (what Memoir searches and summarizes): a
    message as its role's text, a tool call as an assistant ``tool_calls`` entry, a tool
    output as a ``tool`` message, anything else as a developer note naming its type."""
    kind = _kind(item)
    if kind == "message":
        role = str(item.get("role"))
        text = _text(item.get("content"))
        if role == "user" and not text and isinstance(item.get("content"), list):
            return {"role": "user", "content": item["content"]}  # images, files: attachments
        if text and role in ("user", "assistant", "system", "developer"):
            return {"role": role, "content": text}
        return {"role": "developer", "content": f"[empty {role} message]"}
    if _is_call(item):
        return {"role": "assistant", "content": None, "tool_calls": [_call(item)]}
    if _is_output(item):
        return {"role": "tool", "tool_call_id": item["call_id"], "content": _output(item)}
    if kind == "reasoning":
        summary = _text(
            [{"type": "text", "text": s.get("text", "")} for s in item.get("summary") or []]
        )
        return {"role": "developer", "content": f"[reasoning] {summary}".strip()}
    return {"role": "developer", "content": f"[{kind} item]"}


def chat_groups(items: Sequence[Mapping[str, Any]]) -> list[tuple[dict[str, Any], list[int]]]:
    """The items as a valid chat sequence for the compactor: (message, the indexes of the
    items it stands for). An assistant turn's text, tool calls, reasoning and hosted-tool
    items make one assistant message; each tool output one ``tool`` message; leading
    system or developer messages stay system, later ones become user notes."""
    groups: list[tuple[dict[str, Any], list[int]]] = []
    started = False  # a non-system message has been seen
    for n, item in enumerate(items):
        kind = _kind(item)
        role = str(item.get("role")) if kind == "message" else None
        if role in ("system", "developer"):
            text = _text(item.get("content")) or "[empty instructions]"
            if started:
                groups.append(({"role": "user", "content": text}, [n]))
            else:
                groups.append(({"role": "system", "content": text}, [n]))
            continue
        started = True
        if role == "user":
            text = _text(item.get("content")) or "[attachment]"
            groups.append(({"role": "user", "content": text}, [n]))
            continue
        if _is_output(item):
            msg = {"role": "tool", "tool_call_id": item["call_id"], "content": _output(item)}
            groups.append((msg, [n]))
            continue
        # an assistant-side item: joins the assistant message being built, if any
        last = groups[-1][0] if groups else None
        if last is None or last["role"] != "assistant":
            last = {"role": "assistant", "content": ""}
            groups.append((last, []))
        groups[-1][1].append(n)
        if _is_call(item):
            last.setdefault("tool_calls", []).append(_call(item))
        else:
            text = _text(item.get("content")) if role == "assistant" else ""
            if kind == "reasoning":
                text = ""  # reasoning is the model's own: counted, never re-sent as text
            if text:
                last["content"] = f"{last['content']}\n\n{text}" if last["content"] else text
    for message, _ in groups:
        if message["role"] == "assistant" and not message["content"]:
            message["content"] = None if message.get("tool_calls") else "[no text]"
    return groups


def _view(
    context: Sequence[Mapping[str, Any]],
    groups: Sequence[tuple[dict[str, Any], list[int]]],
    items: Sequence[Any],
) -> list[Any]:
    """The compacted context as items: the longest suffix of groups the compactor kept
    verbatim (the very message objects it was given), as their items; everything before
    it (the summary, stand-ins) as one user item."""
    kept = {id(m) for m in context}
    start = len(groups)
    while start > 0 and id(groups[start - 1][0]) in kept:
        start -= 1
    if start < len(groups) and groups[start][0]["role"] == "tool":
        start += 1  # an output kept without its call cannot lead the tail
        while start < len(groups) and groups[start][0]["role"] == "tool":
            start += 1
    tail_ids = {id(m) for m, _ in groups[start:]}
    lead = [m for m in context if id(m) not in tail_ids]
    system = [m for m in lead if m.get("role") == "system" and any(m is g for g, _ in groups)]
    head: list[Any] = []
    for message in system:  # the instructions given first stay as they were
        head += [items[i] for g, members in groups if g is message for i in members]
    words = [_said(m) for m in lead if not any(m is s for s in system)]
    if any(words):
        head.append({"role": "user", "content": "\n\n".join(w for w in words if w)})
    tail = [items[i] for _, members in groups[start:] for i in members]
    return head + tail


def _said(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    text = _text(content) if not isinstance(content, str) else content
    calls = message.get("tool_calls") or []
    named = ", ".join(str(c.get("function", {}).get("name")) for c in calls)
    if message.get("role") == "tool":
        return f"(tool output) {text}"
    return f"{text}\n(called: {named})" if named else text
