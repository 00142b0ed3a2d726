"""The summaries engine's offline strategies, and the summary object the episodic path asks for.

The summary engine's offline strategy: the prose summary of a transcript.

:class:`SummaryTask` is what a one-call summary request carries beside its prompt
(``ModelRequest.task``). The offline model answers it with
:func:`memoir.llm.offline_prose.prose_summary`: the goal the user stated and how it ended,
then the most central sentences in order — the conversation's own sentences within
``max_tokens``; central by the task's ``scorer`` when it has one (the embedder's centrality,
wired by the composition root), lexically otherwise.

The episodic summarizer's offline strategy: episode, half and merge objects.

Each request of the episodic summarizer carries its structured input beside the prompt
(``ModelRequest.task``): :class:`EpisodeTask` (an episode's transcript), :class:`HalfTask`
(half of one that did not fit) and :class:`MergeTask` (the episode objects and the
previous summary). The offline model answers each with the JSON object the prompts ask
for, shrunk item by item until it fits ``max_tokens`` (:func:`fit_json`).

Episode (and fallback) object: ``narrative`` (2–3 sentences), six lists ``decisions``,
``facts``, ``people``, ``open_threads``, ``preferences``, ``state`` (at most two items
each, eight in all) and ``keywords`` (at most six). Half: one sentence, at most four facts
one per list, four keywords. Merge: the same shape with a longer narrative, combining the
previous summary (a JSON object or prose) and the episode objects.

The summary object shared by episodes, halves and the merge: tolerant parsing and display.

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
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from memoir.llm.offline_prose import prose_summary, summarize_lines
from memoir.llm.offline_summary import Analysis, finish, read_transcript
from memoir.llm.transcript import SentenceScorer, keywords, split_sentences

__all__ = [
    "FACT_LISTS",
    "LIST_TITLES",
    "SUMMARY_KEYS",
    "EpisodeTask",
    "HalfTask",
    "MergeTask",
    "SummaryTask",
    "UnusableAnswer",
    "empty_summary",
    "episode_object",
    "fit_json",
    "half_object",
    "merge_object",
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


@dataclass(frozen=True, slots=True)
class SummaryTask:
    """A conversation to summarize: its rendered transcript (and an earlier summary to
    carry forward, when there is one)."""

    transcript: str
    previous: str = ""
    scorer: SentenceScorer | None = field(default=None, compare=False, repr=False)

    def answer(self, max_tokens: int, count: Callable[[str], int]) -> str:
        return prose_summary(self.transcript, max_tokens, count, self.previous, self.scorer)


LISTS = FACT_LISTS
# least important first: central sentences are the most replaceable, decisions the least
DROP_ORDER = ("facts", "open_threads", "people", "preferences", "state", "decisions")
PER_LIST = 2
ALL_ITEMS = 8
MERGE_NARRATIVE = 8


def _shape(narrative: str, lists: dict[str, list[str]], kws: list[str]) -> dict[str, Any]:
    obj: dict[str, Any] = {"narrative": narrative}
    for name in LISTS:
        obj[name] = list(lists.get(name, []))
    obj["keywords"] = kws
    return obj


def _cap_total(lists: dict[str, list[str]], total: int) -> None:
    """Drop items from the least important lists until at most ``total`` remain."""
    for name in DROP_ORDER:
        while sum(len(v) for v in lists.values()) > total and lists.get(name):
            lists[name].pop()


def episode_object(transcript: str) -> dict[str, Any]:
    a = Analysis.of(transcript, keyword_limit=6)
    lists = {
        "decisions": a.by_cue("decision", PER_LIST),
        "preferences": a.by_cue("preference", PER_LIST, roles=("user", "unknown")),
        "open_threads": a.open_threads(PER_LIST),
        "state": a.state(1),
        "people": a.people(PER_LIST),
    }
    lists["facts"] = a.central(PER_LIST)
    _cap_total(lists, ALL_ITEMS)
    return _shape(_narrative(transcript, 3), lists, a.keywords[:6])


def half_object(transcript: str) -> dict[str, Any]:
    a = Analysis.of(transcript, keyword_limit=4)
    lists = {
        "decisions": a.by_cue("decision", 1),
        "preferences": a.by_cue("preference", 1, roles=("user", "unknown")),
        "open_threads": a.open_threads(1),
        "state": a.state(1),
    }
    lists["facts"] = a.central(1)
    _cap_total(lists, 4)
    return _shape(_narrative(transcript, 1), lists, a.keywords[:4])


def _narrative(transcript: str, sentences: int) -> str:
    """The prose summary's headline (the goal and how it ended), then up to
    ``sentences - 1`` of its central sentences (:mod:`memoir.llm.offline_prose`)."""
    lines, actions = read_transcript(transcript)
    prose = summarize_lines(lines, actions, body_words=24 * max(0, sentences - 1))
    parts = [prose.headline, *prose.body[: max(0, sentences - 1)]]
    text = " ".join(p for p in parts if p)
    return text or "A short exchange with nothing to keep."


# -- merge -----------------------------------------------------------------------------


def json_objects(text: str) -> list[dict[str, Any]]:
    """Every JSON object in ``text`` (an array of objects, one per line, fenced, or
    concatenated); non-JSON text between them is skipped."""
    decoder = json.JSONDecoder()
    found: list[dict[str, Any]] = []
    i = 0
    while (i := _next_open(text, i)) >= 0:
        try:
            value, end = decoder.raw_decode(text, i)
        except ValueError:
            i += 1
            continue
        if isinstance(value, dict):
            found.append(value)
        elif isinstance(value, list):
            found.extend(v for v in value if isinstance(v, dict))
        i = end
    return found


def _next_open(text: str, start: int) -> int:
    positions = [p for p in (text.find("{", start), text.find("[", start)) if p >= 0]
    return min(positions) if positions else -1


def _sentences(text: str) -> list[str]:
    return [s.strip() for line in text.splitlines() for s in split_sentences(line)]


def _strs(value: object) -> list[str]:
    if isinstance(value, str):
        return [value] if value.strip() else []
    if isinstance(value, list):
        return [str(v).strip() for v in value if str(v).strip()]
    return []


def merge_object(previous: str, episode_objects: Sequence[dict[str, Any]]) -> dict[str, Any]:
    prev_objs = json_objects(previous) if previous.strip() else []
    if previous.strip() and not prev_objs:  # a prose summary
        prev_objs = [{"narrative": previous.strip()}]
    episodes = list(episode_objects)
    parts = prev_objs + episodes
    narrative = _merge_narrative(prev_objs, episodes)
    lists: dict[str, list[str]] = {}
    for name in LISTS:
        items: list[str] = []
        for obj in parts:
            for item in _strs(obj.get(name)):
                if item.lower() not in {i.lower() for i in items}:
                    items.append(item)
        # decisions, threads, preferences and state: the latest win; facts, people: first
        latest_first = name in ("decisions", "open_threads", "preferences", "state")
        lists[name] = items[-PER_LIST:] if latest_first else items[:PER_LIST]
    _cap_total(lists, ALL_ITEMS)
    # most frequent first; ties interleave the parts (every episode's best keyword before
    # any episode's second best)
    counts: Counter[str] = Counter()
    rank: dict[str, tuple[int, int]] = {}
    for part_index, obj in enumerate(parts):
        for position, k in enumerate(_strs(obj.get("keywords"))):
            counts[k.lower()] += 1
            rank.setdefault(k.lower(), (position, part_index))
    kws = sorted(counts, key=lambda k: (-counts[k], rank[k]))[:6]
    if not kws:
        kws = keywords(narrative, 6)
    return _shape(narrative, lists, kws)


_STARTED = re.compile(r"^It started with(?: the user)?:\s*")
_ENDED = "It ended with:"


def _merge_narrative(prev: list[dict[str, Any]], episodes: list[dict[str, Any]]) -> str:
    chosen: list[str] = []
    for obj in prev:
        chosen.extend(_sentences(str(obj.get("narrative", "")))[:3])
    room = max(1, MERGE_NARRATIVE - len(chosen))
    if len(episodes) > room:  # evenly spaced, always the last
        step = (len(episodes) - 1) / max(1, room - 1)
        picks = sorted({round(i * step) for i in range(room)})
        episodes = [episodes[i] for i in picks]
    firsts = [_sentences(str(e.get("narrative", ""))) for e in episodes]
    last = firsts[-1] if firsts else []
    ended = next((x for x in reversed(last) if x.startswith(_ENDED)), None)
    room = MERGE_NARRATIVE - (1 if ended else 0)
    for sents in firsts:
        # an episode's first sentence is its headline (a summary of format 1 opened with a
        # generic "was about" line instead: the next one is more specific)
        pick = sents[1] if len(sents) > 1 and "was about" in sents[0] else (sents or [""])[0]
        if chosen:  # a later episode goes on with the story; it did not start it again
            pick = _STARTED.sub("Then: ", pick)
        if pick and pick not in chosen and len(chosen) < room:
            chosen.append(pick)
    if ended and ended not in chosen:
        chosen.append(ended)
    if not chosen:
        return "No earlier summary or episode content was provided."
    if firsts and firsts[-1]:  # the goal it started with, and how the latest part ended
        chosen[0] = _goal_and_end(chosen[0], firsts[-1][0])
    return " ".join(finish(s) for s in chosen[:MERGE_NARRATIVE])


_ENDS = " — "  # a prose headline: "<goal> — <status>: <outcome>"


def _goal_and_end(first: str, latest: str) -> str:
    """The first headline's goal with the latest headline's ending (when both have one)."""
    if _ENDS not in first or _ENDS not in latest or first == latest:
        return first
    return f"{first.split(_ENDS, 1)[0]}{_ENDS}{latest.split(_ENDS, 1)[1]}"


# -- the tasks ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class EpisodeTask:
    """One episode of a conversation, as its rendered transcript."""

    transcript: str

    def answer(self, max_tokens: int, count: Callable[[str], int]) -> str:
        return fit_json(episode_object(self.transcript), max_tokens, count)


@dataclass(frozen=True, slots=True)
class HalfTask:
    """Half of an episode that did not fit, summarized compactly."""

    transcript: str

    def answer(self, max_tokens: int, count: Callable[[str], int]) -> str:
        return fit_json(half_object(self.transcript), max_tokens, count)


@dataclass(frozen=True, slots=True)
class MergeTask:
    """The episode objects of a run and the previous summary they continue ('' for none)."""

    episodes: tuple[dict[str, Any], ...]
    previous: str = ""

    def answer(self, max_tokens: int, count: Callable[[str], int]) -> str:
        return fit_json(merge_object(self.previous, self.episodes), max_tokens, count)


def fit_json(obj: dict[str, Any], max_tokens: int, count: Callable[[str], int]) -> str:
    """``obj`` as JSON, shrunk one piece at a time (least important first) until it fits
    ``max_tokens``; the smallest form when nothing more can go (the model then reports
    Truncated)."""
    text = _dumps(obj)
    while count(text) > max_tokens and _shrink(obj):
        text = _dumps(obj)
    return text


def _dumps(obj: dict[str, Any]) -> str:
    return json.dumps(obj, ensure_ascii=False)


def _shrink(obj: dict[str, Any]) -> bool:
    """Remove one piece of ``obj`` (least important first); False when nothing is left."""
    for name in DROP_ORDER:
        if obj.get(name):
            obj[name].pop()
            return True
    if obj.get("keywords"):
        obj["keywords"].pop()
        return True
    narrative = str(obj.get("narrative", ""))
    words = narrative.split()
    if len(words) > 1:
        obj["narrative"] = " ".join(words[: max(1, len(words) * 2 // 3)]).rstrip(".,;:") + "."
        return True
    return False
