"""Precision and recall of the offline memory extractor on hand-labelled user messages.

    .venv/bin/python bench/extractor_labels_bench.py [--split dev|holdout|all] [--errors]
        [--json]

The labelled set (``bench/memory_labels/*.jsonl``, described in its README) holds user
messages as they occur in coding-agent sessions and everyday chats, written for this
project, each with the phrases a person would keep from it (none for most messages:
requests, questions, complaints, hypotheticals, quoted or pasted text, code, logs,
acknowledgements). ``dev.jsonl`` is what the extractor's rules were checked against;
``holdout.jsonl`` was written at the same time and its misses were never read while the
rules were set.

Each message goes through the real path: one user event, its evidence slice
(:func:`memoir.memory.build_slice`, which drops blockquotes, fenced code and harness
tags), the offline extractor on a compaction range, and validation
(:func:`memoir.memory.validate_proposal`): only accepted items count.

Matching. A quote's span is where its text stands in the message; an expected phrase's
span likewise. An item is **correct** when one of its quotes overlaps an expected phrase
of its message by at least half of the shorter of the two spans (a whole-sentence quote
of a labelled clause counts; a neighbouring sentence does not). **Precision** = correct
items / items. **Recall** = expected phrases overlapped by some item / expected phrases.
**Item text** = of the matched phrases labelled with the item's expected text (the
"Remember that X" rows: X), the share whose item content equals it (whitespace
collapsed). A message with no phrase that yields no item is a **clean reject**.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memoir.memory import Range, Trigger, build_slice, offline_proposal, validate_proposal
from memoir.model import Author, Event, EventKind

LABELS = Path(__file__).resolve().parent / "memory_labels"
SPLITS = ("dev", "holdout")
OVERLAP = 0.5


@dataclass(frozen=True, slots=True)
class Labelled:
    """One labelled message: the phrases to keep (exact substrings of ``text``) and, for
    some, the item text expected from each (same order)."""

    id: str
    category: str
    text: str
    keep: tuple[str, ...]
    items: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Extracted:
    content: str
    quotes: tuple[str, ...]


@dataclass
class Score:
    """Counts over a set of messages (see the module doc for the rule)."""

    messages: int = 0
    items: int = 0
    correct: int = 0
    expected: int = 0
    found: int = 0
    negatives: int = 0
    clean_rejects: int = 0
    texts: int = 0
    texts_exact: int = 0
    false_positives: list[tuple[str, str]] = field(default_factory=list)
    misses: list[tuple[str, str]] = field(default_factory=list)
    wrong_texts: list[tuple[str, str, str]] = field(default_factory=list)

    @property
    def precision(self) -> float:
        return self.correct / self.items if self.items else 1.0

    @property
    def recall(self) -> float:
        return self.found / self.expected if self.expected else 1.0

    def to_json(self) -> dict[str, Any]:
        return {
            "messages": self.messages,
            "precision": round(self.precision, 4),
            "recall": round(self.recall, 4),
            "items": self.items,
            "correct_items": self.correct,
            "expected_phrases": self.expected,
            "found_phrases": self.found,
            "no_item_messages": self.negatives,
            "clean_rejects": self.clean_rejects,
            "item_text_checked": self.texts,
            "item_text_exact": self.texts_exact,
        }


def load(split: str, folder: Path = LABELS) -> list[Labelled]:
    """The rows of one split, each checked: every phrase is a substring of its text."""
    rows = []
    for number, line in enumerate((folder / f"{split}.jsonl").read_text("utf-8").splitlines()):
        if not line.strip():
            continue
        raw = json.loads(line)
        row = Labelled(
            raw["id"], raw["category"], raw["text"], tuple(raw["keep"]), tuple(raw.get("items", ()))
        )
        missing = [k for k in row.keep if k not in row.text]
        if missing or (row.items and len(row.items) != len(row.keep)):
            raise ValueError(f"{split}.jsonl line {number + 1}: bad labels {missing or row.items}")
        rows.append(row)
    return rows


def extracted(text: str) -> list[Extracted]:
    """The items the offline extractor keeps from one user message, as validated."""
    event = Event("labels", 1, EventKind.USER_TEXT, Author.USER, text)
    slice_ = build_slice([event], Range(0, 1, 1))
    proposal = offline_proposal(slice_, Trigger.COMPACTION)
    accepted = validate_proposal(proposal, slice_, Trigger.COMPACTION).accepted
    return [Extracted(i.content, tuple(q.text for q in i.quotes)) for i in accepted]


def _span(needle: str, text: str) -> tuple[int, int] | None:
    start = text.find(needle)
    return None if start < 0 else (start, start + len(needle))


def overlaps(a: tuple[int, int], b: tuple[int, int]) -> bool:
    """Whether two spans share at least half of the shorter one."""
    shared = min(a[1], b[1]) - max(a[0], b[0])
    return shared > 0 and shared >= OVERLAP * min(a[1] - a[0], b[1] - b[0])


def score(rows: Iterable[Labelled], extract_fn: Any = extracted) -> Score:
    """Precision, recall and item text over ``rows`` (``extract_fn``: text → items)."""
    total = Score()
    for row in rows:
        items: Sequence[Extracted] = extract_fn(row.text)
        phrases = [_span(k, row.text) for k in row.keep]
        total.messages += 1
        total.items += len(items)
        total.expected += len(phrases)
        if not phrases:
            total.negatives += 1
            total.clean_rejects += not items
        matched: dict[int, Extracted] = {}
        for item in items:
            spans = [s for q in item.quotes if (s := _span(q, row.text)) is not None]
            hits = [i for i, p in enumerate(phrases) if p and any(overlaps(s, p) for s in spans)]
            if hits:
                total.correct += 1
                for i in hits:
                    matched.setdefault(i, item)
            else:
                total.false_positives.append((row.id, item.quotes[0] if item.quotes else ""))
        total.found += len(matched)
        for i, phrase in enumerate(row.keep):
            if i not in matched:
                total.misses.append((row.id, phrase))
            elif row.items:
                total.texts += 1
                got, want = " ".join(matched[i].content.split()), " ".join(row.items[i].split())
                if got == want:
                    total.texts_exact += 1
                else:
                    total.wrong_texts.append((row.id, want, got))
    return total


def by_category(rows: Sequence[Labelled]) -> dict[str, Score]:
    groups: dict[str, list[Labelled]] = {}
    for row in rows:
        groups.setdefault(row.category, []).append(row)
    return {name: score(group) for name, group in sorted(groups.items())}


def _print_table(name: str, rows: Sequence[Labelled], errors: bool) -> None:
    result = score(rows)
    print(
        f"{name}: {result.messages} messages, precision {result.precision:.3f} "
        f"({result.correct}/{result.items} items), recall {result.recall:.3f} "
        f"({result.found}/{result.expected} phrases), clean rejects "
        f"{result.clean_rejects}/{result.negatives}, item text {result.texts_exact}/"
        f"{result.texts}"
    )
    print(f"  {'category':<16}{'msgs':>6}{'items':>7}{'correct':>9}{'expected':>10}{'found':>7}")
    for category, s in by_category(rows).items():
        print(
            f"  {category:<16}{s.messages:>6}{s.items:>7}{s.correct:>9}{s.expected:>10}{s.found:>7}"
        )
    if errors:
        for row_id, quote in result.false_positives:
            print(f"  false positive {row_id}: {quote!r}")
        for row_id, phrase in result.misses:
            print(f"  missed {row_id}: {phrase!r}")
        for row_id, want, got in result.wrong_texts:
            print(f"  item text {row_id}: want {want!r}, got {got!r}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--split", choices=(*SPLITS, "all"), default="all")
    parser.add_argument("--errors", action="store_true", help="list false positives and misses")
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    args = parser.parse_args(argv)
    splits = SPLITS if args.split == "all" else (args.split,)
    loaded = {s: load(s) for s in splits}
    if args.json:
        out: dict[str, Any] = {s: score(rows).to_json() for s, rows in loaded.items()}
        if len(loaded) > 1:
            out["all"] = score(r for rows in loaded.values() for r in rows).to_json()
        out["categories"] = {s: Counter(r.category for r in rows) for s, rows in loaded.items()}
        json.dump(out, sys.stdout, indent=2)
        print()
        return 0
    for split, rows in loaded.items():
        _print_table(split, rows, args.errors)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
