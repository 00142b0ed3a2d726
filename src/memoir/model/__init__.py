"""Pure domain values: sessions, events, exchanges, and what the front door gives back.
No I/O here.

The front door's results are defined here: ``Memoir.recall`` / ``forget`` / ``remember``
and ``Memoir.memories`` return them, never the store's rows: an item carries its quotes
(``sources``) and when it held, not what the store keeps to find it (its normalized text,
its key signature, its owner). ``append`` returns :class:`Appended`. The other names are
imported from their modules when first used: importing one module of the package costs
no more than that module and these few values.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memoir.model.event import (
        Author,
        Event,
        EventKind,
        Harness,
        RecentKey,
        RecentPage,
        RecentQuery,
        Session,
        SessionFlags,
        SessionInfo,
        clean_speaker,
        infer_times,
        scrub,
        scrub_deep,
        speaker_of,
        spoken_text,
    )
    from memoir.model.exchange import Exchange, build_exchanges, exchange_id, exchanges_around

__all__ = [
    "Appended",
    "Author",
    "Event",
    "EventKind",
    "Exchange",
    "Harness",
    "Memory",
    "MemoryReceipt",
    "MemorySource",
    "RecallHit",
    "RecentKey",
    "RecentPage",
    "RecentQuery",
    "Remembered",
    "Session",
    "SessionFlags",
    "SessionInfo",
    "build_exchanges",
    "clean_speaker",
    "exchange_id",
    "exchanges_around",
    "infer_times",
    "scrub",
    "scrub_deep",
    "speaker_of",
    "spoken_text",
]

# each public name: the module it is imported from when first used
_HOME = {
    "Author": "memoir.model.event",
    "Event": "memoir.model.event",
    "EventKind": "memoir.model.event",
    "clean_speaker": "memoir.model.event",
    "speaker_of": "memoir.model.event",
    "spoken_text": "memoir.model.event",
    "infer_times": "memoir.model.event",
    "Exchange": "memoir.model.exchange",
    "build_exchanges": "memoir.model.exchange",
    "exchange_id": "memoir.model.exchange",
    "exchanges_around": "memoir.model.exchange",
    "Harness": "memoir.model.event",
    "Session": "memoir.model.event",
    "SessionFlags": "memoir.model.event",
    "RecentKey": "memoir.model.event",
    "RecentPage": "memoir.model.event",
    "RecentQuery": "memoir.model.event",
    "SessionInfo": "memoir.model.event",
    "scrub": "memoir.model.event",
    "scrub_deep": "memoir.model.event",
}


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'memoir.model' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


# what the front door gives back -------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MemorySource:
    """An exact quote of the user's words that supports an item: event ``ordinal`` of
    ``session_id``; ``operation_id`` the extraction that added it."""

    session_id: str
    ordinal: int
    quote: str
    operation_id: str = ""


@dataclass(frozen=True, slots=True)
class Memory:
    """A long-term memory item: what was said (``content``, a ``kind`` among fact,
    preference, decision, plan, constraint), its ``keys``, its ``scope`` (global, or its
    ``project``'s), when it held (``valid_from`` .. ``valid_until``; ``superseded_by`` the
    item that replaced it), and the quotes it came from (``sources``)."""

    id: str
    session_id: str
    project: str
    scope: str
    kind: str
    content: str
    keys: tuple[str, ...]
    operation_id: str
    created_at: datetime
    temporal: Mapping[str, Any] = field(default_factory=dict)
    observed_at: datetime | None = None
    first_observed_at: datetime | None = None
    valid_from: datetime | None = None
    valid_until: datetime | None = None
    superseded_by: str | None = None
    forgotten_at: datetime | None = None
    sources: tuple[MemorySource, ...] = ()

    @property
    def live(self) -> bool:
        """Whether no later statement has superseded it."""
        return self.superseded_by is None


@dataclass(frozen=True, slots=True)
class RecallHit:
    """One recalled item with its fused score and its rank in each list (1-based)."""

    item: Memory
    score: float
    text_rank: int | None = None
    vector_rank: int | None = None


@dataclass(frozen=True, slots=True)
class MemoryReceipt:
    """What one memory operation settled on: its ``outcome`` (remembered, extracted,
    not_applicable, no_op, skipped, policy_denied, discarded) and ``reason``, the events
    ``(range_after, range_through]`` it read, the ``items`` saved and ``dropped``, and the
    model it asked (``model``, ``prompt`` id, ``model_calls``, ``input_tokens``)."""

    operation_id: str
    session_id: str
    trigger: str
    outcome: str
    range_after: int
    range_through: int
    created_at: datetime
    reason: str = ""
    checkpoint_id: str | None = None
    prompt: str = ""
    model: str = ""
    items: int = 0
    dropped: int = 0
    model_calls: int = 0
    input_tokens: int = 0


@dataclass(frozen=True, slots=True)
class Remembered:
    """How a ``remember`` ended: ``receipt`` when it settled (with the ``items`` saved);
    ``pending`` when it failed and waits for a retry (``error`` says why); ``waiting``
    when policy could not be read (nothing happened)."""

    receipt: MemoryReceipt | None = None
    items: tuple[Memory, ...] = ()
    pending: bool = False
    waiting: str | None = None
    error: str | None = None

    @property
    def settled(self) -> bool:
        return self.receipt is not None


@dataclass(frozen=True, slots=True)
class Appended:
    """What an append stored: messages ``added`` now, ``skipped`` (their id was stored
    already, or repeated in the batch), and the session's ``last_ordinal`` after it."""

    added: int
    skipped: int
    last_ordinal: int
