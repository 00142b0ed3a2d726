"""OpenAI-style messages sent over the HTTP API, as the events the generic reader makes of
them: one :class:`~memoir.store.values.ApiMessage` per message, carrying the client's id
for it. Ordinals are placeholders; the store numbers the events when it appends them.

A message sent without a ``timestamp`` takes the nearest one of the messages sent with it
(the one before, else the one after), else the time it is stored
(:func:`memoir.model.infer_times`), marked ``time_inferred``. Messages stored by earlier
appends are not consulted: a message is posted when it is said or later, so the time it
arrives is a closer bound than an older message's.

A message's ``metadata`` (a JSON object: what the caller wants back with it, such as an
agent framework's own item) is kept in the payload of its first event,
``payload["metadata"]``, and comes back with it from ``Memoir.events``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from memoir.errors import ConfigError
from memoir.ingest.generic import GENERIC_ROLES, GenericReader
from memoir.ingest.records import EventSink
from memoir.model import infer_times
from memoir.store.values import ApiMessage

__all__ = ["api_messages"]


def api_messages(
    session_id: str,
    messages: Sequence[Mapping[str, Any]],
    *,
    stored_at: datetime | None = None,
) -> list[ApiMessage]:
    """Each message (``{role, content, …, id?}``) as its events, in order, each with a time
    (``stored_at``, default now, for those with no known neighbour). ``ConfigError``
    naming the first message that is not one: not a mapping, a role the generic reader does
    not know, an ``id`` that is not a non-empty string of at most 200 characters (what the
    HTTP API's schema lets through always passes)."""
    for n, message in enumerate(messages):
        _check(n, message)
    sink = EventSink(session_id, 1)
    reader = GenericReader(sink, {})
    out: list[ApiMessage] = []
    spans: list[tuple[int, int]] = []
    for message in messages:
        start = len(sink.events)
        reader.handle(dict(message))
        spans.append((start, len(sink.events)))
    events = infer_times(sink.events, before=None, fallback=stored_at or datetime.now(UTC))
    for message, (start, end) in zip(messages, spans, strict=True):
        metadata = message.get("metadata")
        if metadata is not None and start < end:  # kept with the message's first event
            first = events[start]
            events[start] = replace(first, payload={**first.payload, "metadata": dict(metadata)})
        client_id = message.get("id")
        out.append(
            ApiMessage(
                client_id=str(client_id) if client_id is not None else None,
                events=tuple(events[start:end]),
            )
        )
    return out


def _check(n: int, message: object) -> None:
    if not isinstance(message, Mapping):
        raise ConfigError(f"message {n} is a {type(message).__name__}, not a {{role, content}} map")
    role = message.get("role")
    if not isinstance(role, str) or role not in GENERIC_ROLES:
        roles = ", ".join(sorted(GENERIC_ROLES))
        raise ConfigError(f"message {n} has role {role!r}; roles: {roles}")
    cid = message.get("id")
    if cid is not None and (not isinstance(cid, str) or not 0 < len(cid) <= 200):
        raise ConfigError(f"message {n}: id must be a string of 1 to 200 characters")
    if not isinstance(message.get("metadata", {}), Mapping):
        raise ConfigError(f"message {n}: metadata must be a JSON object")
