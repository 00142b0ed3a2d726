"""How big a tool's answer may be, and the pure helpers that keep it there.

Every tool result is one JSON text of at most :data:`MAX_RESULT_CHARS` characters (about
5,000 tokens of English): a result must never flood the agent's context, whatever the
archive holds. A long text is shortened to its start and its end (an error is usually the
last line of a log), saying how much was left out; a list that does not fit loses its tail
and says how many entries it dropped.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

__all__ = [
    "DEFAULT_PAGE_CHARS",
    "HIT_SUMMARY_CHARS",
    "MAX_QUERY_CHARS",
    "MAX_RESULT_CHARS",
    "MIN_PAGE_CHARS",
    "TOOL_TEXT_CHARS",
    "fit_items",
    "json_len",
    "shorten",
    "to_text",
]

MAX_RESULT_CHARS = 20_000  # the whole JSON text of any tool result
MAX_QUERY_CHARS = 2_000  # a search or recall query; past it the call is refused
DEFAULT_PAGE_CHARS = 12_000  # one `read` page unless the call asks for another size
MIN_PAGE_CHARS = 2_000
TOOL_TEXT_CHARS = 800  # a tool call or result in a `read` page, unless tools="full"
HIT_SUMMARY_CHARS = 400  # the session summary beside each search hit (`summary` has it all)


def to_text(payload: Any) -> str:
    """The JSON text a tool returns: compact, non-ASCII kept as itself."""
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":"), default=str)


def json_len(value: Any) -> int:
    """Characters ``value`` takes in a result's JSON text."""
    return len(to_text(value))


def shorten(text: str, cap: int) -> tuple[str, int]:
    """``text`` whole when it has at most ``cap`` characters, else its first two thirds and
    last third of ``cap`` around a line saying how many characters were left out; returns
    the text and that count (0: whole). The marker is counted inside ``cap``."""
    if len(text) <= cap:
        return text, 0
    marker = "\n… [{:,} characters left out] …\n"
    room = max(0, cap - len(marker.format(len(text))))
    head = room * 2 // 3
    tail = room - head
    left_out = len(text) - head - tail
    end = text[len(text) - tail :] if tail else ""
    return text[:head] + marker.format(left_out) + end, left_out


def fit_items(
    build: Callable[[list[Any], int], dict[str, Any]],
    items: Sequence[Any],
    cap: int = MAX_RESULT_CHARS,
) -> dict[str, Any]:
    """The payload ``build(kept, dropped)`` makes from the longest head of ``items`` whose
    JSON text fits in ``cap`` characters. ``build`` must say ``dropped`` in the payload (a
    model has to know a list was cut). Binary search over the head's length: a payload
    grows with each item kept."""
    whole = build(list(items), 0)
    if json_len(whole) <= cap:
        return whole
    low, high = 0, len(items)  # build(items[:low]) fits; build(items[:high]) does not
    while high - low > 1:
        mid = (low + high) // 2
        if json_len(build(list(items[:mid]), len(items) - mid)) <= cap:
            low = mid
        else:
            high = mid
    return build(list(items[:low]), len(items) - low)
