"""Reading a transcript: speaker turns, sentences, words.

A transcript is a conversation as Memoir's renderers write it (or as a person pasted
it). A line that starts with a speaker label
(``User:``, ``Human:``, ``Assistant:``, ``Ana (user):``, ``[user]``, ``### Assistant``,
``Tool result (Bash) [error]:``, ``[tool result: Bash]``, ``Assistant called Bash:`` …;
:func:`memoir.llm.transcript.opens_turn`) opens a turn; following lines belong to it.
Memoir's own renderers quote a label-like line inside a turn's text, so a tool's output
cannot pose as the user. Tool calls, tool results and attachments are tool turns (never prose).
A transcript with no label at all is one turn of unknown speaker.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

from memoir.llm.transcript import opens_turn
from memoir.model.harness import split_harness

__all__ = [
    "Sentence",
    "Turn",
    "clip_words",
    "content_words",
    "parse_turns",
    "sentences_of",
    "split_sentences",
]

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
