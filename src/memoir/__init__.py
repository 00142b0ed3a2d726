"""Memoir: a memory engine for long LLM conversations."""

from typing import TYPE_CHECKING, Any

from memoir.app import Memoir
from memoir.config import Settings
from memoir.errors import (
    CompactionError,
    ConfigError,
    MemoirError,
    NotFound,
    ReadOnly,
    StoreError,
)
from memoir.model import Event, EventKind, Exchange, Harness, Session, SessionFlags
from memoir.search.hits import SearchHit
from memoir.store.values import SearchFilters

if TYPE_CHECKING:  # named lazily (``__getattr__``): asyncio code only pays for it
    from memoir.aio import AsyncCompactor as AsyncCompactor
    from memoir.aio import AsyncMemoir as AsyncMemoir

__all__ = [
    "AsyncCompactor",
    "AsyncMemoir",
    "CompactionError",
    "ConfigError",
    "Event",
    "EventKind",
    "Exchange",
    "Harness",
    "Memoir",
    "MemoirError",
    "NotFound",
    "ReadOnly",
    "SearchFilters",
    "SearchHit",
    "Session",
    "SessionFlags",
    "Settings",
    "StoreError",
]

__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    """The async face (``memoir.aio``), imported the first time it is named."""
    if name in ("AsyncCompactor", "AsyncMemoir"):
        from memoir import aio

        return getattr(aio, name)
    raise AttributeError(f"module 'memoir' has no attribute {name!r}")
