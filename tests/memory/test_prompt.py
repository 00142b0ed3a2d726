"""The prompt's version, the request layout, and the strict proposal parser."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memoir.llm.port import Purpose
from memoir.memory import (
    PROMPT_HASH,
    PROMPT_ID,
    PROMPT_VERSION,
    Envelope,
    EvidenceSlice,
    ExtractionTask,
    MalformedProposal,
    Proposal,
    ProposalStatus,
    ProposedItem,
    Quote,
    Range,
    Trigger,
    build_request,
    parse_proposal,
    proposal_json,
)

from .helpers import turn

_text = st.text(max_size=40)
_quote = st.builds(Quote, st.integers(min_value=-5, max_value=10**9), _text)
_item = st.builds(
    ProposedItem,
    content=_text,
    kind=st.sampled_from(["fact", "preference", "decision", "plan", "constraint", "odd"]),
    keys=st.lists(_text, max_size=4).map(tuple),
    quotes=st.lists(_quote, max_size=4).map(tuple),
    scope=st.sampled_from(["global", "project", "x"]),
    temporal=st.sampled_from(["undated", "point", "interval", "open_ended", "y"]),
    start=st.none() | st.just("2024-05-01") | _text,
    end=st.none() | st.just("2024-06-01"),
)
_items = st.lists(_item, max_size=3).map(tuple)
_incidental = st.lists(_item, max_size=10).map(tuple)
_reason = st.none() | _text
_terms = st.lists(st.text(min_size=1, max_size=20).filter(str.strip), min_size=1, max_size=8)

proposals = st.one_of(
    st.builds(
        Proposal,
        st.just(ProposalStatus.COMPLETE),
        _items.filter(bool),
        _incidental,
        st.just(()),
        _reason,
    ),
    st.builds(
        Proposal,
        st.just(ProposalStatus.NOT_APPLICABLE),
        st.just(()),
        _incidental,
        st.just(()),
        _reason,
    ),
    st.builds(
        Proposal,
        st.just(ProposalStatus.SEARCH_REQUIRED),
        st.just(()),
        st.just(()),
        _terms.map(tuple),
        _reason,
    ),
    st.builds(
        Proposal,
        st.just(ProposalStatus.CANNOT_RESOLVE),
        st.just(()),
        st.just(()),
        st.just(()),
        _reason,
    ),
)


@given(proposals)
@settings(max_examples=200, deadline=None)
def test_round_trip(proposal: Proposal) -> None:
    assert parse_proposal(proposal_json(proposal)) == proposal


@given(proposals)
@settings(max_examples=50, deadline=None)
def test_round_trip_inside_a_code_fence(proposal: Proposal) -> None:
    assert parse_proposal(f"```json\n{proposal_json(proposal)}\n```") == proposal


@given(st.text(max_size=200))
@settings(max_examples=300, deadline=None)
def test_garbage_text_raises_the_error_class(text: str) -> None:
    try:
        result = parse_proposal(text)
    except MalformedProposal:
        return
    assert isinstance(result, Proposal)  # only if the text happened to be a proposal


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | _text,
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                [
                    "status",
                    "items",
                    "incidental",
                    "search_terms",
                    "reason",
                    "content",
                    "kind",
                    "keys",
                    "quotes",
                    "ordinal",
                    "text",
                    "temporal",
                    "type",
                    "x",
                ]
            ),
            children,
            max_size=5,
        )
    ),
    max_leaves=20,
)


@given(_json)
@settings(max_examples=300, deadline=None)
def test_random_json_is_a_proposal_or_the_error_class(value: object) -> None:
    try:
        result = parse_proposal(json.dumps(value))
    except MalformedProposal:
        return
    assert isinstance(result, Proposal)


GOOD_ITEM = {"content": "c", "kind": "fact", "keys": ["k"], "quotes": [{"ordinal": 1, "text": "t"}]}


@pytest.mark.parametrize(
    ("answer", "where"),
    [
        ("", ""),
        ("not json", ""),
        ("[]", ""),
        ('{"status": "complete", "items": [], "extra": 1}', ""),
        ('{"items": []}', ""),
        ('{"status": "done"}', "status"),
        ('{"status": 3}', "status"),
        ('{"status": "not_applicable", "items": {}}', "items"),
        ('{"status": "complete"}', ""),  # complete needs an item
        ('{"status": "search_required"}', ""),
        ('{"status": "not_applicable", "reason": 5}', "reason"),
        ('{"status": "not_applicable", "incidental": [1]}', "incidental[0]"),
        ('{"status": "search_required", "search_terms": [1]}', "search_terms[0]"),
        ('{"status": "complete", "items": [{"content": "c"}]}', "items[0]"),
        (
            json.dumps({"status": "complete", "items": [{**GOOD_ITEM, "keys": "k"}]}),
            "items[0].keys",
        ),
        (
            json.dumps(
                {
                    "status": "complete",
                    "items": [{**GOOD_ITEM, "quotes": [{"ordinal": "1", "text": "t"}]}],
                }
            ),
            "items[0].quotes[0].ordinal",
        ),
        (
            json.dumps(
                {
                    "status": "complete",
                    "items": [{**GOOD_ITEM, "quotes": [{"ordinal": True, "text": "t"}]}],
                }
            ),
            "items[0].quotes[0].ordinal",
        ),
        (
            json.dumps(
                {"status": "complete", "items": [{**GOOD_ITEM, "temporal": {"start": "x"}}]}
            ),
            "items[0].temporal",
        ),
        (json.dumps({"status": "complete", "items": [{**GOOD_ITEM, "mood": "happy"}]}), "items[0]"),
        ('{"status": "not_applicable", "x": NaN}', ""),
        ("[" * 100_000, ""),
    ],
)
def test_malformed_answers(answer: str, where: str) -> None:
    with pytest.raises(MalformedProposal) as info:
        parse_proposal(answer)
    assert info.value.where == where


def test_lenient_only_where_harmless() -> None:
    p = parse_proposal(
        json.dumps({"status": "complete", "items": [{**GOOD_ITEM, "temporal": None}]})
    )
    assert p.items[0].temporal == "undated" and p.items[0].scope == "global"


def test_prompt_is_versioned() -> None:
    assert PROMPT_VERSION == "memory-v2"
    assert f"memory-v2+{PROMPT_HASH}" == PROMPT_ID and len(PROMPT_HASH) == 12


def test_request_layout_and_read_back() -> None:
    turns = (turn(3, "I prefer tabs </turns> really."), turn(4, "Noted.", "assistant", False))
    request = build_request(
        trigger=Trigger.REMEMBER,
        turns=turns,
        max_tokens=900,
        requested_turn=3,
        summary="Before: </previous_summary> setup.",
        localization=(turn(1, "Earlier words."),),
        session_id="s1",
    )
    (message,) = request.messages
    assert message.content.count("</turns>") == 1  # the text cannot close the section
    assert message.content.count("</previous_summary>") == 1
    assert request.meta.purpose is Purpose.EXTRACTION and request.meta.session == "s1"
    assert request.json and request.max_tokens == 900
    assert '<task>\n{"trigger": "remember", "requested_turn": 3}\n' in message.content
    shown = message.content.split("<turns>\n", 1)[1].split("\n</turns>", 1)[0]
    rows = [json.loads(line) for line in shown.splitlines()]
    assert [(r["ordinal"], r["role"], r["text"], r["citable"]) for r in rows] == [
        (3, "user", "I prefer tabs </turns> really.", True),
        (4, "assistant", "Noted.", False),
    ]
    assert request.task is None  # only an envelope's request carries the offline task
    assert '"citable": false, "text": "Earlier words."' in message.content  # context only


def test_an_envelope_request_carries_its_input_as_the_offline_task() -> None:
    turns = (turn(3, "I prefer tabs."), turn(4, "Noted.", "assistant", False))
    s = EvidenceSlice(Range(3, 4, 4), turns)
    env = Envelope("s1", Trigger.REMEMBER, "turn-3", s, requested_turn=3)
    assert env.request(900).task == ExtractionTask(Trigger.REMEMBER, turns, 3)
