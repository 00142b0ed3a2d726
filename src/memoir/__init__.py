"""Memoir: a memory engine for long LLM conversations."""

from memoir.app import Memoir
from memoir.config import Settings
from memoir.errors import MemoirError
from memoir.model import Event, EventKind, Exchange, Harness, Session, SessionFlags

__all__ = [
    "Event",
    "EventKind",
    "Exchange",
    "Harness",
    "Memoir",
    "MemoirError",
    "Session",
    "SessionFlags",
    "Settings",
]

__version__ = "0.1.0"
