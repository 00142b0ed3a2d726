"""`memoir bench summaries`: ROUGE of the offline session summaries against LoCoMo's
reference summaries, next to baselines cut to the same length (issue 38)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from memoir.bench.quality import EMBEDDER_METHOD, METHODS, cut_words, run_summaries
from memoir.cli.app import main
from memoir.errors import ConfigError
from memoir.llm.transcript import embedding_scorer

TALK = [
    ("Ana", "Hi Bo! Good to see you!"),
    ("Bo", "Hey Ana! How was the trip to the mountains last weekend?"),
    ("Ana", "I hiked to the glacier lake with my brother and we camped two nights there."),
    ("Bo", "That sounds amazing. I started pottery classes at the community studio."),
    ("Ana", "I love that. My brother wants to learn pottery too, he saw my photos."),
    ("Bo", "I made a blue bowl for my mother and she uses it for fruit every day."),
    ("Ana", "I am planning a trip to the coast in July to photograph seabirds."),
    ("Bo", "I will lend you my long lens for the seabird photos, it is great for birds."),
]
REFERENCE = (
    "Ana told Bo about hiking to a glacier lake with her brother and camping two nights. "
    "Bo started pottery classes and made a blue bowl for his mother. Ana plans a trip to "
    "the coast in July to photograph seabirds, and Bo offered to lend his long lens."
)


def _write(path: Path, sessions: int = 2) -> Path:
    data: dict[str, object] = {"speaker_a": "Ana", "speaker_b": "Bo", "qa": []}
    for n in range(1, sessions + 1):
        data[f"session_{n}_date_time"] = f"1:56 pm on {n} May, 2023"
        data[f"session_{n}"] = [
            {"speaker": who, "dia_id": f"D{n}:{i}", "text": text}
            for i, (who, text) in enumerate(TALK, start=1)
        ]
        data[f"session_{n}_summary"] = REFERENCE
    data["session_3_date_time"] = "1:56 pm on 9 May, 2023"  # no reference: not scored
    data["session_3"] = [{"speaker": "Ana", "dia_id": "D3:1", "text": TALK[2][1]}]
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("text", "words", "cut"),
    [("a b c d", 2, "a b"), ("a  b\nc", 3, "a b c"), ("a b", 5, "a b"), ("", 3, "")],
)
def test_cut_words(text: str, words: int, cut: str) -> None:
    assert cut_words(text, words) == cut


def test_baselines_are_cut_to_the_summary_length_and_repeatable(tmp_path: Path) -> None:
    _write(tmp_path / "1.json")
    first = run_summaries(tmp_path)
    second = run_summaries(tmp_path)
    assert len(first.sessions) == 2  # session 3 has no reference
    session = first.sessions[0]
    assert session.reference_words == len(REFERENCE.split())
    assert session.summary_words > 0
    assert set(session.scores) == set(METHODS)
    for method in METHODS:
        for metric in ("rouge1", "rouge2", "rougeL"):
            assert 0.0 <= session.scores[method][metric] <= 1.0
    assert first.to_json() == second.to_json()  # the random baseline has a fixed seed
    # the summary reports what happened in the third person, as the reference does: it
    # beats the conversation's first words of the same length
    assert first.mean("prose", "rougeL") > first.mean("lead", "rougeL")


def test_bench_summaries_cli(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMOIR_HOME", str(tmp_path / "unused"))
    data = tmp_path / "locomo"
    data.mkdir()
    _write(data / "1.json", sessions=1)
    main(["bench", "summaries", str(data), "--json", "--no-embedder"])
    report = json.loads(capsys.readouterr().out)
    assert report["sessions"] == 1
    assert set(report["methods"]) == set(METHODS)
    lead = report["methods"]["lead"]["rougeL"]
    assert report["rougeL_vs_lead"] == round(report["methods"]["prose"]["rougeL"] / lead, 3)
    main(["bench", "summaries", str(data), "--no-embedder"])
    out = capsys.readouterr().out
    assert "LoCoMo session summaries, 1 sessions" in out and "× lead" in out


def test_a_sentence_scorer_adds_the_embedders_arm(tmp_path: Path) -> None:
    _write(tmp_path / "1.json", sessions=1)
    calls: list[int] = []

    def embed(texts: Sequence[str]) -> list[list[float]]:
        calls.append(len(texts))
        return [[float(len(t)), 1.0] for t in texts]

    report = run_summaries(tmp_path, scorer=embedding_scorer(embed))
    assert report.methods == (*METHODS, EMBEDDER_METHOD) and calls
    scores = report.sessions[0].scores[EMBEDDER_METHOD]
    assert set(scores) == {"rouge1", "rouge2", "rougeL"} and 0 < scores["rouge1"] <= 1
    assert EMBEDDER_METHOD in report.to_json()["methods"]


def test_bench_summaries_needs_conversations(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no LoCoMo"):
        run_summaries(tmp_path)
