"""Pure domain values: sessions, events, exchanges. No I/O here.

Its names are imported from their modules when first used: importing one module of the
package costs no more than that module.
"""

from __future__ import annotations

import importlib
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
    "Author",
    "Event",
    "EventKind",
    "Exchange",
    "Harness",
    "RecentKey",
    "RecentPage",
    "RecentQuery",
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
