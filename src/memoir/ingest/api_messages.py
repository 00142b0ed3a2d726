"""OpenAI-style messages sent over the HTTP API, as the events the generic reader makes of
them: one :class:`~memoir.store.values.ApiMessage` per message, carrying the client's id
for it. Ordinals are placeholders; the store numbers the events when it appends them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from memoir.errors import ConfigError
from memoir.ingest.generic import GENERIC_ROLES, GenericReader
from memoir.ingest.records import EventSink
from memoir.store.values import ApiMessage

__all__ = ["api_messages"]


def api_messages(session_id: str, messages: Sequence[Mapping[str, Any]]) -> list[ApiMessage]:
    """Each message (``{role, content, …, id?}``) as its events, in order. ``ConfigError``
    naming the first message that is not one: not a mapping, a role the generic reader does
    not know, an ``id`` that is not a non-empty string of at most 200 characters (what the
    HTTP API's schema lets through always passes)."""
    for n, message in enumerate(messages):
        _check(n, message)
    sink = EventSink(session_id, 1)
    reader = GenericReader(sink, {})
    out: list[ApiMessage] = []
    for message in messages:
        start = len(sink.events)
        reader.handle(dict(message))
        client_id = message.get("id")
        out.append(
            ApiMessage(
                client_id=str(client_id) if client_id is not None else None,
                events=tuple(sink.events[start:]),
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
