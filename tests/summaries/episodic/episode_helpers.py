"""Helpers for the episode tests: event histories with markers and a rule-driven oracle
that answers the scripted model by purpose and by a marker found in the transcript
(episodes run concurrently, so replies cannot depend on call order)."""

from __future__ import annotations

import json
import re
import threading
from typing import Any

from memoir.llm.port import ModelError, ModelRequest, Purpose
from memoir.model import Author, Event, EventKind

MARKER = re.compile(r"MARK(\d+)")


def event(ordinal: int, kind: EventKind, text: str, **kw: Any) -> Event:
    author = {
        EventKind.USER_TEXT: Author.USER,
        EventKind.TOOL_RESULT: Author.TOOL,
    }.get(kind, Author.ASSISTANT)
    return Event(session_id="s1", ordinal=ordinal, kind=kind, author=author, text=text, **kw)


def marked_history(turns: int, filler: int = 60) -> list[Event]:
    """``turns`` user/assistant pairs; turn k mentions MARKk. Each turn is about
    ``filler`` words long on each side."""
    words = " ".join(f"word{i}" for i in range(filler))
    out: list[Event] = []
    for k in range(turns):
        out.append(event(len(out) + 1, EventKind.USER_TEXT, f"MARK{k} question {words}"))
        out.append(event(len(out) + 1, EventKind.ASSISTANT_TEXT, f"answer about MARK{k} {words}"))
    return out


def episode_json(tag: str, **extra: Any) -> str:
    obj: dict[str, Any] = {
        "narrative": f"summary of {tag}",
        "facts": [f"fact from {tag}"],
        "keywords": [tag],
    }
    obj.update(extra)
    return json.dumps(obj)


def transcript_of(request: ModelRequest) -> str:
    text = request.messages[-1].content
    m = re.search(r"<transcript>\n(.*)\n</transcript>", text, re.DOTALL)
    return m.group(1) if m else ""


Reply = str | ModelError


class Oracle:
    """Answers by rules ``(purpose, marker or None) -> [replies]`` (each used once, in
    order); otherwise a valid JSON object naming the markers it saw. Thread-safe."""

    def __init__(self, rules: dict[tuple[Purpose, str | None], list[Reply]] | None = None):
        self.rules = {k: list(v) for k, v in (rules or {}).items()}
        self.lock = threading.Lock()

    def __call__(self, request: ModelRequest) -> str:
        text = request.messages[-1].content
        purpose = request.meta.purpose
        with self.lock:
            for (want, marker), replies in self.rules.items():
                if want is purpose and replies and (marker is None or marker in text):
                    reply = replies.pop(0)
                    if isinstance(reply, ModelError):
                        raise reply
                    return reply
        if purpose is Purpose.MERGE:
            episodes = text.split("<episodes>")[-1]
            count = episodes.count('{"narrative"')
            return episode_json(f"merge of {count}")
        marks = sorted(set(MARKER.findall(transcript_of(request))), key=int)
        return episode_json("+".join(marks) or "nothing")
