"""LoCoMo conversations as Memoir sessions (pure: parsing and mapping, no store).

One LoCoMo file is one conversation between two people over dated sessions. Each LoCoMo
session becomes one Memoir session; speaker_a's turns are the user's, speaker_b's the
assistant's; each turn is a message named after its speaker, as an OpenAI-style group chat
carries them (``payload["speaker"]``, so exchanges read ``"Name: text"``), and a shared
photo adds ``[photo: caption]`` to its text; turns are stamped with the session's date, one
second apart. Evidence ids map to the exchange holding that turn.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from memoir.model import (
    Author,
    Event,
    EventKind,
    Exchange,
    Harness,
    Session,
    build_exchanges,
    spoken_text,
)
from memoir.model.exchange import exchange_id

__all__ = [
    "Conversation",
    "Question",
    "SessionData",
    "load_conversation",
    "parse_locomo_date",
    "to_memoir",
]

_DATE = re.compile(r"(\d{1,2}):(\d{2})\s*([ap]m)\s+on\s+(\d{1,2})\s+(\w+),?\s+(\d{4})", re.I)
_DIA = re.compile(r"^D(\d+):(\d+)$")
RETRIEVAL_CATEGORIES = (1, 2, 3, 4)


@dataclass(frozen=True, slots=True)
class Question:
    text: str
    evidence: tuple[str, ...]
    category: int


@dataclass(frozen=True, slots=True)
class SessionData:
    number: int
    when: datetime
    turns: tuple[dict[str, Any], ...]


@dataclass(frozen=True, slots=True)
class Conversation:
    name: str
    speaker_a: str
    speaker_b: str
    sessions: tuple[SessionData, ...]
    questions: tuple[Question, ...]


def parse_locomo_date(text: str) -> datetime:
    """``"1:56 pm on 8 May, 2023"`` → 2023-05-08T13:56Z."""
    match = _DATE.search(text)
    if match is None:
        raise ValueError(f"unrecognised LoCoMo date {text!r}")
    hour, minute, half, day, month, year = match.groups()
    parsed = datetime.strptime(f"{day} {month[:3]} {year}", "%d %b %Y")
    hour_24 = int(hour) % 12 + (12 if half.lower() == "pm" else 0)
    return parsed.replace(hour=hour_24, minute=int(minute), tzinfo=UTC)


def load_conversation(path: Path) -> Conversation:
    data = json.loads(path.read_text(encoding="utf-8"))
    sessions = []
    number = 1
    while f"session_{number}" in data:
        turns = data[f"session_{number}"]
        if turns:
            when = parse_locomo_date(data[f"session_{number}_date_time"])
            sessions.append(SessionData(number, when, tuple(turns)))
        number += 1
    known = {t["dia_id"] for s in sessions for t in s.turns}
    questions = []
    for qa in data.get("qa", []):
        if qa.get("category") not in RETRIEVAL_CATEGORIES:
            continue
        evidence = tuple(e for e in qa.get("evidence", []) if _DIA.match(e) and e in known)
        if evidence:
            questions.append(Question(str(qa["question"]), evidence, int(qa["category"])))
    return Conversation(
        path.stem, data["speaker_a"], data["speaker_b"], tuple(sessions), tuple(questions)
    )


def _turn_text(turn: dict[str, Any]) -> str:
    text = str(turn.get("text", "")).strip()
    if turn.get("blip_caption"):
        text = f"{text} [photo: {turn['blip_caption']}]".strip()
    return text


def _session_events(conv: Conversation, data: SessionData, session_id: str) -> list[Event]:
    events = []
    for ordinal, turn in enumerate(data.turns, start=1):
        is_user = turn["speaker"] == conv.speaker_a
        events.append(
            Event(
                session_id=session_id,
                ordinal=ordinal,
                kind=EventKind.USER_TEXT if is_user else EventKind.ASSISTANT_TEXT,
                author=Author.USER if is_user else Author.ASSISTANT,
                text=_turn_text(turn),
                timestamp=data.when + timedelta(seconds=ordinal),
                payload={"dia_id": turn["dia_id"], "speaker": turn["speaker"]},
            )
        )
    return events


def _lead_exchange(events: list[Event]) -> Exchange | None:
    """Turns before speaker_a's first one (the other person opened the session) form an
    exchange of their own instead of being dropped."""
    lead = []
    for event in events:
        if event.author is Author.USER:
            break
        lead.append(event)
    if not lead:
        return None
    first = lead[0]
    return Exchange(
        id=exchange_id(first.session_id, first.ordinal),
        session_id=first.session_id,
        first_ordinal=first.ordinal,
        last_ordinal=lead[-1].ordinal,
        user_text="",
        assistant_text="\n\n".join(spoken_text(e) for e in lead),
        tool_names=(),
        started_at=first.timestamp,
        ended_at=lead[-1].timestamp,
    )


def to_memoir(
    conv: Conversation,
) -> tuple[list[tuple[Session, list[Event], list[Exchange]]], dict[str, str]]:
    """Sessions with their events and exchanges, and evidence id → exchange id."""
    out = []
    where: dict[str, str] = {}
    for data in conv.sessions:
        session_id = f"locomo-{conv.name}-s{data.number}"
        session = Session(
            id=session_id,
            project=f"locomo-{conv.name}",
            harness=Harness.GENERIC,
            created_at=data.when,
            updated_at=data.when + timedelta(seconds=len(data.turns)),
        )
        events = _session_events(conv, data, session_id)
        exchanges = build_exchanges(events)
        lead = _lead_exchange(events)
        if lead is not None:
            exchanges.insert(0, lead)
        for event in events:
            holder = next(
                x for x in exchanges if x.first_ordinal <= event.ordinal <= x.last_ordinal
            )
            where[str(event.payload["dia_id"])] = holder.id
        out.append((session, events, exchanges))
    return out, where
