"""Reading JSON a client sent: a request body or a cursor.

One parser for both, so every unreadable input is refused the same way (a ``ValueError``
with a plain reason the caller puts in its 422): UTF-8 text only, standard JSON only (no
``NaN`` or ``Infinity``, which no JSON encoder on the way back could write), and at most
:data:`MAX_DEPTH` levels of arrays and objects. The answers echo what was sent (the
compacted messages) and the serializer stops near 250 levels, so the limit sits well
below that and far above what a chat message needs. (Sync's reader takes orjson's 1,024
levels: a transcript is only stored, never echoed.)

What is read is made storable as sync makes a transcript storable
(:func:`memoir.model.event.scrub_deep`): a lone UTF-16 surrogate (``"\\ud800"``, half an
emoji) becomes ``?`` and NUL becomes U+FFFD, in keys and values alike.
"""

from __future__ import annotations

import json
from typing import Any

from memoir.model.event import scrub_deep

__all__ = ["MAX_DEPTH", "depth_over", "parse_json", "scrubbed"]

MAX_DEPTH = 64


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def depth_over(value: Any, limit: int) -> bool:
    """Is ``value`` nested deeper than ``limit`` levels? (A scalar is 0 deep, ``[]`` 1,
    ``[{}]`` 2.) Walked without recursion, so any depth is measured."""
    if not isinstance(value, dict | list):
        return limit < 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, level = stack.pop()
        if level > limit:
            return True
        children = item.values() if isinstance(item, dict) else item
        stack.extend((c, level + 1) for c in children if isinstance(c, dict | list))
    return False


def scrubbed(value: Any) -> Any:
    """``value`` with every string (and key) one a database can store. Call it on depth
    checked values only: it recurses."""
    if isinstance(value, str):
        return scrub_deep(value)
    if isinstance(value, list):
        return [scrubbed(v) for v in value]
    if isinstance(value, dict):
        return {scrub_deep(k): scrubbed(v) for k, v in value.items()}
    return value


def parse_json(raw: bytes | str, *, max_depth: int = MAX_DEPTH) -> Any:
    """The JSON value of ``raw``, scrubbed; ``ValueError`` saying why it is not one."""
    try:
        text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
    except UnicodeDecodeError as exc:
        raise ValueError(f"it is not UTF-8 text (byte {exc.start})") from None
    try:
        value = json.loads(text, parse_constant=_no_constant)
    except RecursionError:
        raise ValueError(f"it is nested deeper than {max_depth} levels") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"{exc.msg} (line {exc.lineno}, column {exc.colno})") from None
    if depth_over(value, max_depth):
        raise ValueError(f"it is nested deeper than {max_depth} levels")
    return scrubbed(value)
