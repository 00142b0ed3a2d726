"""Which sentences matter and which words name the topic. Deterministic, linear time.

Centrality: a sentence scores by how much of the conversation's vocabulary it shares,
each word weighted by ``log(1 + number of sentences using it)`` (words in nearly every
sentence carry little), normalised by the square root of its length so that neither
fragments nor walls of text win. This is the centroid method of extractive summarisation.

Keywords: YAKE (statistical, language-light) over the prose, with a frequency method
as the fallback for very short or CJK-heavy text.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence

from memoir.llm.offline.text import STOPWORDS, Sentence, content_words

__all__ = [
    "SentenceScorer",
    "centrality",
    "cue",
    "embedding_scorer",
    "keywords",
    "rank_sentences",
]

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
