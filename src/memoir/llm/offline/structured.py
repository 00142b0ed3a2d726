"""The JSON answers of the offline model: episode / half / merge summaries and memory
extraction items, in the shapes the callers' prompts define.

Episode (and fallback) object: ``narrative`` (2–3 sentences), six lists ``decisions``,
``facts``, ``people``, ``open_threads``, ``preferences``, ``state`` (at most two items
each, eight in all) and ``keywords`` (at most six). Half: one sentence, at most four facts
one per list, four keywords. Merge: the same shape with a longer narrative, combining a
``<previous_summary>`` and the ``<episodes>`` objects. Extraction: ``{"items": [{"text",
"kind", "evidence"}]}`` where evidence is an exact substring of the user's own lines.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any

from memoir.llm.offline.analysis import Analysis, finish, topic_phrase
from memoir.llm.offline.prose import read_transcript, summarize_lines
from memoir.llm.offline.rank import cue, keywords
from memoir.llm.offline.text import clip_words, parse_turns, sentences_of, split_sentences

__all__ = [
    "DROP_ORDER",
    "LISTS",
    "episode_object",
    "extraction_object",
    "half_object",
    "merge_object",
]

LISTS = ("decisions", "facts", "people", "open_threads", "preferences", "state")
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
    ``sentences - 1`` of its central sentences (:mod:`memoir.llm.offline.prose`)."""
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


def merge_object(previous: str, episodes_text: str) -> dict[str, Any]:
    prev_objs = json_objects(previous) if previous.strip() else []
    if previous.strip() and not prev_objs:  # a prose summary
        prev_objs = [{"narrative": previous.strip()}]
    episodes = json_objects(episodes_text)
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


# -- extraction ------------------------------------------------------------------------

_KIND_ORDER = ("preference", "instruction", "decision", "fact")
_VERBS = {
    "prefer": "prefers",
    "like": "likes",
    "love": "loves",
    "hate": "hates",
    "want": "wants",
    "use": "uses",
    "work": "works",
    "live": "lives",
    "need": "needs",
    "have": "has",
    "enjoy": "enjoys",
    "dislike": "dislikes",
    "don't": "doesn't",
    "do": "does",
    "am": "is",
    "was": "was",
    "would": "would",
    "always": "always",
    "never": "never",
    "really": "really",
}


def third_person(sentence: str) -> str:
    """ "I prefer tabs" → "The user prefers tabs"; otherwise "The user said: …"."""
    s = " ".join(sentence.split())
    m = re.match(r"(?i)^(i'm|i am|i've|i'd|my|i)\b\s*(\S+)?", s)
    if not m:
        return f"The user said: {finish(s)}"
    head, verb = m.group(1).lower(), (m.group(2) or "")
    rest = s[m.end(1) :].lstrip()
    if head in ("i'm", "i am"):
        return finish(f"The user is {rest}")
    if head == "i've":
        return finish(f"The user has {rest}")
    if head == "i'd":
        return finish(f"The user would {rest}")
    if head == "my":
        return finish(f"The user's {rest}")
    lowered = verb.lower()
    if lowered in _VERBS:
        return finish(f"The user {_VERBS[lowered]}{rest[len(verb) :]}")
    return f"The user said: {finish(s)}"


def extraction_object(transcript: str, *, limit: int = 8) -> dict[str, Any]:
    turns = parse_turns(transcript)
    known = any(t.role != "unknown" for t in turns)
    user_roles = ("user",) if known else ("unknown",)
    user_text = "\n".join(t.text for t in turns if t.role in user_roles)
    items: list[dict[str, str]] = []
    seen: set[str] = set()
    for kind in _KIND_ORDER:
        for s in sentences_of(turns, roles=user_roles):
            if len(items) >= limit:
                break
            if s.text.lower() in seen or not cue(kind, s.text) or s.text.endswith("?"):
                continue
            if s.text not in user_text:  # pragma: no cover - sentences are substrings
                continue
            seen.add(s.text.lower())
            items.append(
                {"text": clip_words(third_person(s.text), 40), "kind": kind, "evidence": s.text}
            )
    return {"items": items}


def describe_topic(transcript: str) -> str:
    return topic_phrase(Analysis.of(transcript, keyword_limit=3).keywords)
