"""The README and the architecture page stay short enough to be read: word limits counted
as `wc -w` counts, short sentences on the architecture page, one diagram, and a paragraph
for every package of ``src/memoir``."""

from __future__ import annotations

import re
import statistics
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ARCHITECTURE = ROOT / "docs" / "architecture.md"


def words(text: str) -> int:
    """Words as `wc -w` counts them: runs of non-space characters."""
    return len(text.split())


def prose_sentences(text: str) -> list[int]:
    """The word count of each sentence of the prose: fenced blocks, headings and table rows
    left out; a sentence ends at `.`, `?` or `!` followed by a space or the line's end."""
    prose = re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)
    lines = [ln for ln in prose.splitlines() if not ln.startswith(("#", "|"))]
    flat = " ".join(" ".join(lines).split())
    return [words(s) for s in re.split(r"(?<=[.?!])\s+(?=[A-Z`*(])", flat) if s.strip()]


@pytest.mark.parametrize(
    ("text", "count"),
    [("one two\nthree", 3), ("  ", 0), ("a-b `c d` — e", 5)],
)
def test_words_are_counted_as_wc_counts_them(text: str, count: int) -> None:
    assert words(text) == count


def test_sentences_are_split_at_their_ends_and_code_is_left_out() -> None:
    text = "# Title\nOne two three. Four five\nsix! `x` y.\n```text\nnot. counted. here.\n```\n"
    assert prose_sentences(text) == [3, 3, 2]


@pytest.mark.parametrize(("page", "limit"), [("README.md", 1_500), ("docs/architecture.md", 2_500)])
def test_the_page_stays_under_its_word_limit(page: str, limit: int) -> None:
    count = words((ROOT / page).read_text(encoding="utf-8"))
    assert 0 < count <= limit, f"{page}: {count} words, limit {limit}"


def test_the_architecture_page_is_short_sentences_and_one_diagram() -> None:
    text = ARCHITECTURE.read_text(encoding="utf-8")
    sentences = prose_sentences(text)
    assert statistics.median(sentences) <= 20, statistics.median(sentences)
    assert max(sentences) <= 40, max(sentences)
    assert len(re.findall(r"^```(?:text|mermaid)$", text, re.M)) == 1


def test_the_architecture_page_has_a_paragraph_for_every_package() -> None:
    text = ARCHITECTURE.read_text(encoding="utf-8")
    packages = sorted(
        p.name
        for p in (ROOT / "src" / "memoir").iterdir()
        if p.is_dir() and p.name != "__pycache__"
    )
    missing = [name for name in packages if f"**`{name}/`**" not in text]
    assert missing == [], missing
