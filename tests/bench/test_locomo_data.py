from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from locomo_corpus import write_conversation

from memoir.bench import load_conversation, parse_locomo_date, question_scores, to_memoir


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1:56 pm on 8 May, 2023", datetime(2023, 5, 8, 13, 56, tzinfo=UTC)),
        ("12:09 am on 13 September, 2023", datetime(2023, 9, 13, 0, 9, tzinfo=UTC)),
        ("12:30 pm on 1 January, 2024", datetime(2024, 1, 1, 12, 30, tzinfo=UTC)),
    ],
)
def test_parse_locomo_date(text: str, expected: datetime) -> None:
    assert parse_locomo_date(text) == expected


def test_load_keeps_retrieval_questions_with_valid_evidence(tmp_path: Path) -> None:
    conv = load_conversation(write_conversation(tmp_path / "7.json"))
    assert conv.name == "7" and len(conv.sessions) == 2
    assert [q.evidence for q in conv.questions] == [("D1:4",), ("D1:2", "D2:1")]


def test_mapping_speakers_sessions_and_evidence(tmp_path: Path) -> None:
    conv = load_conversation(write_conversation(tmp_path / "7.json"))
    sessions, where = to_memoir(conv)
    assert [s.id for s, _, _ in sessions] == ["locomo-7-s1", "locomo-7-s2"]
    session, events, exchanges = sessions[0]
    assert session.project == "locomo-7"
    assert [e.author.value for e in events] == ["assistant", "user", "assistant", "user"]
    # the turn's own words in the event, its speaker beside them; exchanges read "Name: text"
    assert events[0].text == "Hi Ana, back from the lake?"
    assert events[0].payload["speaker"] == "Bo"
    assert exchanges[0].assistant_text == "Bo: Hi Ana, back from the lake?"
    assert exchanges[1].user_text.startswith("Ana: ")
    assert exchanges[1].assistant_text.startswith("Bo: ")
    assert events[2].text.endswith("[photo: a photo of a kayak on a lake]")
    assert events[0].timestamp == datetime(2023, 5, 8, 13, 56, 1, tzinfo=UTC)
    # Bo opened the session: his turn is an exchange of its own, not dropped
    assert [(x.first_ordinal, x.last_ordinal) for x in exchanges] == [(1, 1), (2, 3), (4, 4)]
    assert where["D1:1"] == "locomo-7-s1:1"
    assert where["D1:3"] == where["D1:2"] == "locomo-7-s1:2"
    assert where["D2:2"] == "locomo-7-s2:1"


@pytest.mark.parametrize(
    ("ranked", "wanted", "r1", "r5", "all10"),
    [
        (["a", "b", "c"], ["a"], 1.0, 1.0, 1.0),
        (["b", "a"], ["a"], 0.0, 1.0, 1.0),
        (["b", "a"], ["a", "z"], 0.0, 0.5, 0.0),
        ([], ["a"], 0.0, 0.0, 0.0),
        ([f"x{i}" for i in range(10)] + ["a"], ["a"], 0.0, 0.0, 0.0),
        (["a"], ["a", "a"], 1.0, 1.0, 1.0),  # two evidence turns in one exchange
    ],
)
def test_question_scores(
    ranked: list[str], wanted: list[str], r1: float, r5: float, all10: float
) -> None:
    scores = question_scores(ranked, wanted)
    assert (scores["recall@1"], scores["recall@5"], scores["all@10"]) == (r1, r5, all10)
