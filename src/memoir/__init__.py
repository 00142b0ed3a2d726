"""Memoir: a memory engine for long LLM conversations.

``import memoir`` is light: each public name is imported from its module the first time it
is used (``memoir.Memoir`` imports the library; ``memoir.__version__`` nothing), so the
``memoir`` command and a program that only names an error class pay for no more than they
use. ``tests/test_light_imports.py`` holds it so.
"""

from __future__ import annotations

import importlib

TYPE_CHECKING = False  # typing itself costs `memoir --version` ~12 ms: read by mypy only

if TYPE_CHECKING:
    from typing import Any

    from memoir.app import Memoir, MemoryItems
    from memoir.compaction.values import CompactionResult
    from memoir.config import Settings
    from memoir.errors import (
        CompactionError,
        ConfigError,
        MemoirError,
        NotFound,
        ReadOnly,
        StoreError,
    )
    from memoir.ingest.batches import SyncReport
    from memoir.jobs import Job
    from memoir.memory.keeping import ImportReport
    from memoir.memory.recall import ContextBlock
    from memoir.model import (
        Appended,
        Event,
        EventKind,
        Exchange,
        Harness,
        Memory,
        MemoryReceipt,
        MemorySource,
        RecallHit,
        Remembered,
        Session,
        SessionFlags,
    )
    from memoir.search.hits import SearchHit
    from memoir.store.values import SearchFilters
    from memoir.summaries.session import SessionRun

if TYPE_CHECKING:  # named lazily (``__getattr__``): asyncio code only pays for it
    from memoir.aio import AsyncCompactor as AsyncCompactor
    from memoir.aio import AsyncMemoir as AsyncMemoir

__all__ = [
    "Appended",
    "AsyncCompactor",
    "AsyncMemoir",
    "CompactionError",
    "CompactionResult",
    "ConfigError",
    "ContextBlock",
    "Event",
    "EventKind",
    "Exchange",
    "Harness",
    "ImportReport",
    "Job",
    "Memoir",
    "MemoirError",
    "Memory",
    "MemoryItems",
    "MemoryReceipt",
    "MemorySource",
    "NotFound",
    "ReadOnly",
    "RecallHit",
    "Remembered",
    "SearchFilters",
    "SearchHit",
    "Session",
    "SessionFlags",
    "SessionRun",
    "Settings",
    "StoreError",
    "SyncReport",
]

__version__ = "0.1.0"

# each public name: the module it is imported from when first used
_HOME = {
    "Memoir": "memoir.app",
    "MemoryItems": "memoir.app",
    "CompactionResult": "memoir.compaction.values",
    "SyncReport": "memoir.ingest.batches",
    "Job": "memoir.jobs",
    "ImportReport": "memoir.memory.keeping",
    "ContextBlock": "memoir.memory.recall",
    "SessionRun": "memoir.summaries.session",
    **dict.fromkeys(
        ("Appended", "Memory", "MemoryReceipt", "MemorySource", "RecallHit", "Remembered"),
        "memoir.model",
    ),
    "Settings": "memoir.config",
    "SearchHit": "memoir.search.hits",
    "SearchFilters": "memoir.store.values",
    "AsyncMemoir": "memoir.aio",
    "AsyncCompactor": "memoir.aio",
    **dict.fromkeys(
        ("CompactionError", "ConfigError", "MemoirError", "NotFound", "ReadOnly", "StoreError"),
        "memoir.errors",
    ),
    **dict.fromkeys(
        ("Event", "EventKind", "Exchange", "Harness", "Session", "SessionFlags"), "memoir.model"
    ),
}


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'memoir' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value  # once: the next use is a plain module attribute
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
