"""The compaction retention benchmark (issue 26) at a small size, against its targets;
the full figures are in docs/benchmarks.md (``bench/compaction_quality.py``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memoir.bench.compaction import TARGETS, run_compaction_bench
from memoir.bench.compaction_data import agent_history
from memoir.cli.app import main
from memoir.compaction import validate_sequence


def test_histories_are_seeded_valid_and_carry_their_facts() -> None:
    one, again, other = agent_history(60, 3), agent_history(60, 3), agent_history(60, 4)
    assert one.messages == again.messages and one.facts == again.facts
    assert one.messages != other.messages
    assert validate_sequence(one.messages) == []
    kinds = [f.kind for f in one.facts]
    assert kinds.count("decision") == kinds.count("failure") == kinds.count("edit") == 3
    assert kinds[0] == "constraint" and kinds[-1] == "task"
    for fact in one.facts:  # each key is in its message (and its result) and nowhere else
        holding = {i for i, m in enumerate(one.messages) if fact.key in json.dumps(m)}
        assert fact.index in holding and holding <= {fact.index, fact.index + 1}
        assert fact.carrier == one.messages[fact.index]["role"]


def test_the_small_bench_meets_the_targets() -> None:
    report = run_compaction_bench(turns=(50, 120), windows=(8_000, 32_000), seeds=(0,))
    summary = report.to_json()
    assert summary["runs_compacted"] == 4 and summary["compactions"] > 20
    assert summary["recent_retention"] == TARGETS["recent_retention"] == 1.0
    assert summary["fact_retention_by_band"]["tail"] in (None, 1.0)
    assert summary["fact_retention"] >= TARGETS["fact_retention"]
    assert summary["tokens_used_share"] >= TARGETS["tokens_used_share"]
    assert summary["min_tokens_used_share"] >= TARGETS["tokens_used_share"]
    assert summary["met"] == {
        "recent_retention": True,
        "fact_retention": True,
        "tokens_used_share": True,
    }


def test_memoir_bench_compaction_json(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("MEMOIR_HOME", str(tmp_path / "unused"))
    main(["bench", "compaction", "--turns", "40", "--windows", "8000", "--seeds", "1", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert list(data)[:3] == ["fact_retention", "recent_retention", "tokens_used_share"]
    assert data["model"] == "offline" and data["runs"] == 1 and data["per_run"][0]["turns"] == 40
    assert not (tmp_path / "unused").exists()  # the offline bench needs no home
    main(["bench", "compaction", "--turns", "40", "--windows", "8000", "--seeds", "1"])
    out = capsys.readouterr().out
    assert "Compaction retention (offline model)" in out and "facts by position" in out


@pytest.mark.parametrize(
    ("option", "value"), [("--turns", "x"), ("--windows", "0"), ("--model", "gpt")]
)
def test_bad_options_are_usage_errors(
    capsys: pytest.CaptureFixture[str], option: str, value: str
) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["bench", "compaction", option, value])
    assert exit_.value.code == 2 and option in capsys.readouterr().err
