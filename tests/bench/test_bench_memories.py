"""`memoir bench memories` on a tiny LoCoMo conversation written for it
(``memory_corpus.py``), figures checked by value.

By construction, with Ana (speaker_a) as the user the offline extractor cites D1:2 ("I
prefer green tea …") and D2:1 ("I adopted a puppy …"), not D1:4 (no cue) nor D2:3 (a
question); Ana's observations name D1:2, D1:4, D2:3 and D2:2 (a turn of Bo's: never
citable with Ana as the user) → recall 1/4, precision 1/2. With Bo as the user it cites
D1:3 ("I live in Berlin …") and D2:2 ("I prefer cats …"), exactly Bo's observation turns
(D9:9 names no turn and is dropped) → recall 1, precision 1. One model call per session
with user text; the empty third session is no session at all."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from memory_corpus import write_conversation

from memoir.bench.quality import evidence_scores, observation_turns
from memoir.cli.app import main


@pytest.fixture
def corpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("MEMOIR_HOME", str(tmp_path / "unused"))
    data = tmp_path / "locomo"
    data.mkdir()
    write_conversation(data / "7.json")
    return data


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    main(["bench", "memories", *args, "--json"])
    report: dict[str, Any] = json.loads(capsys.readouterr().out)
    return report


def test_speaker_a_as_the_user(corpus: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = _run(capsys, str(corpus))
    assert {k: report[k] for k in ("evidence_recall", "evidence_precision", "items")} == {
        "evidence_recall": 0.25,
        "evidence_precision": 0.5,
        "items": 2,
    }
    assert report["model_calls"] == 2
    assert report["observation_turns"] == 4 and report["own_observation_turns"] == 3
    assert report["cited_turns"] == 2 and report["cited_observation_turns"] == 1
    assert report["base_precision"] == 0.75  # 3 of Ana's 4 turns support an observation
    (conv,) = report["conversations"]
    assert conv["speaker"] == "Ana" and conv["sessions"] == 2 and conv["unsettled"] == 0
    assert conv["outcomes"] == {"extracted": 2}


def test_speaker_b_as_the_user(corpus: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = _run(capsys, str(corpus), "--speaker", "b")
    assert (report["evidence_recall"], report["evidence_precision"]) == (1.0, 1.0)
    assert (report["items"], report["model_calls"], report["cited_turns"]) == (2, 2, 2)


def test_both_speakers_are_pooled(corpus: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = _run(capsys, str(corpus), "--speaker", "both")
    # hits 1 + 2 over observation turns 4 + 2, over cited turns 2 + 2
    assert (report["evidence_recall"], report["evidence_precision"]) == (0.5, 0.75)
    assert (report["items"], report["model_calls"]) == (4, 4)
    assert [c["speaker"] for c in report["conversations"]] == ["Ana", "Bo"]


def test_the_table_and_a_bad_speaker(corpus: Path, capsys: pytest.CaptureFixture[str]) -> None:
    main(["bench", "memories", str(corpus)])
    out = capsys.readouterr().out
    assert "Ana" in out and "0.250" in out and "0.500" in out
    with pytest.raises(SystemExit) as exit_:
        main(["bench", "memories", str(corpus), "--speaker", "c"])
    assert exit_.value.code != 0


def test_observation_turns_reads_every_shape(corpus: Path) -> None:
    data = json.loads((corpus / "7.json").read_text(encoding="utf-8"))
    assert observation_turns(data, "Ana") == {"D1:2", "D1:4", "D2:3", "D2:2"}
    assert observation_turns(data, " bo ") == {"D1:3", "D2:2"}  # D9:9 names no turn
    assert observation_turns(data, "Cy") == frozenset()


@pytest.mark.parametrize(
    ("observed", "cited", "expected"),
    [
        ({"a", "b", "c", "d"}, {"a", "x"}, (0.25, 0.5)),
        ({"a"}, {"a"}, (1.0, 1.0)),
        ({"a"}, set(), (0.0, 0.0)),
        (set(), {"a"}, (0.0, 0.0)),
        ({"a", "b"}, {"c"}, (0.0, 0.0)),
    ],
)
def test_evidence_scores(
    observed: set[str], cited: set[str], expected: tuple[float, float]
) -> None:
    assert evidence_scores(observed, cited) == expected
