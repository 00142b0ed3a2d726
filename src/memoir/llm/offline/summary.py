"""The keyword-led text summary of summary format 1 — no longer what the offline model
writes (that is :mod:`memoir.llm.offline.prose`); kept as ``memoir bench summaries``'
baseline ("today's summary") and for its helper that reads a previous summary's sentences.

Lines, each made of whole sentences so the summary never ends mid-sentence::

    This conversation was about <keywords>.
    Earlier: <sentences of the previous summary, when one was given>
    It started with the user: <first substantive user sentence>
    Key points: <the most central sentences, in conversation order>
    Decisions: <sentences with decision cues>
    Open questions: <late unanswered questions>
    Where it ended: <a late self-contained sentence>

Parts are added in order of importance while the rendered text fits ``max_tokens``. A
previous summary (``<previous_summary>``) is carried forward first, so a rolling summary
keeps what earlier rounds covered.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from memoir.llm.offline.analysis import Analysis, finish, near_duplicate, topic_phrase
from memoir.llm.offline.text import clip_words, content_words, split_sentences

__all__ = ["EARLIER_SHARE", "MAX_POINTS", "text_summary"]

MAX_POINTS = 24
EARLIER_SHARE = 0.45  # of max_tokens, for the carried-forward previous summary


def _render(parts: dict[str, list[str]]) -> str:
    order = ("about", "earlier", "start", "points", "decisions", "open", "end")
    labels = {
        "about": "",
        "earlier": "Earlier: ",
        "start": "It started with the user: ",
        "points": "Key points: ",
        "decisions": "Decisions: ",
        "open": "Open questions: ",
        "end": "Where it ended: ",
    }
    lines = [labels[k] + " ".join(parts[k]) for k in order if parts.get(k)]
    return "\n".join(lines)


_LABEL = re.compile(r"^(?:[A-Z][a-z]+(?: [a-z]+){0,3}):\s+")


def _previous_sentences(previous: str, limit: int = 8) -> list[str]:
    """Whole sentences of a previous summary, its line labels dropped."""
    out: list[str] = []
    for line in previous.splitlines():
        if line.startswith(("This conversation was about", "The conversation was about")):
            continue  # the topic line is written afresh each round, never carried
        line = _LABEL.sub("", line.strip())
        out.extend(finish(s) for s in split_sentences(line) if len(s.split()) >= 2)
    return out[:limit]


def text_summary(
    transcript: str, max_tokens: int, count: Callable[[str], int], previous: str = ""
) -> str:
    """The best summary that fits ``max_tokens`` (may return the bare topic line)."""
    a = Analysis.of(transcript, keyword_limit=5)
    if not a.sentences and not previous.strip():
        return finish(f"This conversation was about {topic_phrase(a.keywords)}")
    parts: dict[str, list[str]] = {
        "about": [f"This conversation was about {topic_phrase(a.keywords)}."]
    }

    seen: set[str] = set()  # a sentence said once is not said again (repetitive transcripts)
    said: list[frozenset[str]] = []  # nor one saying nearly the same (a step number apart)

    def fits(candidate: dict[str, list[str]]) -> bool:
        return count(_render(candidate)) <= max_tokens

    def add(key: str, sentence: str) -> bool:
        if _said(sentence) in seen or near_duplicate(sentence, said):
            return False
        trial = {k: list(v) for k, v in parts.items()}
        trial.setdefault(key, []).append(sentence)
        if fits(trial):
            parts.clear()
            parts.update(trial)
            seen.add(_said(sentence))
            said.append(frozenset(content_words(sentence)))
            return True
        return False

    for sentence in _previous_sentences(previous):  # at most ~45% of the budget
        trial = {**parts, "earlier": [*parts.get("earlier", []), sentence]}
        if count(_render(trial)) > max_tokens * EARLIER_SHARE:
            break
        parts["earlier"] = trial["earlier"]
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
    chosen = _add_points(a, add, seen)
    in_order = [text for _, text in sorted(chosen)]
    if in_order and fits({**parts, "points": in_order}):  # conversation order reads better
        parts["points"] = in_order
    return _render(parts)


def _said(sentence: str) -> str:
    return " ".join(sentence.lower().split())


def _add_points(
    a: Analysis, add: Callable[[str, str], bool], seen: set[str]
) -> list[tuple[int, str]]:
    """Central sentences, best first, until five in a row no longer fit."""
    misses = 0
    chosen: list[tuple[int, str]] = []
    for s in a.ranked:
        if len(chosen) >= MAX_POINTS:
            break
        if s.position in a.used:
            continue
        text = finish(clip_words(s.text, 40))
        if _said(text) in seen:
            continue
        if add("points", text):
            a.used.add(s.position)
            chosen.append((s.position, text))
            misses = 0
        else:
            misses += 1
            if misses >= 5:
                break
    return chosen
