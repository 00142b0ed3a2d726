"""`memoir bench locomo` through the CLI entry point (a failing command raises SystemExit,
which fails the test with its stderr shown)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from locomo_corpus import write_conversation

from memoir.cli.app import main


def test_bench_locomo_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMOIR_HOME", str(tmp_path / "unused"))
    data = tmp_path / "locomo"
    data.mkdir()
    write_conversation(data / "7.json")
    main(["bench", "locomo", str(data), "--embedder", "hash", "--json"])
    report = json.loads(capsys.readouterr().out)
    assert set(report) == {"text", "vector", "hybrid"}
    assert report["text"]["questions"] == 2
    assert 0.0 <= report["hybrid"]["recall@10"] <= 1.0
    assert report["vector"]["recall@25"] == 1.0  # 5 exchanges: all are in the top 25
    # the two kept questions are of categories 2 and 4; 5 (adversarial) is never asked
    # vector ranks all 5 exchanges, so both find everything; "When?" has no word to search
    assert report["vector"]["recall@10_by_category"] == {"2": 1.0, "4": 1.0}
    assert report["text"]["recall@10_by_category"]["2"] == 0.0
    main(["bench", "locomo", str(data), "--embedder", "hash"])
    out = capsys.readouterr().out
    assert "by question category" in out and "4 single-hop" in out


@pytest.mark.parametrize(
    ("embedder", "unavailable", "says"),
    [
        ("none", False, "vector and hybrid rows skipped: --embedder none"),
        ("auto", True, "vector and hybrid rows skipped: no embedder is installed"),
    ],
)
def test_bench_locomo_says_why_rows_are_skipped(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    embedder: str,
    unavailable: bool,
    says: str,
) -> None:
    from memoir.search import embedders as e5
    from memoir.search import embedders as minilm

    if unavailable:  # a Python without the embeddings extra
        monkeypatch.setattr(minilm, "minilm_available", lambda: False)
        monkeypatch.setattr(e5, "e5_available", lambda: False)
    monkeypatch.setenv("MEMOIR_HOME", str(tmp_path / "unused"))
    data = tmp_path / "locomo"
    data.mkdir()
    write_conversation(data / "7.json")
    main(["bench", "locomo", str(data), "--embedder", embedder])
    out, err = capsys.readouterr()
    assert says in err and "7: " in err  # the reason, and progress per conversation
    assert ("memoir-engine[embeddings]" in err) is unavailable
    assert "│ text" in out and "│ vector" not in out and "│ hybrid" not in out
