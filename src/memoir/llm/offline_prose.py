"""The offline summary a person would keep: what the conversation was for and how it
ended first, then the sentences that carry it, all the conversation's own words.

No language model runs here: every sentence is selected from the conversation (trimmed
and de-duplicated), never generated. The summary reads::

    <headline: the goal the user stated — how it ended: the assistant's outcome sentence>
    <the most central other sentences, in the order they were said>
    Touched: <files the agent read or changed>; ran: <commands>.
    Still open: <what remains, when the end says so>

The headline is the first sentence of every summary (the one search hits, the demo and
the page show). The goal is the user's first substantive sentence — a request ("can you
find out why…") turned into the imperative, after the sentence that sets it up when that
one has no request of its own. The outcome is the latest assistant sentence with an
outcome cue ("fixed", "passes", "found it", "the cause is"), else the assistant's last
substantive sentence; the status (fixed, done, open, abandoned) comes from cues at the
end, and is said only for a task (a request, or tools used).

Where a source named its speakers (a group chat: ``Caroline: I went…``), a sentence that
opens with "I" is reported in the speaker's name ("Caroline went…"), as a summary is
written (:func:`memoir.llm.offline_summary.third_person`). The structured input is
:class:`~memoir.llm.offline_summary.Line` and ``ToolAction`` (:func:`summarize_lines`);
:func:`memoir.llm.offline_summary.read_transcript` reads a rendered transcript (what the
summary and compaction tasks carry) into it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from memoir.llm.offline_summary import (
    PROSE_ROLES,
    Line,
    ToolAction,
    finish,
    read_transcript,
    said_before,
    third_person,
)
from memoir.llm.transcript import (
    Sentence,
    SentenceScorer,
    Turn,
    clip_words,
    content_words,
    cue,
    rank_sentences,
    sentences_of,
)

__all__ = [
    "ProseSummary",
    "is_filler",
    "prose_summary",
    "summarize_lines",
]

EMPTY = "A short exchange with nothing to keep."
HEADLINE_GOAL_WORDS = 30
HEADLINE_OUTCOME_WORDS = 32
SENTENCE_WORDS = 36
MIN_BODY_WORDS = 30
MAX_BODY_WORDS = 110
BODY_SHARE = 0.16  # of the conversation's prose words, between the two bounds above
MAX_ACTIONS = 6

_CJK_TEXT = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")

_GREETING = re.compile(
    r"^(?:hey|hi|hello|hiya|yo|thanks|thank you|thx|cheers|good (?:morning|evening|afternoon|"
    r"night)|wow|oh|ah|ok(?:ay)?|sure|great|cool|nice|awesome|perfect|sounds good|no problem|"
    r"you'?re welcome|bye|see you|see ya|take care|talk (?:soon|later)|glad|congrats|"
    r"congratulations|haha|lol|yes|yeah|yep|no|nope|right|exactly|absolutely|totally|"
    r"how (?:are|have) you|what'?s up|long time|(?:good|nice|great|glad|so good) to (?:see|hear|"
    r"meet|talk|chat)|that'?s (?:great|awesome|amazing|so|really|cool|nice|wonderful))\b",
    re.IGNORECASE,
)
_REQUEST = re.compile(
    r"^(?:(?:hey|hi|ok(?:ay)?|so|now|also|and|but|well)[,!.]?\s+)*"
    r"(?:(?:can|could|would|will) you(?: please)?|please|pls|i (?:want|need|would like|'d like)"
    r" (?:you )?to|i'?d like (?:you )?to|help me(?: to)?|let'?s|we (?:need|have|want) to)\s+",
    re.IGNORECASE,
)
_ASKS = re.compile(
    r"\b(?:can you|could you|would you|please|help me|i want|i need|i'?d like|let'?s|"
    r"we need|how (?:do|can|should) (?:i|we)|why (?:does|is|do|did)|fix|add|implement|"
    r"find out|figure out|set up|write|make|build|debug|refactor|migrate|update)\b",
    re.IGNORECASE,
)
# a sentence that opens with a verb telling the assistant what to do: a request
_IMPERATIVE = re.compile(
    r"^(?:(?:also|now|then|so|ok(?:ay)?|and)[,]?\s+)?(?:add|fix|write|generate|create|make|"
    r"build|explain|translate|migrate|update|remove|delete|refactor|implement|set up|find|"
    r"compare|research|review|summari[sz]e|rename|convert|investigate|debug|"
    r"optimi[sz]e|speed up|upgrade|install|deploy|document|draft|design)\b",
    re.IGNORECASE,
)
_OUTCOME = re.compile(
    r"\b(?:fixed|fixes|resolved|solved|pass|passes|passed|passing|green|works now|now works|"
    r"is working|done|finished|merged|committed|pushed|deployed|shipped|added|updated|"
    r"switched|replaced|removed|renamed|found it|the (?:root )?cause|the culprit|turned out|"
    r"the problem (?:is|was)|the issue (?:is|was)|because|now (?:uses|sits|runs|returns))\b",
    re.IGNORECASE,
)
_FIX_TASK = re.compile(r"\b(?:fix|bug|fails?|failing|flaky|error|broken|crash|wrong)\w*", re.I)
_OPEN = re.compile(
    r"\b(?:still (?:fails|failing|broken|need|to do|open)|remains? open|open question|not yet|"
    r"todo|to do|next step|remaining|follow[- ]up|tomorrow|later|pending|unresolved|"
    r"haven'?t|have not|left to)\b",
    re.IGNORECASE,
)
_ABANDONED = re.compile(
    r"\b(?:never ?mind|forget (?:it|about it)|give up|giving up|abandon\w*|drop (?:it|this)|"
    r"not worth|let'?s (?:leave|stop|park) (?:it|this|here))\b",
    re.IGNORECASE,
)
# a label an outcome sentence opens with ("Done: …", "Found it: …")
_OUTCOME_LABEL = re.compile(
    r"^(?:done|fixed|found it|all set|ok(?:ay)?|great|good)[:,!.]\s+(?=\S)", re.I
)
# a reply's reaction to what the other side said ("You have such a caring heart",
# "That sounds great"): it answers, it tells nothing new
_REACTION = re.compile(
    r"^(?:you|your|you'?re|you'?ve|that(?:'?s| is| was| sounds| looks)|this (?:sounds|looks)|"
    r"it (?:sounds|looks)|sounds|looks|what a|so (?:cool|great|glad|happy|sorry)|"
    r"i'?m (?:so )?(?:glad|happy|sorry|proud)|wow|aww?|omg)\b",
    re.IGNORECASE,
)
_YOU = re.compile(r"\b(?:you|your|yours|yourself)\b", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class ProseSummary:
    headline: str
    body: tuple[str, ...]
    touched: tuple[str, ...]
    ran: tuple[str, ...]
    still_open: str | None
    status: str | None  # "fixed" | "done" | "open" | "abandoned" | None (not a task)
    short: str = ""  # the headline without its outcome (for a tight budget)

    def render(self) -> str:
        lines = [self.headline] if self.headline else []
        if self.body:
            lines.append(" ".join(self.body))
        done = []
        if self.touched:
            done.append("Touched " + ", ".join(self.touched))
        if self.ran:
            done.append("ran " + "; ".join(f"`{c}`" for c in self.ran))
        if done:
            lines.append("; ".join(done) + ".")
        if self.still_open:
            lines.append(f"Still open: {self.still_open}")
        return "\n".join(lines)


def is_filler(text: str) -> bool:
    """A sentence that carries nothing to keep: a greeting, thanks, a yes, or too short."""
    if _IMPERATIVE.match(text.strip()) or _REQUEST.match(text.strip()):
        return False  # "Fix the parser." is short, and all the user wanted
    if _CJK_TEXT.search(text):  # no spaces between words: count characters
        return len(text.strip()) < 6
    words = text.split()
    if len(words) < 4:
        return True
    return bool(_GREETING.match(text.strip(" *_\"'“"))) and len(words) <= 9


# -- selecting -------------------------------------------------------------------------


def _imperative(text: str) -> str:
    """ "Can you find out why it's flaky?" → "Find out why it's flaky"."""
    m = _REQUEST.match(text)
    if m is None:
        return text
    rest = text[m.end() :].rstrip(" ?")
    return rest[:1].upper() + rest[1:] if rest else text


def _trim(text: str, words: int) -> str:
    return clip_words(text, words).rstrip(" .!?;:,")


@dataclass
class _Reading:
    lines: list[Line]
    turns: list[Turn]
    sentences: list[Sentence]

    @classmethod
    def of(cls, lines: Sequence[Line]) -> _Reading:
        turns = [Turn(ln.role, ln.text, n) for n, ln in enumerate(lines)]
        return cls(list(lines), turns, sentences_of(turns, roles=PROSE_ROLES))

    def speaker(self, s: Sentence) -> str | None:
        return self.lines[s.turn].speaker

    def said(self, s: Sentence, words: int = SENTENCE_WORDS) -> str:
        return finish(clip_words(third_person(s.text.strip(), self.speaker(s)), words))


def _goal(r: _Reading) -> tuple[str, list[Sentence], bool]:
    """The goal sentence(s), the sentences used and whether the user asked for something."""
    users = [s for s in r.sentences if s.role in ("user", "unknown")] or r.sentences
    firsts = [s for s in users if not is_filler(s.text)]
    if not firsts:
        return "", [], False
    first = firsts[0]
    same_turn = [s for s in firsts if s.turn == first.turn]
    asking = next((s for s in same_turn if _asks(s.text)), None)
    if asking is None:  # no request: a talk, opened by its first substantive sentence
        telling = (s for s in firsts if not _REACTION.match(s.text) and not s.text.endswith("?"))
        first = next(telling, first)
        goal = _trim(third_person(first.text, r.speaker(first)), HEADLINE_GOAL_WORDS)
        return goal, [first], False
    if asking is first:
        used = [first]
        text = _imperative(first.text) if asking is first else first.text
        goal = _trim(third_person(text, r.speaker(first)), HEADLINE_GOAL_WORDS)
        return goal, used, asking is first
    if len(first.text.split()) + len(asking.text.split()) <= HEADLINE_GOAL_WORDS + 6:
        setup = _trim(first.text, HEADLINE_GOAL_WORDS)
        ask = _imperative(asking.text)
        ask = ask[:1].lower() + ask[1:] if ask != asking.text else _trim(ask, 20)
        return f"{setup}: {_trim(ask, 20)}", [first, asking], True
    return _trim(_imperative(asking.text), HEADLINE_GOAL_WORDS), [asking], True


def _asks(text: str) -> bool:
    """A request or a question of the user's own (not one it quotes)."""
    text = text.strip()
    if text[:1] in "\"'“‘«":
        return False
    return (
        bool(_REQUEST.match(text) or _IMPERATIVE.match(text))
        or (text.endswith("?") and bool(_ASKS.search(text)))
        or (text.endswith("?") and len(text.split()) >= 8)
    )


def _outcome(r: _Reading, used: set[int]) -> Sentence | None:
    helpers = [s for s in r.sentences if s.role == "assistant" and not is_filler(s.text)]
    if not helpers:
        return None
    late = helpers[len(helpers) // 3 :]
    for s in reversed(late):
        fresh = s.position not in used and not s.text.endswith("?")
        fresh = fresh and not s.text.lstrip().startswith("[")  # a marker, not an outcome
        if fresh and _OUTCOME.search(s.text) and not _REACTION.match(s.text):
            return s
    last_turn = helpers[-1].turn
    finals = [s for s in helpers if s.turn == last_turn and s.position not in used]
    finals = [s for s in finals if not s.text.endswith("?")] or finals
    return finals[0] if finals else None


def _status(r: _Reading, outcome: Sentence | None, goal: str, task: bool) -> str | None:
    if not task:
        return None
    tail = r.sentences[-6:]
    if any(_ABANDONED.search(s.text) for s in tail if s.role in ("user", "unknown")):
        return "abandoned"
    late_assistant = [s for s in tail if s.role == "assistant"]
    if any(_OPEN.search(s.text) for s in late_assistant[-3:]):
        return "open"
    if outcome is not None and _OUTCOME.search(outcome.text):
        return "fixed" if _FIX_TASK.search(goal) else "done"
    last = r.lines[-1] if r.lines else None
    if last is not None and last.role in ("user", "unknown"):
        return "open"
    return None


def _central(
    r: _Reading,
    budget: int,
    used: set[int],
    said: list[frozenset[str]],
    scorer: SentenceScorer | None = None,
) -> list[Sentence]:
    """The most central sentences within ``budget`` words, in conversation order: first
    those that tell something (no question, no filler, not a reply's reaction), then —
    only while the budget lasts — those said to the other person ("you…")."""
    ranked = [
        s
        for _, s in rank_sentences(r.sentences, scorer)
        if s.position not in used
        and not is_filler(s.text)
        and not s.text.rstrip().endswith("?")
        and not _REACTION.match(s.text)
        and not s.text.lstrip().startswith("[")  # a marker ("[photo: …]"), not what was said
    ]
    telling = [s for s in ranked if not _YOU.search(s.text)]
    addressed = [s for s in ranked if _YOU.search(s.text)]
    chosen: list[Sentence] = []
    total = 0
    for s in telling + addressed:
        if said_before(s.text, said):
            continue
        words = min(SENTENCE_WORDS, len(s.text.split()))
        if total + words > budget:
            if total + 8 > budget:
                break
            continue
        chosen.append(s)
        said.append(frozenset(content_words(s.text)))
        total += words
    return sorted(chosen, key=lambda s: s.position)


def _dedupe(actions: Sequence[ToolAction], kind: str) -> tuple[str, ...]:
    out: list[str] = []
    for a in actions:
        if a.kind == kind and a.target not in out:
            out.append(a.target)
    return tuple(out[:MAX_ACTIONS] if kind == "file" else out[-MAX_ACTIONS // 2 :])


def summarize_lines(
    lines: Sequence[Line],
    actions: Sequence[ToolAction] = (),
    *,
    body_words: int | None = None,
    scorer: SentenceScorer | None = None,
) -> ProseSummary:
    """The prose summary of a conversation given as lines and actions (pure); the body's
    sentences are the most central by ``scorer`` (an embedder's centrality), lexically
    without one."""
    r = _Reading.of(lines)
    goal, goal_used, task = _goal(r)
    users = [s for s in r.sentences if s.role in ("user", "unknown")]
    early = {ln for ln in sorted({s.turn for s in users})[:3]}  # the user's first turns
    task = task or bool(actions)
    task = task or any(_asks(s.text) and not s.text.endswith("?") for s in users if s.turn in early)
    used = {s.position for s in goal_used}
    outcome = _outcome(r, used) if task else None
    if outcome is not None:
        used.add(outcome.position)
    status = _status(r, outcome, goal, task)
    said = [frozenset(content_words(s.text)) for s in goal_used]
    headline = goal
    if outcome is not None and said_before(outcome.text, said):
        outcome = None
    if outcome is not None:
        said.append(frozenset(content_words(outcome.text)))
        said_end = _OUTCOME_LABEL.sub("", outcome.text.strip())
        end = _trim(third_person(said_end, r.speaker(outcome)), HEADLINE_OUTCOME_WORDS)
        head = end.split(" ", 1)[0]
        if status and head[1:].isalpha() and head[1:].islower():  # "All 8 tests" → "all 8…"
            end = end[:1].lower() + end[1:]
        if status and headline:
            headline = f"{headline} — {status}: {end}"
        elif headline:
            headline = f"{headline} — {end}"
        else:
            headline = end
    elif status and headline:
        headline = f"{headline} — {status}"
    headline = finish(headline) if headline else ""
    still_open = None
    if status == "open":
        late = [s for s in r.sentences[-8:] if _OPEN.search(s.text) and s.position not in used]
        if late:
            still_open = r.said(late[-1])
            used.add(late[-1].position)
            said.append(frozenset(content_words(late[-1].text)))
    if body_words is None:
        prose_words = sum(len(s.text.split()) for s in r.sentences)
        body_words = max(MIN_BODY_WORDS, min(MAX_BODY_WORDS, int(prose_words * BODY_SHARE)))
    decided = [
        s for _, s in rank_sentences(r.sentences)
        if cue("decision", s.text) and s.position not in used and not said_before(s.text, said)
    ][:2]  # fmt: skip
    for s in decided:
        used.add(s.position)
        said.append(frozenset(content_words(s.text)))
    central = _central(
        r, max(0, body_words - sum(len(s.text.split()) for s in decided)), used, said, scorer
    )
    body = tuple(r.said(s) for s in sorted([*decided, *central], key=lambda s: s.position))
    short = finish(f"{goal} — {status}" if status and goal else goal) if goal else headline
    return ProseSummary(
        headline,
        body,
        _dedupe(actions, "file"),
        _dedupe(actions, "command"),
        still_open,
        status,
        short,
    )


def prose_summary(
    transcript: str,
    max_tokens: int,
    count: Callable[[str], int],
    previous: str = "",
    scorer: SentenceScorer | None = None,
) -> str:
    """The prose summary of a transcript in the prompt convention that fits ``max_tokens``:
    when it does not, the earlier summary's sentences go first, then body sentences from
    the last, what remains, the files and commands, the headline's outcome, and last the
    goal's words (clipped with "…")."""
    lines, actions = read_transcript(transcript)
    summary = summarize_lines(lines, actions, scorer=scorer)
    return _fit(summary, _earlier(previous), max_tokens, count) or EMPTY


def _fit(
    summary: ProseSummary, earlier: list[str], max_tokens: int, count: Callable[[str], int]
) -> str:
    def render(s: ProseSummary, before: list[str]) -> str:
        return _with_earlier(s.render(), before)

    current = summary
    text = render(current, earlier)
    while count(text) > max_tokens:
        if earlier:
            earlier = earlier[:-1]
        elif current.body:
            current = replace(current, body=current.body[:-1])
        elif current.still_open:
            current = replace(current, still_open=None)
        elif current.ran or current.touched:
            current = replace(current, ran=(), touched=())
        elif current.short and current.headline != current.short:
            current = replace(current, headline=current.short, short="")
        else:
            words = current.headline.rstrip(".…").split()
            if len(words) <= 1:
                return text if count(text) <= max_tokens else ""
            current = replace(current, headline=" ".join(words[: len(words) * 2 // 3]) + "…")
        text = render(current, earlier)
    return text


def _earlier(previous: str) -> list[str]:
    """Sentences of a previous summary carried forward (a keyword line of format 1 never)."""
    from memoir.llm.offline_summary import _previous_sentences

    return _previous_sentences(previous, limit=4)


def _with_earlier(text: str, earlier: list[str]) -> str:
    if not earlier:
        return text
    head, _, rest = text.partition("\n")
    lines = [head, "Earlier: " + " ".join(finish(e) for e in earlier)]
    return "\n".join(lines + ([rest] if rest else []))
