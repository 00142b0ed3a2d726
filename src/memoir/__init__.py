"""Memoir: a memory engine for long LLM conversations."""

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

__all__ = [
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
