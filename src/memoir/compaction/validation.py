"""Is a summary usable? A rejected summary goes to the ladder/backstop, never into the
context. Pure.

Rejected: empty text; reasoning without content (a ``<think>`` block and nothing else, or
an unclosed one, or a provider reasoning trace with empty text); text ending inside an
open code fence; text ending mid-sentence. Truncation (max_tokens) never reaches this
check: the model port raises :class:`memoir.llm.port.Truncated` instead.

"Mid-sentence" is judged on the last line: a prose line may not end with a bare word
(``… and then the``, ``… the user asked``) or a CJK character (CJK prose ends with
``。``); it may end with terminal punctuation (Latin or CJK), a closing quote or bracket,
or a token that is no plain word (``src/app.py``, ``3.2``, an emoji). A list item,
heading or table row may end bare (summaries often end with a bullet). None may end with
a comma, colon, an opening bracket or a dangling connective.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__ = ["strip_reasoning", "summary_problem"]

_THINK = re.compile(r"<(think|thinking|reasoning)>.*?</\1>", re.DOTALL | re.IGNORECASE)
_OPEN_THINK = re.compile(r"<(think|thinking|reasoning)>", re.IGNORECASE)
_FENCE = re.compile(r"^\s{0,3}(```|~~~)", re.MULTILINE)
_TERMINAL = tuple(".!?…。！？」』）)]}\"'`*_>")
_DANGLING = tuple(",;:-–—(/[{&+=")
_CJK_END = re.compile("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]$")
_LIST_ITEM = re.compile(r"^\s*([-*+•]|\d+[.)]|#{1,6}\s|\|)")
_CONNECTIVE = re.compile(
    r"\b(and|or|but|the|a|an|of|to|with|for|in|on|that|which|because|then)$", re.IGNORECASE
)


def strip_reasoning(text: str) -> str:
    """The text without closed reasoning blocks; '' when an unclosed one remains."""
    stripped = _THINK.sub("", text)
    if _OPEN_THINK.search(stripped):
        return ""
    return stripped.strip()


def summary_problem(text: str, extra: Mapping[str, Any] | None = None) -> str | None:
    """Why ``text`` cannot be used as a summary, or None when it can."""
    if not text.strip():
        if extra and any(extra.get(k) for k in ("reasoning", "reasoning_content", "thinking")):
            return "reasoning without content"
        return "empty summary"
    body = strip_reasoning(text)
    if not body:
        return "reasoning without content"
    if len(_FENCE.findall(body)) % 2 == 1:
        return "ends inside an open code fence"
    last = body.rstrip().splitlines()[-1].rstrip()
    if last.endswith(_DANGLING) or _CONNECTIVE.search(last):
        return "ends mid-sentence"
    if _LIST_ITEM.match(last) or last.endswith(_TERMINAL):
        return None
    words = last.split()
    if words and words[-1].isascii() and words[-1].isalpha():
        return "ends mid-sentence"  # a bare word: the sentence was going on
    if _CJK_END.search(last):
        return "ends mid-sentence"  # CJK prose ends with 。！？ — without, it was cut
    return None  # a path, a version, a number, an emoji: a line can end so
