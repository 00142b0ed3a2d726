"""Offline summaries choose their sentences by the embedder's centrality when one is wired
in (the composition root's ``MEMOIR_SUMMARY_SENTENCES=embedder``), lexically otherwise."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import pytest

from memoir import service
from memoir.app import Memoir
from memoir.llm import OfflineModel
from memoir.llm.offline_prose import summarize_lines
from memoir.llm.offline_summary import Line
from memoir.llm.transcript import Sentence, centrality, embedding_scorer, rank_sentences
from memoir.model import Author, Event, EventKind
from memoir.summaries.summarizer import summarize_conversation

R2, R5, R12 = math.sqrt(2), math.sqrt(5), math.sqrt(12)
BUDGET = 24  # words: two sentences of the body


@pytest.mark.parametrize(
    ("vectors", "scores"),
    [
        ([], []),
        ([[3.0, 4.0]], [1.0]),  # alone: it is the centroid
        ([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]], [2 / R5, 2 / R5, 1 / R5]),
        ([[2.0, 0.0], [0.0, 5.0]], [1 / R2, 1 / R2]),  # lengths do not count, directions do
        ([[1.0, 0.0], [0.0, 0.0], [1.0, 0.0]], [1.0, 0.0, 1.0]),  # a zero vector scores 0
        ([[1.0, 0.0], [-1.0, 0.0]], [0.0, 0.0]),  # opposites: no centre
        (
            [[1, 0, 0, 0], [1, 0, 0, 0], [1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]],
            [3 / R12] * 3 + [1 / R12] * 3,
        ),
    ],
)
def test_centrality_is_the_cosine_to_the_centroid(
    vectors: list[list[float]], scores: list[float]
) -> None:
    assert centrality(vectors) == pytest.approx(scores)


LIGHTHOUSE = [
    "I painted the old lighthouse on the cliffs near our cottage.",
    "The lighthouse keeper showed me the lamp room after the storm.",
    "My sketches of the lighthouse are hanging in the village hall now.",
]
BAKERY = [
    "Our neighbour opened a small bakery with rye bread and pastries.",
    "The bakery sells cardamom buns every Saturday before the market.",
    "We bought a sourdough starter from the bakery last spring.",
]
LINES = [
    Line("user", LIGHTHOUSE[0] + " " + BAKERY[0], "Ana"),
    Line("assistant", LIGHTHOUSE[1] + " " + BAKERY[1], "Ben"),
    Line("user", LIGHTHOUSE[2] + " " + BAKERY[2], "Ana"),
]


def _embed(together: Sequence[str]) -> object:
    """A fake embedder: the sentences of ``together`` share one direction, every other
    sentence points its own way."""

    def embed(texts: Sequence[str]) -> list[list[float]]:
        out = []
        for i, text in enumerate(texts):
            v = [0.0] * (len(texts) + 1)
            v[0 if text in together else i + 1] = 1.0
            out.append(v)
        return out

    return embed


def _body(scorer: object = None) -> set[str]:
    summary = summarize_lines(LINES, body_words=BUDGET, scorer=scorer)  # type: ignore[arg-type]
    return {s for s in LIGHTHOUSE + BAKERY if any(s[-30:] in b for b in summary.body)}


@pytest.mark.parametrize(("together", "chosen"), [(LIGHTHOUSE, LIGHTHOUSE), (BAKERY, BAKERY)])
def test_with_an_embedder_the_body_follows_the_vectors(
    together: list[str], chosen: list[str]
) -> None:
    # the first sentence is the headline (the goal); two more fit the budget
    body = _body(embedding_scorer(_embed(together)))  # type: ignore[arg-type]
    assert len(body) == 2 and body <= set(chosen) - {LIGHTHOUSE[0]}


def test_without_an_embedder_the_body_is_the_lexical_ranking() -> None:
    # where the vectors above chose the lighthouse, the lexical rank (recurring words, the
    # user's sentences first) puts two bakery sentences after the goal
    ranked = [s.text for _, s in rank_sentences(_sentences()) if s.text != LIGHTHOUSE[0]]
    assert set(ranked[:2]) <= set(BAKERY)
    body = _body()
    assert len(body) == 2 and body <= set(BAKERY)


def _sentences() -> list[Sentence]:
    from memoir.llm.offline_prose import _Reading

    return list(_Reading.of(LINES).sentences)


def test_the_summary_request_carries_the_scorer_to_the_offline_model() -> None:
    seen: list[list[str]] = []

    def scorer(texts: Sequence[str]) -> list[float]:
        seen.append(list(texts))
        return [1.0 if "bakery" in t else 0.0 for t in texts]

    events = []
    for n, text in enumerate(
        ["I want to remember the bakery and the lighthouse trips.", *LIGHTHOUSE, *BAKERY]
    ):
        user = n % 2 == 0
        kind = EventKind.USER_TEXT if user else EventKind.ASSISTANT_TEXT
        events.append(Event("s", n + 1, kind, Author.USER if user else Author.ASSISTANT, text))
    made = summarize_conversation(events, OfflineModel(), scorer=scorer)
    assert made is not None and seen  # the offline model ranked with it
    assert any("bakery" in t for t in seen[0]) and "bakery" in made.body.lower()


@pytest.mark.parametrize(
    ("sentences", "embedder", "wired"),
    [("lexical", "hash", False), ("embedder", "hash", True), ("embedder", "none", False)],
)
def test_the_composition_root_wires_the_embedder_only_when_asked(
    home: Path, sentences: str, embedder: str, wired: bool
) -> None:
    with Memoir.at(home, embedder=embedder, summary_sentences=sentences) as m:
        scorer = service.summary_scorer(m)
        assert (scorer is not None) is wired
        if scorer is not None:
            scores = scorer(["a lighthouse on the cliffs", "the lighthouse keeper", "rye bread"])
            assert len(scores) == 3 and all(-1.0 <= s <= 1.0 for s in scores)
