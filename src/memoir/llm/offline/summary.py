"""The text summary of the offline model (SUMMARY, COMPACTION, anything without JSON).

Lines, each made of whole sentences so the summary never ends mid-sentence::

    This conversation was about <keywords>.
    It started with the user: <first substantive user sentence>
    Key points: <the most central sentences, in conversation order>
    Decisions: <sentences with decision cues>
    Open questions: <late unanswered questions>
    Where it ended: <a late self-contained sentence>

Parts are added in order of importance while the rendered text fits ``max_tokens``.
"""

from __future__ import annotations

from collections.abc import Callable

from memoir.llm.offline.analysis import Analysis, finish, topic_phrase
from memoir.llm.offline.text import clip_words

__all__ = ["MAX_POINTS", "text_summary"]

MAX_POINTS = 24


def _render(parts: dict[str, list[str]]) -> str:
    order = ("about", "start", "points", "decisions", "open", "end")
    labels = {
        "about": "",
        "start": "It started with the user: ",
        "points": "Key points: ",
        "decisions": "Decisions: ",
        "open": "Open questions: ",
        "end": "Where it ended: ",
    }
    lines = [labels[k] + " ".join(parts[k]) for k in order if parts.get(k)]
    return "\n".join(lines)


def text_summary(transcript: str, max_tokens: int, count: Callable[[str], int]) -> str:
    """The best summary that fits ``max_tokens`` (may return the bare topic line)."""
    a = Analysis.of(transcript, keyword_limit=5)
    if not a.sentences:
        return finish(f"This conversation was about {topic_phrase(a.keywords)}")
    parts: dict[str, list[str]] = {
        "about": [f"This conversation was about {topic_phrase(a.keywords)}."]
    }

    def fits(candidate: dict[str, list[str]]) -> bool:
        return count(_render(candidate)) <= max_tokens

    def add(key: str, sentence: str) -> bool:
        trial = {k: list(v) for k, v in parts.items()}
        trial.setdefault(key, []).append(sentence)
        if fits(trial):
            parts.clear()
            parts.update(trial)
            return True
        return False

    opening = a.opening(45)
    if opening:
        add("start", opening)
    end = a.ending()
    if end is not None and end.position not in a.used:
        a.used.add(end.position)
        add("end", finish(clip_words(end.text, 40)))
    for s in a.by_cue("decision", 3):
        add("decisions", s)
    for s in a.open_threads(2):
        if s.endswith("?"):
            add("open", s)
    chosen = _add_points(a, add)
    in_order = [text for _, text in sorted(chosen)]
    if in_order and fits({**parts, "points": in_order}):  # conversation order reads better
        parts["points"] = in_order
    return _render(parts)


def _add_points(a: Analysis, add: Callable[[str, str], bool]) -> list[tuple[int, str]]:
    """Central sentences, best first, until five in a row no longer fit."""
    misses = 0
    chosen: list[tuple[int, str]] = []
    for s in a.ranked:
        if len(chosen) >= MAX_POINTS:
            break
        if s.position in a.used:
            continue
        text = finish(clip_words(s.text, 40))
        if add("points", text):
            a.used.add(s.position)
            chosen.append((s.position, text))
            misses = 0
        else:
            misses += 1
            if misses >= 5:
                break
    return chosen
