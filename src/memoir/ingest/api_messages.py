"""OpenAI-style messages sent over the HTTP API, as the events the generic reader makes of
them: one :class:`~memoir.store.values.ApiMessage` per message, carrying the client's id
for it. Ordinals are placeholders; the store numbers the events when it appends them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memoir.ingest.generic import GenericReader
from memoir.ingest.records import EventSink
from memoir.store.values import ApiMessage

__all__ = ["api_messages"]


def api_messages(session_id: str, messages: Sequence[dict[str, Any]]) -> list[ApiMessage]:
    """Each message (``{role, content, …, id?}``) as its events, in order; a message the
    generic reader does not understand (an unknown role) has none."""
    sink = EventSink(session_id, 1)
    reader = GenericReader(sink, {})
    out: list[ApiMessage] = []
    for message in messages:
        start = len(sink.events)
        reader.handle(message)
        client_id = message.get("id")
        out.append(
            ApiMessage(
                client_id=str(client_id) if client_id is not None else None,
                events=tuple(sink.events[start:]),
            )
        )
    return out
