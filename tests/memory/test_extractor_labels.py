"""The labelled set of user messages and its bench: the matching rule, the set's shape, and
the extractor's quality floor on it (precision >= 0.9 on both splits; a floor, not a
timing)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "extractor_labels_bench.py"


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("extractor_labels_bench", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    ("a", "b", "overlap"),
    [
        ((0, 10), (0, 10), True),
        ((0, 30), (5, 15), True),  # a whole sentence quoting a labelled clause
        ((5, 15), (0, 30), True),
        ((0, 10), (5, 30), True),  # 5 shared = half of the shorter
        ((0, 10), (6, 30), False),  # 4 shared < half of 10
        ((0, 10), (10, 20), False),  # neighbours
        ((0, 10), (20, 30), False),
    ],
)
def test_overlap_rule(bench: ModuleType, a: Any, b: Any, overlap: bool) -> None:
    assert bench.overlaps(a, b) is overlap


def test_score_counts_items_phrases_and_item_text(bench: ModuleType) -> None:
    rows = [
        bench.Labelled(
            "1", "x", "I like tea. I live in Oslo. Fix it.", ("I like tea.", "I live in Oslo.")
        ),
        bench.Labelled("2", "x", "Fix it. Thanks!", ()),
        bench.Labelled(
            "3", "x", "Remember that I am tall.", ("Remember that I am tall.",), ("I am tall.",)
        ),
    ]
    answers: dict[str, list[Any]] = {
        rows[0].text: [
            bench.Extracted("I like tea.", ("I like tea.",)),
            bench.Extracted("Fix it.", ("Fix it.",)),  # no phrase: a false positive
        ],
        rows[1].text: [],
        rows[2].text: [bench.Extracted("Remember that I am tall.", ("Remember that I am tall.",))],
    }
    fake: Callable[[str], list[Any]] = answers.__getitem__
    s = bench.score(rows, fake)
    assert (s.items, s.correct, s.expected, s.found) == (3, 2, 3, 2)
    assert s.precision == pytest.approx(2 / 3) and s.recall == pytest.approx(2 / 3)
    assert (s.negatives, s.clean_rejects) == (1, 1)
    assert (s.texts, s.texts_exact) == (1, 0)  # the frame was not cut
    assert s.false_positives == [("1", "Fix it.")]
    assert s.misses == [("1", "I live in Oslo.")]


def test_the_labelled_set(bench: ModuleType) -> None:
    dev, holdout = bench.load("dev"), bench.load("holdout")
    rows = dev + holdout
    assert len(rows) >= 300 and len(holdout) >= 100
    assert len({r.id for r in rows}) == len(rows)
    share = sum(bool(r.keep) for r in rows) / len(rows)
    assert 0.35 <= share <= 0.45  # about 40 % of the messages hold something to keep
    negatives = {r.category for r in rows if not r.keep}
    assert {"request", "question", "complaint", "hypothetical", "quoted", "pasted", "code"} <= (
        negatives
    )
    assert {"log", "acknowledgement"} <= negatives
    assert all(k in r.text for r in rows for k in r.keep)
    assert sum(1 for r in rows if "\n" in r.text) >= 30  # multi-line messages too


def test_precision_floor_on_the_labelled_set() -> None:
    """A quality floor on the real entry point (the bench script, --json)."""
    out = subprocess.run(
        [sys.executable, str(SCRIPT), "--json"],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT / "src"), "PATH": ""},
        timeout=120,
    )
    report = json.loads(out.stdout)
    for split in ("dev", "holdout"):
        assert report[split]["precision"] >= 0.9, (split, report[split])
        assert report[split]["recall"] >= 0.75, (split, report[split])
    assert report["dev"]["messages"] + report["holdout"]["messages"] == report["all"]["messages"]
    assert report["all"]["item_text_exact"] == report["all"]["item_text_checked"] > 0
