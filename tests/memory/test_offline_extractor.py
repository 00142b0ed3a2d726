"""The offline extractor: which sentences it picks, with exact quotes, and its model."""

from __future__ import annotations

import pytest

from memoir.llm import OfflineModel
from memoir.llm.port import Truncated
from memoir.memory import (
    Envelope,
    ExtractionTask,
    ProposalStatus,
    Range,
    Trigger,
    build_slice,
    offline_proposal,
    parse_proposal,
    validate_proposal,
)
from memoir.memory.cues import statement
from memoir.model import Event

from .helpers import SESSION, assistant, user

PICKED = [
    ("I prefer tabs over spaces.", "preference"),
    ("We decided to use PostgreSQL for the main database.", "decision"),
    ("My sister lives in Porto.", "fact"),
    ("I live in Lisbon with my two cats.", "fact"),
    ("I'm allergic to peanuts.", "constraint"),
    ("Never push directly to main.", "constraint"),
    ("Do not use semicolons in this project.", "constraint"),
    ("I'm planning to move to Berlin next year.", "plan"),
    ("I'm going to visit Japan in June.", "plan"),
    ("I hate writing YAML.", "preference"),
    ("I work at Acme as a data scientist.", "fact"),
    ("We'll use poetry for dependency management.", "decision"),
    ("From now on, write commit messages in English.", "constraint"),
    ("I'm vegetarian.", "constraint"),
    ("I always use vim for quick edits.", "preference"),
    ("I adopted a dog last year.", "fact"),
    ("I just started a pottery class.", "fact"),
    ("I got promoted to team lead.", "fact"),
    ("My sister has two kids.", "fact"),
    ("I won a prize at the fair.", "fact"),
]
REJECTED = [
    "Maybe we could try Redis later.",
    "What time is it?",
    "Can you fix the bug in the parser",
    "Don't worry about it.",
    "I think we could use a queue here.",
    "I'll check the logs.",
    "I like it.",
    "My code is broken.",
    "My question is about the parser.",
    "I'm a bit confused.",
    "ERROR 2024-05-01 connection refused to db",
    "The function foo() returns None.",
    "Never mind.",
    "Thanks!",
    "I might move to Berlin.",
    "I started the server again.",
    "I got an error from the build.",
    "I won't give up!",
    "Got it, I'll see you soon!",
    "My week has been tough.",
]


@pytest.mark.parametrize(("sentence", "kind"), PICKED)
def test_picked(sentence: str, kind: str) -> None:
    assert statement(sentence) == kind


@pytest.mark.parametrize("sentence", REJECTED)
def test_rejected(sentence: str) -> None:
    assert statement(sentence) is None


def _events() -> list[Event]:
    return [
        user(1, "Hi! I prefer tabs over spaces. What time is it?"),
        assistant(2, "I like spaces, but noted. We decided nothing yet."),
        user(
            3,
            "- We decided to use PostgreSQL for the main database.\n"
            "```\nI love code blocks\n```\n> I hate quotes, said Bob.\n"
            "Maybe we could try Redis later.",
        ),
        assistant(4, "Sounds good."),
        user(5, "My  sister lives in Porto. I'm allergic to peanuts."),
        user(6, "my aws key is AKIAIOSFODNN7EXAMPLE, I use it daily."),
        user(7, "I prefer tabs over spaces."),
        user(8, "I live in Lisbon with my two cats."),  # the retained tail
    ]


def test_extract_a_compaction_range_with_exact_quotes() -> None:
    s = build_slice(_events(), Range(0, 7, 8))
    p = offline_proposal(s, Trigger.COMPACTION)
    assert p.status is ProposalStatus.COMPLETE and p.incidental == ()
    got = [(i.kind, [(q.ordinal, q.text) for q in i.quotes]) for i in p.items]
    assert got == [
        ("preference", [(1, "I prefer tabs over spaces."), (7, "I prefer tabs over spaces.")]),
        ("decision", [(3, "We decided to use PostgreSQL for the main database.")]),
        ("fact", [(5, "My  sister lives in Porto.")]),  # exact, double space kept
        ("constraint", [(5, "I'm allergic to peanuts.")]),
    ]
    texts = {e.ordinal: e.text for e in _events()}
    for i in p.items:
        for q in i.quotes:
            assert q.text in texts[q.ordinal]
    assert p.items[2].content == "My sister lives in Porto."  # normalized content
    assert p.items[1].scope == "project"  # a "we" decision
    assert all(1 <= len(i.keys) <= 6 and all(k == k.lower() for k in i.keys) for i in p.items)
    assert "postgresql" in p.items[1].keys
    v = validate_proposal(p, s, Trigger.COMPACTION)
    assert len(v.accepted) == 4 and not v.rejected  # the offline proposal always validates


def test_nothing_durable_is_not_applicable() -> None:
    s = build_slice([user(1, "What time is it?"), user(2, "Thanks!")], Range(0, 2, 2))
    assert offline_proposal(s, Trigger.COMPACTION).status is ProposalStatus.NOT_APPLICABLE


def test_remember_takes_the_requested_turn_and_the_rest_as_incidental() -> None:
    s = build_slice(_events(), Range(0, 7, 7))
    p = offline_proposal(s, Trigger.REMEMBER, requested_turn=5)
    assert [i.content for i in p.items] == ["My sister lives in Porto.", "I'm allergic to peanuts."]
    assert [i.content for i in p.incidental] == [
        "I prefer tabs over spaces.",
        "We decided to use PostgreSQL for the main database.",
    ]
    v = validate_proposal(p, s, Trigger.REMEMBER)
    assert not v.failed and len(v.accepted) == 4


def test_elliptical_remember_uses_the_nearest_earlier_statement() -> None:
    events = [
        user(1, "I prefer tabs."),
        user(2, "I work at Acme as a data scientist."),
        assistant(3, "Nice."),
        user(4, "Please remember that."),
    ]
    s = build_slice(events, Range(0, 4, 4))
    p = offline_proposal(s, Trigger.REMEMBER, requested_turn=4)
    assert [i.quotes[0].ordinal for i in p.items] == [2]
    assert [i.content for i in p.incidental] == ["I prefer tabs."]


def test_remember_with_nothing_durable() -> None:
    s = build_slice([user(1, "I prefer tabs."), user(2, "What is this?")], Range(0, 2, 2))
    p = offline_proposal(s, Trigger.REMEMBER, requested_turn=2)
    assert p.status is ProposalStatus.NOT_APPLICABLE and len(p.incidental) == 1


def test_incidental_is_capped_at_ten() -> None:
    events = [user(i, f"I live in town number {i} with my family.") for i in range(1, 15)]
    events.append(user(15, "I prefer tabs."))
    s = build_slice(events, Range(0, 15, 15))
    p = offline_proposal(s, Trigger.REMEMBER, requested_turn=15)
    assert len(p.items) == 1 and len(p.incidental) == 10


def test_deterministic() -> None:
    s = build_slice(_events(), Range(0, 7, 8))
    assert offline_proposal(s, Trigger.COMPACTION) == offline_proposal(s, Trigger.COMPACTION)


def test_offline_model_answers_through_the_model_interface() -> None:
    s = build_slice(_events(), Range(0, 7, 8))
    env = Envelope(SESSION, Trigger.REMEMBER, "turn-5", s, requested_turn=5)
    request = env.request(2000)
    assert request.task == ExtractionTask(Trigger.REMEMBER, s.turns, 5)
    completion = OfflineModel().complete(request)
    assert completion.offline and completion.usage.input_tokens > 0
    proposal = parse_proposal(completion.text)
    assert proposal == offline_proposal(s, Trigger.REMEMBER, requested_turn=5)


def test_offline_model_fits_max_tokens() -> None:
    s = build_slice(_events(), Range(0, 7, 8))
    env = Envelope(SESSION, Trigger.COMPACTION, "ck1", s)
    small = parse_proposal(OfflineModel().complete(env.request(120)).text)
    assert 0 < len(small.items) < 4
    with pytest.raises(Truncated):
        OfflineModel().complete(env.request(5))
