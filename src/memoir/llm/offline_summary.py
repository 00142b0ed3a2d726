"""The offline keyword summary and the one reading of a transcript it shares with the JSON
answers and the prose summary (:func:`read_transcript`: its prose :class:`Line` values and
the agent's :class:`ToolAction` values, :mod:`memoir.llm.offline_prose` reads them).

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

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from memoir.llm.transcript import (
    NAMED_LINE,
    Sentence,
    Turn,
    clip_words,
    content_words,
    cue,
    keywords,
    opens_turn,
    parse_turns,
    rank_sentences,
    sentences_of,
    split_sentences,
)

__all__ = [
    "EARLIER_SHARE",
    "MAX_POINTS",
    "PROSE_ROLES",
    "Analysis",
    "Line",
    "ToolAction",
    "finish",
    "read_transcript",
    "said_before",
    "text_summary",
    "third_person",
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

PROSE_ROLES = ("user", "assistant", "unknown", "system")
# a file, not a folder a search was scoped to ("shop", "."): a name with an extension
_FILE = re.compile(r"[^/.\s]\.\w{1,10}$|(?:^|/)(?:Makefile|Dockerfile|\.[\w.-]+)$")
_TOOLS_MARK = re.compile(r"^\[tools: (?P<list>[^\]\n]*)\]\s*$", re.MULTILINE)
_NAME_PREFIX = re.compile(r"^(?P<name>[A-Z][\w'’.-]{1,30}(?: [A-Z][\w'’.-]{1,30})?):\s+(?=\S)")


@dataclass(frozen=True, slots=True)
class Line:
    """One turn of prose: who (``user``, ``assistant``, ``unknown``, ``system``), the
    speaker's name when the source gave one, and the text."""

    role: str
    text: str
    speaker: str | None = None


@dataclass(frozen=True, slots=True)
class ToolAction:
    """What the agent touched: a file (``kind="file"``) or a command (``"command"``)."""

    kind: str
    target: str


def _target(tool: str, args: object) -> ToolAction | None:
    if not isinstance(args, dict):
        return None
    for key in ("command", "cmd"):
        value = args.get(key)
        if isinstance(value, list):
            value = " ".join(str(v) for v in value)
        if isinstance(value, str) and value.strip():
            return ToolAction("command", clip_words(value.strip().splitlines()[0], 10))
    for key in ("file_path", "path", "notebook_path", "filename", "file"):
        value = args.get(key)
        if isinstance(value, str) and _FILE.search(value.strip()) and len(value) < 200:
            return ToolAction("file", value.strip())
    return None


def _parse_args(text: str) -> object:
    try:
        return json.loads(text)
    except ValueError:
        return None


def read_transcript(transcript: str) -> tuple[list[Line], list[ToolAction]]:
    """The prose lines and the agent's actions of a transcript in the prompt convention:
    ``Assistant called Bash: {json}`` turns and ``[tools: Read (path), Bash (cmd)]``
    markers give the actions; a ``Name: `` prefix that leads two or more turns names
    their speaker."""
    actions: list[ToolAction] = []
    for raw in transcript.splitlines():
        m = opens_turn(raw)
        called = m.groupdict().get("called") if m else None
        if m and called:
            tool = called.split()[-1]
            found = _target(tool, _parse_args(raw[m.end() :].strip()))
            if found:
                actions.append(found)
    for mark in _TOOLS_MARK.finditer(transcript):
        for item in re.finditer(r"(\w[\w.-]*) \(([^()]{1,200})\)", mark.group("list")):
            tool, target = item.group(1), item.group(2)
            kind = "command" if tool.lower() in ("bash", "shell", "exec", "run") else "file"
            if kind == "command" or _FILE.search(target):
                actions.append(ToolAction(kind, target))
    # "Ana (user): …" → "User: Ana: …", the prefix form named speakers take in a turn
    unnamed = "\n".join(
        NAMED_LINE.sub(lambda m: f"{m.group('role').capitalize()}: {m.group('name')}: ", ln, 1)
        for ln in transcript.splitlines()
    )
    turns = [t for t in parse_turns(unnamed) if t.role in PROSE_ROLES]
    return _named([(t.role, t.text) for t in turns]), actions


def _named(turns: Sequence[tuple[str, str]]) -> list[Line]:
    heads = [_NAME_PREFIX.match(text) for _, text in turns]
    counts: dict[str, int] = {}
    for m in heads:
        if m:
            counts[m.group("name")] = counts.get(m.group("name"), 0) + 1
    names = {n for n, c in counts.items() if c >= 2}
    lines = []
    for (role, text), m in zip(turns, heads, strict=True):
        if m and m.group("name") in names:
            lines.append(Line(role, text[m.end() :], m.group("name")))
        else:
            lines.append(Line(role, text))
    return lines


_FIRST_PERSON = (
    (re.compile(r"^I'?m\b|^I am\b"), "{name} is"),
    (
        re.compile(r"^I'?ve\b|^I have\b(?= (?:been|got|a|an|the|to|no|some|just|always|never))"),
        "{name} has",
    ),
    (re.compile(r"^I'?d\b"), "{name} would"),
    (re.compile(r"^I'?ll\b"), "{name} will"),
    (re.compile(r"^My\b"), "{name}'s"),
    (re.compile(r"^I\b(?! think| guess| mean| know| feel| hope| wonder| bet)"), "{name}"),
)
_THIRD_PERSON_VERB = re.compile(
    r"^(?P<verb>love|like|want|need|have|feel|think|enjoy|hope|plan|try|work|live|go|do|"
    r"prefer|hate|miss|wish|know|keep|get|make|take|find|see|use)\b"
)
_OWN = re.compile(r"\b(?:my|me|myself|I'm|I've|I'd|I'll|I)\b")
_THEIR = {"my": "their", "me": "them", "myself": "themselves", "I'm": "they're", "I": "they",
          "I've": "they've", "I'd": "they'd", "I'll": "they'll"}  # fmt: skip
_VERB_S = {"have": "has", "do": "does", "go": "goes", "try": "tries", "wish": "wishes",
           "miss": "misses"}  # fmt: skip
_FIRST_MENTION = re.compile(r"\b(?:I'm|I've|I'd|I'll|I|my|me|myself)\b")
_NAMED = {"I'm": "{n} is", "I've": "{n} has", "I'd": "{n} would", "I'll": "{n} will",
          "I": "{n}", "my": "{n}'s", "me": "{n}", "myself": "{n}"}  # fmt: skip
_THEY_VERB = re.compile(r"\bthey (was|is|has|am|wasn't|isn't|hasn't)\b")
_PLURAL = {"was": "were", "is": "are", "has": "have", "am": "are", "wasn't": "weren't",
           "isn't": "aren't", "hasn't": "haven't"}  # fmt: skip


def third_person(text: str, name: str | None) -> str:
    """ "I went to…" said by Caroline → "Caroline went to…" (only a sentence that opens
    with the speaker's "I"/"My"; anything else is kept as said)."""
    if not name:
        return text
    for pattern, replacement in _FIRST_PERSON:
        m = pattern.match(text)
        if m is None:
            continue
        rest = text[m.end() :]
        if replacement == "{name}":
            verb = _THIRD_PERSON_VERB.match(rest.lstrip())
            if verb:
                word = verb.group("verb")
                conj = _VERB_S.get(word, word + "s")
                rest = " " + conj + rest.lstrip()[len(word) :]
        rest = _agree(_OWN.sub(lambda w: _THEIR[w.group(0)], rest))
        return replacement.format(name=name) + rest
    return _reported(text, name)


def _agree(text: str) -> str:
    """ "they was" → "they were" (after "I" became "they")."""
    return _THEY_VERB.sub(lambda m: "they " + _PLURAL[m.group(1)], text)


def _reported(text: str, name: str) -> str:
    """A sentence with the speaker's "I" further in: its first "I"/"my"/"me" names the
    speaker ("…so I went" → "…so Caroline went"), the later ones become they/their/them."""
    m = _FIRST_MENTION.search(text)
    if m is None:
        return text
    word = m.group(0)
    rest = text[m.end() :]
    if word == "I":
        verb = _THIRD_PERSON_VERB.match(rest.lstrip())
        if verb:
            conj = _VERB_S.get(verb.group("verb"), verb.group("verb") + "s")
            rest = " " + conj + rest.lstrip()[len(verb.group("verb")) :]
    rest = _agree(_OWN.sub(lambda w: _THEIR[w.group(0)], rest))
    return text[: m.start()] + _NAMED[word].format(n=name) + rest


def finish(text: str) -> str:
    """A tidy sentence (no bold markers, code fences or prompt tags; everything else, code
    and identifiers included, kept as written) that ends like one."""
    text = " ".join(_MARKUP.sub("", _BOLD.sub(r"\1", text)).split()).strip()
    if not text:
        return text
    return text if text[-1] in ".!?。！？…\"'”)" else text + "."


def said_before(text: str, said: list[frozenset[str]]) -> bool:
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
        if said_before(text, self.taken):
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
        if _said(sentence) in seen or said_before(sentence, said):
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
