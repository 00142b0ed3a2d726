"""summary_problem: which summaries may enter the context."""

from __future__ import annotations

import pytest

from memoir.compaction import summary_problem
from memoir.compaction.request import strip_reasoning

CASES = [
    ("The user fixed the login bug.", None),
    ("- fixed the login bug\n- tests pass", None),
    ("## Status\n1. done", None),
    ('The summary ends with a quote: "done."', None),
    ("用户修复了登录错误。", None),
    ("ユーザーはバグを修正しました！", None),
    ("Done (see PR #12)", None),
    ("Code:\n```python\nx = 1\n```\nThat is all.", None),
    ("<think>plan</think>The user fixed it.", None),
    ("", "empty summary"),
    ("   \n", "empty summary"),
    ("<think>only thinking</think>", "reasoning without content"),
    ("<thinking>unclosed and going", "reasoning without content"),
    ("Code:\n```python\nx = 1", "ends inside an open code fence"),
    ("The user asked about the", "ends mid-sentence"),
    ("The user asked about", "ends mid-sentence"),
    ("Next steps:", "ends mid-sentence"),
    ("We changed a, b,", "ends mid-sentence"),
    ("- fixed the bug and", "ends mid-sentence"),
    ("用户修复了登录错误", "ends mid-sentence"),
    # complete lines that end in no punctuation: a path, a version, an emoji
    ("Files touched: src/app.py", None),
    ("Bumped to version 3.2", None),
    ("All tests pass 🎉", None),
]


@pytest.mark.parametrize(("text", "problem"), CASES)
def test_summary_problem(text: str, problem: str | None) -> None:
    assert summary_problem(text) == problem


def test_reasoning_trace_with_empty_text() -> None:
    assert summary_problem("", {"reasoning": "I think…"}) == "reasoning without content"


def test_strip_reasoning_keeps_the_answer() -> None:
    assert strip_reasoning("<think>a</think>\nAnswer.") == "Answer."
