"""Which sentences state something durable, and of what kind: the offline cue tables.

:func:`statement` classifies one sentence (``fact``, ``preference``, ``decision``,
``plan``, ``constraint`` or None); what it catches and what it misses is written in
:mod:`memoir.memory.offline_extractor`, its one user. Pure regular expressions over the
lower-cased sentence (curly apostrophes folded), linear time, deterministic.
"""

from __future__ import annotations

import re

from memoir.memory.values import ItemKind

__all__ = ["MAX_WORDS", "MIN_WORDS", "fold", "prose_line", "statement"]

MIN_WORDS, MAX_WORDS = 2, 80

_TIME = (
    r"(?:tomorrow|tonight|next (?:week|month|year|weekend|spring|summer|fall|autumn"
    r"|winter|monday|tuesday|wednesday|thursday|friday|saturday|sunday)|this (?:weekend"
    r"|spring|summer|fall|autumn|winter|year|month)|in (?:january|february|march|april|may"
    r"|june|july|august|september|october|november|december|\d+ (?:days?|weeks?|months?"
    r"|years?)))"
)
_PRONOUN = r"(?!(?:it|this|that|these|those|them|your|you|the idea|how|what)\b)"
_NOT_FACT = (
    r"(?!(?:question|problem|issue|point|guess|concern|bad|mistake|fault|understanding|idea"
    r"|suggestion|thought|worry|hope|answer|request|apologies)\b)"
)
_CUES: tuple[tuple[ItemKind, re.Pattern[str]], ...] = tuple(
    (kind, re.compile("|".join(patterns)))
    for kind, patterns in (
        (
            ItemKind.DECISION,
            (
                r"\b(?:we|i)(?: have|'ve)? (?:decided|agreed|settled on|chose|opted)\b",
                r"\bwe(?:'ll| will|'re going to| are going to) (?:use|go with|stick with"
                r"|keep using|switch to|move to|adopt)\b",
                r"\blet's (?:go with|use|stick with|keep using|switch to)\b",
                r"\bwe(?: have|'ve)? (?:switched|migrated|moved) (?:over )?(?:to|from)\b",
                r"\b(?:we're|we are|i'm|i am) going with\b",
                r"\bthe decision is\b",
            ),
        ),
        (
            ItemKind.PREFERENCE,
            (
                rf"\bi (?:really |much |strongly |generally |usually |absolutely )?(?:prefer"
                rf"|like|love|enjoy|adore|hate|dislike|detest|can't stand|cannot stand) {_PRONOUN}",
                rf"\bi (?:don't|do not) (?:really )?(?:like|enjoy|want|love) {_PRONOUN}",
                r"\bi(?:'d| would) (?:rather|prefer)\b",
                r"\bmy (?:favou?rite|preferred)\b",
                r"\bi(?:'m| am) (?:a (?:big |huge )?fan of|not a fan of|fond of)\b",
                r"\bi (?:always|never|usually) (?!know|remember|understand)\w+",
            ),
        ),
        (
            ItemKind.PLAN,
            (
                r"\b(?:i|we)(?:'m| am|'re| are)? (?:plan|planning) (?:to|on)\b",
                r"\b(?:i|we) intend to\b|\bi(?:'m| am) hoping to\b",
                r"\b(?:my|our|the) (?:goal|plan) is\b",
                rf"\b(?:i|we)(?:'ll| will|'m going to| am going to|'re going to) .*\b{_TIME}\b",
            ),
        ),
        (
            ItemKind.CONSTRAINT,
            (
                r"^(?:please )?(?:always|never(?! mind))\b",
                r"^(?:please )?(?:don't|do not) (?!worry|forget|know|think|understand|see"
                r"|get|mind|care|bother)\w+",
                r"\b(?:you|we) (?:should |must )?(?:always|never)\b",
                r"\bfrom now on\b|\bremember to \w+|\bmust (?:always|never|not)\b",
                r"\b(?:i'm|i am) allergic\b|\ballergic to\b",
                r"\bi (?:can't|cannot|can not|don't|do not) (?:eat|drink|have) \w+",
                r"\bi(?:'m| am) (?:a )?(?:vegetarian|vegan|gluten[- ]free|lactose intolerant"
                r"|diabetic|celiac)\b",
            ),
        ),
        (
            ItemKind.FACT,
            (
                rf"\bmy {_NOT_FACT}(?:[\w-]+ ){{1,3}}(?:is|are|was|were)\b",
                rf"\bmy {_NOT_FACT}[\w-]+'s\b",
                rf"\bmy {_NOT_FACT}(?:[\w-]+ ){{1,2}}(?:lives|works|studies|has(?! been)|goes to"
                r"|is called)\b",
                r"\bi (?:just |recently |now |currently )?(?:live|lived|grew up|was born|moved"
                r"|relocated|work|worked|study|studied|teach|speak)\b",
                r"\bi(?:'m| am) (?:a|an) (?!bit\b|little\b|lot\b)\w+",
                r"\bi(?:'m| am) from\b|\bi(?:'m| am) \d+ years old\b",
                r"\bi(?:'m| am) (?:married|single|divorced|engaged|retired|pregnant)\b",
                r"\bi have (?:a|an|two|three|four|\d+) (?!question|problem|issue|error|idea"
                r"|bug|doubt|suggestion|request|quick)\w+",
                r"\bi(?:'ve| have) been \w+ing (?:for|since)\b",
                r"\b(?:i|we) use\b|\bour (?:team|project|company|stack|app|service|codebase"
                r"|repo) (?:uses|is|runs|has)\b",
                r"\bremember that \w+",
            ),
        ),
    )
)
# a life event told in the first person ("I adopted a dog", "I just started a pottery
# class"): a fact about the user, unless it is about the work at hand ("I ran the tests")
_LIFE_EVENT = re.compile(
    r"\bi (?:just |recently |finally |also |actually )?(?:went to|visited|started|joined"
    r"|adopted|bought|finished|graduated|met|married|signed up|took up|learned|became|won"
    r"|volunteered|attended|traveled|travelled|published|quit|retired|got (?:a|an|my|married"
    r"|engaged|promoted|into))\b(?!')"
)
_WORK_AT_HAND = re.compile(
    r"\b(?:tests?|server|build|command|script|function|file|files|branch|commit|code|log"
    r"|logs|query|endpoint|pr|pull request|migration|repo|package|error|warning|output"
    r"|container|cluster|deploy\w*|install\w*|version|ticket)\b"
)
_ANY_CUE = re.compile(
    r"\b(?:i|we|let's|my|our|always|never|don't|do not|from now|remember|must|allergic"
    r"|decision|goal|plan)\b"
)
_QUESTION = re.compile(
    r"^(?:what|why|how|when|where|who|which|whose|can|could|would|should|shall|do(?! not)"
    r"|does|did|is|are|was|were|will|have|has|am)\b"
)
_HEDGE = re.compile(
    r"\b(?:maybe|perhaps|probably|possibly|might|not sure|unsure|i guess|i suppose"
    r"|i wonder|wondering|i think (?:we|i|you|it) (?:could|should|might|can|may)|we could"
    r"|could we|should we|what if|thinking about|considering)\b"
)
_PASSING = re.compile(
    r"\b(?:broken|failing|fails|failed|crash\w*|not working|doesn't work|won't work"
    r"|errors?|exceptions?|bugs?|typo)\b"
)
_CODE = re.compile(
    r"[{};]|=>|::|\w\(.*\)|</?[a-z]+>|^\s*(?:\$ |>>>|#include|import \w|from \S+ import "
    r"|def |class |return |SELECT |sudo )"
)
_LOG = re.compile(
    r"^\s*\[?(?:\d{4}-\d{2}-\d{2}|\d{2}:\d{2}:\d{2})|^\s*\[?(?:ERROR|WARN|WARNING|INFO|DEBUG"
    r"|TRACE|FATAL|CRITICAL)\b|^\s*(?:Traceback|at [\w.$]+\(|File \")"
)
_APOSTROPHES = str.maketrans({"’": "'", "‘": "'"})


def fold(sentence: str) -> str:
    """Lower case, curly apostrophes straight, whitespace collapsed: what the cues read."""
    return " ".join(sentence.translate(_APOSTROPHES).lower().split())


def prose_line(line: str) -> bool:
    """Whether a line reads as prose: 8+ characters, no log prefix, 75 % letters/spaces."""
    stripped = line.strip()
    if len(stripped) < 8 or _LOG.search(stripped):
        return False
    letters = sum(ch.isalpha() or ch.isspace() for ch in stripped)
    return letters / len(stripped) >= 0.75


def _kind(folded: str) -> ItemKind | None:
    if not _ANY_CUE.search(folded):
        return None
    kind = next((kind for kind, pattern in _CUES if pattern.search(folded)), None)
    if kind is None and _LIFE_EVENT.search(folded) and not _WORK_AT_HAND.search(folded):
        return ItemKind.FACT
    return kind


def statement(sentence: str) -> ItemKind | None:
    """The kind of durable statement ``sentence`` makes, or None (see the module doc)."""
    words = len(sentence.split())
    if not MIN_WORDS <= words <= MAX_WORDS or sentence.rstrip().endswith("?"):
        return None
    folded = fold(sentence)
    if _QUESTION.match(folded) or _HEDGE.search(folded) or _CODE.search(sentence):
        return None
    kind = _kind(folded)
    if kind is None or (kind is ItemKind.FACT and _PASSING.search(folded)):
        return None
    return kind
