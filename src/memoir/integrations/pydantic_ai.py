"""pydantic-ai on Memoir: a history processor that compacts an agent's messages with
Memoir's compactor before each model call.

Under the threshold the history passes unchanged (the very list of messages). Past it, the
model is sent one request holding the system prompt and a summary of the older messages,
then the newest messages verbatim: the same ``ModelRequest`` / ``ModelResponse`` objects,
each tool call with its return. pydantic-ai keeps what a processor returns as the run's
history, so later calls roll the summary forward instead of summarizing everything again.

In pydantic-ai 2 a history processor is a capability (``ProcessHistory``)::

    async with AsyncMemoir.at("~/.memoir") as memoir:
        history = MemoirCompaction(memoir, window=32_000)
        agent = Agent("openai:gpt-4o", capabilities=[history.capability()])
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from memoir.errors import CompactionError, install_hint

try:
    from pydantic_ai.capabilities import ProcessHistory
    from pydantic_ai.messages import (
        ModelMessage,
        ModelRequest,
        ModelResponse,
        RetryPromptPart,
        SystemPromptPart,
        TextPart,
        ToolCallPart,
        ToolReturnPart,
        UserPromptPart,
    )
except ImportError as exc:  # the extra is not installed
    raise ImportError(
        "memoir.integrations.pydantic_ai needs the pydantic-ai extra: "
        + install_hint("pydantic-ai")
    ) from exc

if TYPE_CHECKING:
    from memoir.aio import AsyncCompactor, AsyncMemoir
    from memoir.compaction import CompactionResult

__all__ = ["MemoirCompaction", "chat_messages"]


class MemoirCompaction:
    """A pydantic-ai history processor: ``await processor(messages)`` is the history to
    send, compacted once it reaches the compactor's threshold of ``window`` tokens.
    ``compactor``: the one to use (default: ``memoir.compactor()``, made on first need).
    ``last``: what the latest call did (a ``CompactionResult``)."""

    def __init__(
        self,
        memoir: AsyncMemoir,
        *,
        window: int,
        compactor: AsyncCompactor | None = None,
    ) -> None:
        self.memoir = memoir
        self.window = window
        self._compactor = compactor
        self.last: CompactionResult | None = None

    def capability(self) -> ProcessHistory[Any]:
        """This processor as the capability an ``Agent`` takes (``capabilities=[...]``)."""
        return ProcessHistory(self)

    async def __call__(self, messages: list[ModelMessage]) -> list[ModelMessage]:
        if not messages:
            return messages
        if self._compactor is None:
            self._compactor = await self.memoir.compactor()
        chat = chat_messages(messages)
        plain = [m for m, _ in chat]
        try:
            result = await self._compactor.compact(plain, window=self.window)
        except CompactionError:
            # a history no chat API takes as it stands: passed unchanged while it fits
            threshold = self._compactor.budget(self.window).threshold
            if self._compactor.compactor.tokens.total(plain) < threshold:
                self.last = None
                return messages
            raise
        self.last = result
        if not result.compacted:
            return messages
        return _view(result.messages, chat, messages)


# pure: pydantic-ai messages as chat messages ------------------------------------------
def _user_text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        texts = [c if isinstance(c, str) else "[attachment]" for c in content]
        return "\n\n".join(t for t in texts if t)
    return str(content)


def _returned(part: Any) -> str:
    if isinstance(part, ToolReturnPart):
        return part.model_response_str()
    content = part.content
    return content if isinstance(content, str) else json.dumps(content, default=str)


def chat_messages(messages: Sequence[ModelMessage]) -> list[tuple[dict[str, Any], int]]:
    """The messages as a chat sequence the compactor checks: (chat message, index of the
    pydantic-ai message it came from). A request's tool returns come first (each a
    ``tool`` message), then its prompts; leading system prompts stay system, later ones
    become user text; a response is one assistant message with its tool calls (thinking
    and built-in tools are not re-sent as text)."""
    out: list[tuple[dict[str, Any], int]] = []
    started = False
    for n, message in enumerate(messages):
        if isinstance(message, ModelResponse):
            started = True
            text = "\n\n".join(p.content for p in message.parts if isinstance(p, TextPart))
            calls = [
                {
                    "id": p.tool_call_id,
                    "type": "function",
                    "function": {"name": p.tool_name, "arguments": p.args_as_json_str()},
                }
                for p in message.parts
                if isinstance(p, ToolCallPart)
            ]
            said: dict[str, Any] = {"role": "assistant", "content": text or None}
            if calls:
                said["tool_calls"] = calls
            elif not text:
                said["content"] = "[no text]"
            out.append((said, n))
            continue
        returns = [
            p
            for p in message.parts
            if isinstance(p, ToolReturnPart)
            or (isinstance(p, RetryPromptPart) and p.tool_name is not None)
        ]
        for part in returns:
            tool = {"role": "tool", "tool_call_id": part.tool_call_id, "content": _returned(part)}
            out.append((tool, n))
        for said_part in message.parts:
            if isinstance(said_part, SystemPromptPart):
                role = "user" if started else "system"
                out.append(({"role": role, "content": said_part.content}, n))
            elif isinstance(said_part, UserPromptPart):
                started = True
                out.append(({"role": "user", "content": _user_text(said_part.content)}, n))
            elif isinstance(said_part, RetryPromptPart) and said_part.tool_name is None:
                started = True
                out.append(({"role": "user", "content": _returned(said_part)}, n))
    return out


def _view(
    context: Sequence[dict[str, Any]],
    chat: Sequence[tuple[dict[str, Any], int]],
    messages: Sequence[ModelMessage],
) -> list[ModelMessage]:
    """The compacted context as pydantic-ai messages: the longest suffix of messages whose
    chat messages the compactor kept verbatim (the very objects), after one request with
    the leading system prompts and everything else it sent (the summary, stand-ins)."""
    kept = {id(m) for m in context}
    changed = [owner for m, owner in chat if id(m) not in kept]
    start = max(changed) + 1 if changed else 0  # the compactor's tail is a suffix
    # a tail never opens on returns whose calls it does not hold
    while start < len(messages) - 1 and _answers_calls(messages[start]):
        start += 1
    tail_ids = {id(m) for m, owner in chat if owner >= start}
    first = messages[0]
    system = [] if start == 0 else [p for p in first.parts if isinstance(p, SystemPromptPart)]
    system_ids = {id(m) for m, owner in chat if owner == 0 and m["role"] == "system"}
    lead = [m for m in context if id(m) not in tail_ids and id(m) not in system_ids]
    text = "\n\n".join(_said(m) for m in lead)
    parts: list[Any] = [*system, UserPromptPart(text)] if text else list(system)
    head: list[ModelMessage] = [ModelRequest(parts=parts)] if parts else []
    return [*head, *messages[start:]]


def _answers_calls(message: ModelMessage) -> bool:
    return isinstance(message, ModelRequest) and any(
        isinstance(p, ToolReturnPart) or (isinstance(p, RetryPromptPart) and p.tool_name)
        for p in message.parts
    )


def _said(message: dict[str, Any]) -> str:
    content = message.get("content")
    text = content if isinstance(content, str) else ""
    if message.get("role") == "tool":
        return f"(tool output) {text}"
    named = ", ".join(str(c["function"]["name"]) for c in message.get("tool_calls") or [])
    return f"{text}\n(called: {named})" if named else text
