"""What the memory runner is given and gives back: the store parts it uses, its bounds,
one task to run, and how a run ended."""

from __future__ import annotations

from dataclasses import dataclass

from memoir.memory.decisions import Work
from memoir.store.memory_rows import MemoryItemRow, PendingRow, ReceiptRow
from memoir.store.parts import (
    CheckpointsPart,
    EventsPart,
    MemoryItemsPart,
    MemoryPart,
    SessionsPart,
)

__all__ = ["MemoryConfig", "MemoryParts", "Outcome", "Task"]


@dataclass(frozen=True, slots=True)
class MemoryParts:
    """The store parts memory reads and writes."""

    sessions: SessionsPart
    events: EventsPart
    checkpoints: CheckpointsPart
    memory: MemoryPart
    items: MemoryItemsPart


@dataclass(frozen=True, slots=True)
class MemoryConfig:
    """``window``: the context window a request must fit when the trigger froze none (a
    compaction freezes its own); ``output_reserve``: tokens kept for the answer;
    ``context_tail``: most events past the coverage boundary read for interpretation."""

    window: int = 32_000
    output_reserve: int = 2_000
    context_tail: int = 16


@dataclass(frozen=True, slots=True)
class Task:
    """What to run: ``work`` (trigger, anchor, identity, a retry's range), the frozen
    ``boundary`` / ``context`` (a compaction's coverage and context ends; None: the
    requested turn's exchange, or the session's end), the frozen ``disposition`` and
    ``window`` of a checkpoint, an extract's ``note``."""

    work: Work
    boundary: int | None = None
    context: int | None = None
    disposition: str | None = None
    window: int | None = None
    note: str | None = None


@dataclass(frozen=True, slots=True)
class Outcome:
    """How a run ended: ``receipt`` when it settled; ``pending`` when it failed and was
    recorded for a retry; ``waiting`` when policy was unavailable (nothing happened)."""

    receipt: ReceiptRow | None = None
    items: tuple[MemoryItemRow, ...] = ()
    pending: PendingRow | None = None
    waiting: str | None = None
    error: str | None = None

    @property
    def settled(self) -> bool:
        return self.receipt is not None
