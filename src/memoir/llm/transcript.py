"""A transcript as a model reads it: how it is written (turns that cannot be forged from
inside), read back into turns, sentences and words, and which sentences matter.

How a transcript is written for a model: turns that cannot be forged from inside.

The prompt convention every model caller shares puts a conversation inside
``<transcript>…</transcript>``, each turn opened by a speaker label (``User: …``,
``Ana (user): …``, ``Assistant called Bash: …``, ``[tool result: Bash]`` …;
:func:`opens_turn`). A turn's own text can hold a
line that reads like such a label — a tool printing a chat log, a reply quoting one, a
pasted transcript — and a reader (a model, or the offline strategies' reader) would take
what follows for another speaker's words: a tool's output for the user's. So every line
of a body that would read as a label (after its first, which follows the turn's own
label) is quoted with ``"> "`` (:func:`quote_speaker_lines`): the words stay, only who
said them can no longer be faked.

Reading a transcript: speaker turns, sentences, words.

A transcript is a conversation as Memoir's renderers write it (or as a person pasted
it). A line that starts with a speaker label
(``User:``, ``Human:``, ``Assistant:``, ``Ana (user):``, ``[user]``, ``### Assistant``,
``Tool result (Bash) [error]:``, ``[tool result: Bash]``, ``Assistant called Bash:`` …;
:func:`memoir.llm.transcript.opens_turn`) opens a turn; following lines belong to it.
Memoir's own renderers quote a label-like line inside a turn's text, so a tool's output
cannot pose as the user. Tool calls, tool results and attachments are tool turns (never prose).
A transcript with no label at all is one turn of unknown speaker.

Which sentences matter and which words name the topic. Deterministic, linear time.

Centrality: a sentence scores by how much of the conversation's vocabulary it shares,
each word weighted by ``log(1 + number of sentences using it)`` (words in nearly every
sentence carry little), normalised by the square root of its length so that neither
fragments nor walls of text win. This is the centroid method of extractive summarisation.

Keywords: YAKE (statistical, language-light) over the prose, with a frequency method
as the fallback for very short or CJK-heavy text.
"""

from __future__ import annotations

import itertools
import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from memoir.model.harness import split_harness

__all__ = [
    "HEADING_LINE",
    "NAMED_LINE",
    "SPEAKER_LINE",
    "Sentence",
    "SentenceScorer",
    "Turn",
    "centrality",
    "clip_words",
    "content_words",
    "cue",
    "embedding_scorer",
    "keywords",
    "opens_turn",
    "parse_turns",
    "quote_speaker_lines",
    "rank_sentences",
    "sentences_of",
    "split_sentences",
]

SPEAKER_LINE = re.compile(
    r"^[ \t]*(?:#{1,6}[ \t]*)?[\[*<]{0,2}[ \t]*"
    r"(?P<role>user|human|assistant|ai|claude|agent|bot|system|developer|attachment|用户|助手"
    r"|tool(?:[ _-]?(?:call|result|use|output|response))?)"
    r"(?P<called>[ \t]+called[ \t]+[\w.:/-]{1,80})?"
    r"(?:[ \t]*\([^)\n]{0,60}\))?(?:[ \t]*\[[^\]\n]{0,20}\])?"
    r"[ \t]*[\]*>]{0,2}[ \t]*(?:[:：]|\]|>|—|-(?=\s))[ \t]?",
    re.IGNORECASE,
)
HEADING_LINE = re.compile(
    r"^[ \t]*#{1,6}[ \t]*\**(?P<role>user|human|assistant|ai|claude|system)\**[ \t]*:?[ \t]*$",
    re.IGNORECASE,
)


# "Ana (user): …" — a turn whose source named its speaker (a group chat, one agent of a team)
NAMED_LINE = re.compile(
    r"^[ \t]*(?P<name>[^\n():<>\[\]]{1,64}?)[ \t]*\((?P<role>user|assistant)\)[ \t]*:[ \t]?",
    re.IGNORECASE,
)


def opens_turn(line: str) -> re.Match[str] | None:
    """The label a line opens a turn with (its ``role`` group names the speaker's role), or
    None when the line continues the turn before it."""
    return HEADING_LINE.match(line) or NAMED_LINE.match(line) or SPEAKER_LINE.match(line)


def quote_speaker_lines(body: str, *, first_line_too: bool = False) -> str:
    """``body`` with each line that would open a new turn quoted: every line after the
    first (which follows its own label), or every line when the body starts a line of its
    own (``first_line_too``: a label on a line by itself, as ``[tool result: Bash]``)."""
    lines = body.split("\n")
    start = 0 if first_line_too else 1
    for n in range(start, len(lines)):
        if opens_turn(lines[n]):
            lines[n] = f"> {lines[n]}"
    return "\n".join(lines)


_ROLE_OF = {
    "用户": "user",
    "助手": "assistant",
    "user": "user",
    "human": "user",
    "assistant": "assistant",
    "ai": "assistant",
    "claude": "assistant",
    "agent": "assistant",
    "bot": "assistant",
    "system": "system",
    "developer": "system",
}
_FENCE = re.compile(r"```.*?(?:```|\Z)", re.DOTALL)
_BOUNDARY = re.compile(r"[.!?]+[\"'”’)\]]*(?=\s|$)|[。！？]+[”’」』]*")
_LIST_MARK = re.compile(r"^\s*(?:[-*•>]+|\d{1,3}[.)]|#{1,6})\s+")
_WORD = re.compile(r"[^\W\d_][\w'’-]*", re.UNICODE)
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")

STOPWORDS = frozenset(
    """a about above after again against all also am an and any are as at be because been
    before being below between both but by can could did do does doing done down during each
    few for from further had has have having he her here hers herself him himself his how i
    if in into is it its itself just let like me more most my myself no nor not now of off on
    once only or other our ours ourselves out over own same she should so some such than that
    the their theirs them themselves then there these they this those through to too under
    until up very was we were what when where which while who whom why will with would you
    your yours yourself yourselves yes ok okay sure thanks thank please want need get got
    make made use used using one two also really actually something things thing way lot
    i'm i've i'd i'll you're you've it's that's let's don't doesn't didn't can't won't isn't
    here's there's what's going think know see look right well maybe might must may shall
    user assistant tool""".split()  # noqa: SIM905
) | frozenset(
    # German, French and Spanish function words, so a topic line of a conversation in
    # those languages names its subject, not "das modul, den code, ich schaue"
    """der die das den dem des ein eine einen einem einer und oder aber ist sind wir ich du er
    sie ihr mit für auf aus bei nach von zu zum zur im am auch noch nicht kein keine dass
    wenn wie wer hat habe haben wird werden kann können muss müssen soll schon nur mal dann
    doch sehr hier bitte danke le la les un une des du et est sont pour par pas sur avec dans
    ce cette ces il elle nous vous ils elles mais ou donc qui que quoi je tu mon ma mes ton
    son sa ses notre votre leur au aux être avoir fait faire peut plus très el los las uno
    una unos unas y es son con por para del al lo se su sus como más pero muy esta este esto
    estos estas ese esa yo tú él ella nosotros ustedes ellos hay fue ser estar tiene sobre
    entre cuando donde porque pourquoi comment quand warum wieso welche welcher""".split()  # noqa: SIM905
)


@dataclass(frozen=True, slots=True)
class Turn:
    role: str  # "user" | "assistant" | "tool" | "system" | "harness" | "unknown"
    text: str
    index: int


@dataclass(frozen=True, slots=True)
class Sentence:
    text: str  # exact substring of its turn's text
    turn: int
    role: str
    position: int  # global order


def _role(match: re.Match[str]) -> str:
    label = match.group("role").lower()
    called = match.groupdict().get("called")
    if label.startswith(("tool", "attachment")) or called:
        return "tool"  # "Assistant called Bash: …" is a tool call, not prose
    return _ROLE_OF.get(label, "unknown")


def parse_turns(transcript: str) -> list[Turn]:
    """Split a transcript into speaker turns (see the module docstring). Harness text in
    a user turn (a command echo, a system reminder, an environment block:
    :mod:`memoir.model.harness`) is not the user's: cut from the turn, and a turn
    that is nothing else is a ``harness`` turn: not prose, never what the user set out to do."""
    turns: list[Turn] = []
    role, lines = "unknown", list[str]()

    def close() -> None:
        if any(x.strip() for x in lines):
            turns.append(_own_words(role, "\n".join(lines).strip("\n"), len(turns)))

    for line in transcript.splitlines():
        m = opens_turn(line)
        if m:
            close()
            role, lines = _role(m), [line[m.end() :]]
        else:
            lines.append(line)
    close()
    return turns


def _own_words(role: str, text: str, index: int) -> Turn:
    if role not in ("user", "unknown"):
        return Turn(role, text, index)
    pieces = split_harness(text)
    if all(p.shape is None for p in pieces):
        return Turn(role, text, index)
    mine = "\n\n".join(p.text for p in pieces if p.shape is None)
    return Turn(role, mine, index) if mine.strip() else Turn("harness", text, index)


def _prose_line(line: str) -> bool:
    """Whether a line reads as prose (not code, a path, JSON, a table or a bracketed
    marker)."""
    stripped = line.strip()
    if len(stripped) < 2:
        return False
    if stripped.startswith("[") and stripped.endswith("]"):
        return False  # a marker the renderers write ("[tools: Grep]", a stand-in): no words
    if _CJK.search(stripped):
        return True
    letters = sum(ch.isalpha() or ch.isspace() for ch in stripped)
    return letters / len(stripped) >= 0.72 and len(_WORD.findall(stripped)) >= 2


def sentences_of(turns: list[Turn], *, roles: tuple[str, ...] | None = None) -> list[Sentence]:
    """Prose sentences of the turns, each an exact substring of its turn's text. Code
    blocks, code-like lines and list markers are left out."""
    out: list[Sentence] = []
    for turn in turns:
        if roles is not None and turn.role not in roles:
            continue
        text = _FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), turn.text)
        for line in text.split("\n"):
            if not _prose_line(line):
                continue
            for piece in _split_line(line):
                out.append(Sentence(piece, turn.index, turn.role, len(out)))
    return out


# a period after these ends no sentence (English, German, French, Spanish short forms)
_ABBREVIATIONS = frozenset(
    """e.g i.e etc vs cf al approx dr mr mrs ms prof nr z.b u.a bzw usw ca ggf evtl inkl vgl
    d.h s.o sr sra p.ej mme mlle""".split()  # noqa: SIM905
)
_LAST_WORD = re.compile(r"(\S+?)\.$")


def _ends_sentence(piece: str) -> bool:
    """Whether a piece cut at a period really ends a sentence: not after an abbreviation
    ("z. B.", "i.e.", "Dr.") or a single letter (an initial, "z.")."""
    m = _LAST_WORD.search(piece.rstrip("\"'”’)]"))
    if m is None:
        return True
    word = m.group(1).lstrip("(\"'„“«").lower()
    return not (len(word) == 1 and word.isalpha()) and word not in _ABBREVIATIONS


def split_sentences(line: str) -> list[str]:
    """A line's sentences, cut after ``.!?`` followed by a space or the end (so ``v2.3``
    and ``app.py`` stay whole) but never after an abbreviation, or after CJK ``。！？``."""
    pieces: list[str] = []
    start = 0
    for m in _BOUNDARY.finditer(line):
        piece = line[start : m.end()]
        if m.group().startswith(".") and not _ends_sentence(piece):
            continue
        pieces.append(piece)
        start = m.end()
    pieces.append(line[start:])
    return [p for p in pieces if p.strip()]


def _split_line(line: str) -> list[str]:
    pieces = split_sentences(line)
    result = []
    for piece in pieces:
        piece = piece.strip()
        mark = _LIST_MARK.match(piece)
        if mark:
            piece = piece[mark.end() :].strip()
        if len(piece) >= 3 and (_WORD.search(piece) or _CJK.search(piece)):
            result.append(piece)
    return result


def content_words(text: str) -> list[str]:
    """Lower-cased content words; CJK runs become character bigrams."""
    words: list[str] = []
    for w in _WORD.findall(text.lower()):
        w = w.strip("'’-")
        if not w:
            continue
        if _CJK.search(w):
            chars = [c for c in w if _CJK.match(c)]
            words.extend(a + b for a, b in itertools.pairwise(chars))
            if len(chars) == 1:
                words.append(chars[0])
        elif len(w) >= 3 and w not in STOPWORDS:
            words.append(w)
    return words


def clip_words(text: str, limit: int) -> str:
    """At most ``limit`` words (CJK: 2·limit characters), ending with "…" when cut."""
    text = " ".join(text.split())
    if _CJK.search(text) and " " not in text[: limit * 2]:
        return text if len(text) <= limit * 2 else text[: limit * 2] + "…"
    words = text.split(" ")
    if len(words) <= limit:
        return text
    return " ".join(words[:limit]).rstrip(",;:—-") + "…"


# sentences → one centrality score each (higher: more central); the lexical ranking when None
SentenceScorer = Callable[[Sequence[str]], Sequence[float]]

_YAKE_MAX_CHARS = 40_000
# Words that are frequent in any working conversation but never name its topic.
GENERIC = frozenset(
    """fix fixed fixes clear discuss discussed implement implemented implementation change changes
    changed add added update updated check run running works working good better best new
    problem problems issue issues question questions answer help try tried call set create
    created start started done able obvious simple based following example different specific
    important instead first last next sure great correct wrong true false yes idea point
    part kind case time today now still every many much else another same seems seem
    looks give take keep says said tell asked ask let prefer prefers preferred likes love
    loves wants build building built generate generated""".split()  # noqa: SIM905
)

CUES: dict[str, re.Pattern[str]] = {
    "decision": re.compile(
        r"\b(?:decided|decision|let'?s (?:go|use|do|keep|switch|stick)"
        r"|we(?:'ll| will) (?:use|go|keep)|agreed|settled on|going with|go with|chose"
        r"|switch(?:ed)? to|instead of|opted|the plan is|we should use|i'll use|i will use)\b",
        re.IGNORECASE,
    ),
    "preference": re.compile(
        r"\b(?:i (?:really )?(?:prefer|like|love|hate|dislike|enjoy|want|don'?t want|don'?t like"
        r"|would rather)|my favou?rite|i'?d rather|please (?:always|never|don'?t|do not)"
        r"|always use|never use)\b",
        re.IGNORECASE,
    ),
    "fact": re.compile(
        r"\b(?:i am|i'm|my name is|i work|i live|i use|i have|we use|our (?:team|project|stack)"
        r"|my (?:team|project|company|job|role|stack|setup)|i'?ve been)\b",
        re.IGNORECASE,
    ),
    "open": re.compile(
        r"\b(?:todo|to do|next step|still need|remaining|not yet|follow[- ]up|open question"
        r"|later|tomorrow|pending|unresolved|haven'?t)\b",
        re.IGNORECASE,
    ),
    "instruction": re.compile(
        r"\b(?:remember (?:that|to)|note that|from now on|make sure to|always|never)\b",
        re.IGNORECASE,
    ),
}


def cue(kind: str, text: str) -> bool:
    return bool(CUES[kind].search(text))


def centrality(vectors: Sequence[Sequence[float]]) -> list[float]:
    """Each vector's cosine to the centroid of the unit vectors (pure): how much a sentence
    shares with what the whole conversation says. A zero vector scores 0."""
    units: list[list[float] | None] = []
    for v in vectors:
        norm = math.sqrt(sum(float(x) * float(x) for x in v))
        units.append([float(x) / norm for x in v] if norm > 0 else None)
    present = [u for u in units if u is not None]
    if not present:
        return [0.0] * len(units)
    centroid = [sum(column) for column in zip(*present, strict=True)]
    size = math.sqrt(sum(x * x for x in centroid)) or 1.0
    return [
        0.0 if u is None else sum(a * b for a, b in zip(u, centroid, strict=True)) / size
        for u in units
    ]


def embedding_scorer(
    embed: Callable[[Sequence[str]], Iterable[Iterable[float]]],
) -> SentenceScorer:
    """A :data:`SentenceScorer` ranking sentences by the :func:`centrality` of their
    vectors (``embed``: texts → one vector each, e.g. an embedder's ``embed``)."""

    def score(texts: Sequence[str]) -> list[float]:
        if not texts:
            return []
        return centrality([[float(x) for x in row] for row in embed(list(texts))])

    return score


def rank_sentences(
    sentences: Sequence[Sentence], scorer: SentenceScorer | None = None
) -> list[tuple[float, Sentence]]:
    """(score, sentence) best first; ties go to the earlier sentence. With ``scorer`` the
    score is its centrality (an embedder's); without, lexical (see below)."""
    if scorer is not None and sentences:
        by_vector = list(zip(scorer([s.text for s in sentences]), sentences, strict=True))
        by_vector.sort(key=lambda pair: (-pair[0], pair[1].position))
        return [(float(score), s) for score, s in by_vector]
    bags = [set(content_words(s.text)) for s in sentences]
    df: Counter[str] = Counter()
    for bag in bags:
        df.update(bag)
    n = max(1, len(sentences))
    scored: list[tuple[float, Sentence]] = []
    for sentence, bag in zip(sentences, bags, strict=True):
        if not bag:
            continue
        weight = sum(math.log1p(df[w]) for w in sorted(bag) if df[w] < 0.6 * n or n < 5)
        words = len(sentence.text.split())
        score = weight / math.sqrt(len(bag) + 4)
        if words < 5:
            score *= 0.6
        elif words > 60:
            score *= 0.7
        if sentence.role == "user":
            score *= 1.15
        if sentence.text.rstrip().endswith("?") and sentence.role != "user":
            score *= 0.8
        scored.append((score, sentence))
    scored.sort(key=lambda pair: (-pair[0], pair[1].position))
    return scored


def _frequency_keywords(text: str, limit: int) -> list[str]:
    counts = Counter(w for w in content_words(text) if w not in GENERIC)
    return [w for w, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]]


def _yake(text: str, limit: int) -> list[str]:
    import yake

    extractor = yake.KeywordExtractor(lan="en", n=2, top=limit * 3, dedupLim=0.7)
    found: list[str] = []
    for phrase, _score in extractor.extract_keywords(text):
        p = phrase.strip().lower()
        words = p.split()
        if not p or any(w in STOPWORDS or w in GENERIC for w in (words[0], words[-1])):
            continue
        if any(p in f or f in p for f in found):
            continue
        found.append(p)
        if len(found) == limit:
            break
    return found


def keywords(text: str, limit: int) -> list[str]:
    """Up to ``limit`` lower-case keywords naming the topic of ``text``."""
    if limit <= 0 or not text.strip():
        return []
    if len(text) > _YAKE_MAX_CHARS:  # even sample: start, middle, end
        third = _YAKE_MAX_CHARS // 3
        mid = len(text) // 2
        text = "\n".join((text[:third], text[mid - third // 2 : mid + third // 2], text[-third:]))
    cjk = sum(1 for ch in text if "\u3040" <= ch <= "\u9fff" or "\uac00" <= ch <= "\ud7af")
    found: list[str] = []
    if len(text.split()) >= 8 and cjk < len(text) * 0.2:
        try:
            found = _yake(text, limit)
        except Exception:  # yake is a helper; the frequency method always works
            found = []
    for word in _frequency_keywords(text, limit * 2):
        if len(found) >= limit:
            break
        if not any(word in f for f in found):
            found.append(word)
    return found[:limit]
