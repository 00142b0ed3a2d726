"""The summary object shared by episodes, halves and the merge: tolerant parsing and display.

Every model answer in this package is one JSON object of this shape::

    {"narrative": "...", "decisions": [...], "facts": [...], "people": [...],
     "open_threads": [...], "preferences": [...], "state": [...], "keywords": [...]}

:func:`parse_summary` is pure and tolerant: missing lists are empty, unknown keys are
ignored, a list given as a single string becomes a one-item list, scalar items become
strings, blank and repeated items are dropped, and a JSON object inside a markdown code
fence (```json … ```) is accepted. Anything else (prose, a JSON array, an object with no
narrative and no items) raises :class:`UnusableAnswer`, which the caller treats as a failed
call.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = [
    "FACT_LISTS",
    "LIST_TITLES",
    "SUMMARY_KEYS",
    "UnusableAnswer",
    "empty_summary",
    "parse_summary",
    "render_summary",
]

FACT_LISTS: tuple[str, ...] = (
    "decisions",
    "facts",
    "people",
    "open_threads",
    "preferences",
    "state",
)
SUMMARY_KEYS: tuple[str, ...] = ("narrative", *FACT_LISTS, "keywords")
LIST_TITLES: dict[str, str] = {
    "decisions": "Decisions",
    "facts": "Facts",
    "people": "People",
    "open_threads": "Open threads",
    "preferences": "Preferences",
    "state": "Current state",
}

_FENCE = re.compile(r"```[ \t]*(?:json|JSON)?[ \t]*\r?\n(.*?)\r?\n?[ \t]*```", re.DOTALL)
_WIDE_FENCE = re.compile(r"```[ \t]*(?:json|JSON)?[ \t]*\r?\n(.*)\r?\n?[ \t]*```", re.DOTALL)


class UnusableAnswer(ValueError):
    """A model answer that is not a usable summary object (a failed call)."""


def empty_summary() -> dict[str, Any]:
    out: dict[str, Any] = {"narrative": ""}
    for key in (*FACT_LISTS, "keywords"):
        out[key] = []
    return out


def parse_summary(text: str) -> dict[str, Any]:
    """The summary object in ``text``, normalised to exactly :data:`SUMMARY_KEYS`."""
    raw = _load_object(text)
    out = empty_summary()
    narrative = raw.get("narrative")
    if isinstance(narrative, str):
        out["narrative"] = narrative.strip()
    elif narrative is not None and not isinstance(narrative, dict | list):
        out["narrative"] = str(narrative).strip()
    for key in (*FACT_LISTS, "keywords"):
        out[key] = _items(raw.get(key))
    if not out["narrative"] and not any(out[k] for k in FACT_LISTS):
        raise UnusableAnswer("the JSON object has neither a narrative nor any facts")
    return out


def _load_object(text: str) -> dict[str, Any]:
    stripped = text.strip()
    if not stripped:
        raise UnusableAnswer("empty answer")
    candidates = [stripped]
    candidates.extend(m.group(1).strip() for m in _FENCE.finditer(text))
    # a fence whose JSON holds ``` in a string ends at the last fence, not the first
    candidates.extend(m.group(1).strip() for m in _WIDE_FENCE.finditer(text))
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except (ValueError, RecursionError):
            continue
        if isinstance(value, dict):
            return value
    raise UnusableAnswer("the answer is not a JSON object (nor one inside a ```json fence)")


def _items(value: object) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str | int | float) and not isinstance(value, bool):
        value = [value]
    if not isinstance(value, list):
        return []
    out: list[str] = []
    seen: set[str] = set()
    for item in value:
        if isinstance(item, bool) or not isinstance(item, str | int | float):
            continue
        text = " ".join(str(item).split())
        folded = text.casefold()
        if text and folded not in seen:
            seen.add(folded)
            out.append(text)
    return out


def render_summary(data: dict[str, Any]) -> str:
    """Readable text for display: the narrative, then each non-empty list, then keywords."""
    parts: list[str] = []
    narrative = str(data.get("narrative") or "").strip()
    if narrative:
        parts.append(narrative)
    for key in FACT_LISTS:
        items = [str(i) for i in data.get(key) or [] if str(i).strip()]
        if items:
            parts.append(LIST_TITLES[key] + ":\n" + "\n".join(f"- {i}" for i in items))
    keywords = [str(k) for k in data.get("keywords") or [] if str(k).strip()]
    if keywords:
        parts.append("Keywords: " + ", ".join(keywords))
    return "\n\n".join(parts)
