"""The offline keyword summary and the one reading of a transcript it shares with the JSON
answers.

One reading of a transcript, shared by the text summary and the JSON answers.

The keyword-led text summary of summary format 1 — no longer what the offline model
writes (that is :mod:`memoir.llm.offline_prose`); kept as ``memoir bench summaries``'
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
from dataclasses import dataclass, field

from memoir.llm.transcript import (
    Sentence,
    Turn,
    clip_words,
    content_words,
    cue,
    keywords,
    parse_turns,
    rank_sentences,
    sentences_of,
    split_sentences,
)

__all__ = [
    "EARLIER_SHARE",
    "MAX_POINTS",
    "Analysis",
    "finish",
    "near_duplicate",
    "text_summary",
    "topic_phrase",
]

_PERSON = re.compile(
    r"\b(?:my|our|the|your)\s+(?:colleague|manager|boss|friend|wife|husband|partner"
    r"|teammate|coworker|co-worker|client|customer|lead|mentor|sister|brother|mother|father)"
    r",?\s+([A-Z][a-z]{2,}(?:\s[A-Z][a-z]{2,})?)\b"
    r"|\b([A-Z][a-z]{2,})\s+(?:said|says|asked|wants|suggested|mentioned|told me|thinks)\b"
)
_NOT_NAMES = frozenset({"claude", "the", "this", "that", "it", "he", "she", "they", "python"})
ITEM_WORDS = 28  # ~40 tokens per list item
NEAR_DUPLICATE = 0.75  # Jaccard of content words at which a sentence repeats another
PROSE_ROLES = ("user", "assistant", "unknown", "system")


# what a sentence may not carry into a summary: code fences, and the prompt convention's
# own tags (a summary holding "</summary>" would end the head message that quotes it)
_MARKUP = re.compile(
    r"```+|</?(?:transcript|summary|previous_summary|episodes|think|thinking)>", re.IGNORECASE
)
# **bold** around words (never the ** of 2**10, nor the __ of mcp__tool or __init__)
_BOLD = re.compile(r"(?<![\w*])\*\*(?=\S)(.+?)(?<=\S)\*\*(?![\w*])")


def finish(text: str) -> str:
    """A tidy sentence (no bold markers, code fences or prompt tags; everything else, code
    and identifiers included, kept as written) that ends like one."""
    text = " ".join(_MARKUP.sub("", _BOLD.sub(r"\1", text)).split()).strip()
    if not text:
        return text
    return text if text[-1] in ".!?。！？…\"'”)" else text + "."


def near_duplicate(text: str, said: list[frozenset[str]]) -> bool:
    """Whether ``text`` says what one of ``said`` (content-word sets) said: the same
    content words, give or take a quarter (a step number, a name, a tense)."""
    bag = frozenset(content_words(text))
    for seen in said:
        union = len(bag | seen)
        if union and len(bag & seen) / union >= NEAR_DUPLICATE:
            return True
    return False


def topic_phrase(words: list[str]) -> str:
    if not words:
        return "a short exchange"
    if len(words) == 1:
        return words[0]
    return ", ".join(words[:-1]) + " and " + words[-1]


@dataclass
class Analysis:
    turns: list[Turn]
    sentences: list[Sentence]
    ranked: list[Sentence]
    keywords: list[str]
    used: set[int] = field(default_factory=set)
    taken: list[frozenset[str]] = field(default_factory=list)  # content words of picks

    @classmethod
    def of(cls, transcript: str, *, keyword_limit: int = 6) -> Analysis:
        turns = parse_turns(transcript)
        sentences = sentences_of(turns, roles=PROSE_ROLES)
        ranked = [s for _, s in rank_sentences(sentences)]
        prose = "\n".join(s.text for s in sentences) or transcript
        return cls(turns, sentences, ranked, keywords(prose, keyword_limit))

    # -- picks (each marks what it returns as used, so lists do not repeat) --------------

    def _take(self, candidates: list[Sentence], limit: int, words: int = ITEM_WORDS) -> list[str]:
        out: list[str] = []
        for s in candidates:
            if s.position in self.used or self.repeats(s.text):
                continue
            self.used.add(s.position)
            out.append(finish(clip_words(s.text, words)))
            if len(out) == limit:
                break
        return out

    def repeats(self, text: str) -> bool:
        """Whether ``text`` says what a sentence already taken said; else remember it."""
        if near_duplicate(text, self.taken):
            return True
        self.taken.append(frozenset(content_words(text)))
        return False

    def opening(self, words: int = 45, *, single: bool = False) -> str | None:
        """What the user set out to do: the prose of the first substantive user turn
        (only its first sentence when ``single``), clipped to ``words``; what it returns
        is marked used."""
        users = [s for s in self.sentences if s.role in ("user", "unknown")] or self.sentences
        first = next((s for s in users if len(s.text.split()) >= 4), users[0] if users else None)
        # the opening may repeat a list item (a preference stated up front): it is the topic
        if first is None:
            return None
        same_turn = [s for s in users if s.turn == first.turn and s.position >= first.position]
        picked: list[Sentence] = []
        total = 0
        for s in same_turn:
            if picked and (single or total + len(s.text.split()) > words):
                break
            picked.append(s)
            total += len(s.text.split())
            self.used.add(s.position)
        return finish(clip_words(" ".join(s.text for s in picked), words))

    def ending(self) -> Sentence | None:
        """A late, self-contained sentence: where the conversation ended."""
        tail = self.sentences[-12:]
        for s in reversed(tail):
            if 4 <= len(s.text.split()) <= 40 and s.position not in self.used:
                return s
        return tail[-1] if tail else None

    def central(self, limit: int, words: int = ITEM_WORDS) -> list[str]:
        return self._take(self.ranked, limit, words)

    def by_cue(self, kind: str, limit: int, *, roles: tuple[str, ...] | None = None) -> list[str]:
        found = [s for s in self.ranked if cue(kind, s.text) and (roles is None or s.role in roles)]
        return self._take(found, limit)

    def open_threads(self, limit: int) -> list[str]:
        late = self.sentences[len(self.sentences) * 2 // 3 :]
        questions = [s for s in reversed(late) if s.text.rstrip().endswith(("?", "？"))]
        flagged = [s for s in self.ranked if cue("open", s.text)]
        return self._take(questions[:2] + flagged, limit)

    def state(self, limit: int) -> list[str]:
        end = self.ending()
        return self._take([end], limit) if end else []

    def people(self, limit: int) -> list[str]:
        """Names introduced as people ("my manager Ana", "Bob said"): conservative."""
        names: list[str] = []
        lowered = {w for s in self.sentences for w in s.text.split() if w.islower()}
        for s in self.sentences:
            for m in _PERSON.finditer(s.text):
                name = (m.group(1) or m.group(2) or "").strip()
                common = name.lower() in _NOT_NAMES or name.lower() in lowered
                if name and name not in names and not common:
                    names.append(name)
        return names[:limit]


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
