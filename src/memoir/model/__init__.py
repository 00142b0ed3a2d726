"""Pure domain values: sessions, events, exchanges. No I/O here."""

from memoir.model.event import Author, Event, EventKind, clean_speaker, speaker_of, spoken_text
from memoir.model.event_times import infer_times
from memoir.model.exchange import Exchange, build_exchanges, exchange_id, exchanges_around
from memoir.model.session import Harness, Session, SessionFlags

__all__ = [
    "Author",
    "Event",
    "EventKind",
    "Exchange",
    "Harness",
    "Session",
    "SessionFlags",
    "build_exchanges",
    "clean_speaker",
    "exchange_id",
    "exchanges_around",
    "infer_times",
    "speaker_of",
    "spoken_text",
]
