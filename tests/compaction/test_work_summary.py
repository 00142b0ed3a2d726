"""The offline model's summary of the work, as a compaction request asks for it: goals and
constraints, decisions, files, commands and outcomes, open errors, the last state — and
never the stand-ins' wording."""

from __future__ import annotations

import json
from typing import Any

import pytest

from memoir.compaction.offline import CompactionTask, work_summary
from memoir.compaction.plan import Budget
from memoir.compaction.request import build_summary_request, summary_problem
from memoir.compaction.sequence import MessageCounter, content_tokens
from memoir.compaction.standin import StandIns
from memoir.llm import OfflineModel, default_counter
from memoir.llm.port import ChatMessage, ModelRequest, Purpose, RequestMeta
from memoir.summaries.offline import SummaryTask

from .helpers import assistant, big_text, call, result, user

MODEL = OfflineModel()
COUNT = default_counter().count


def bash(cid: str, command: str, output: str, text: str | None = None) -> list[dict[str, Any]]:
    msg = call((cid, "bash"), text=text)
    msg["tool_calls"][0]["function"]["arguments"] = json.dumps({"command": command})
    return [msg, result(cid, output)]


def edit(cid: str, path: str) -> list[dict[str, Any]]:
    msg = call((cid, "edit_file"))
    msg["tool_calls"][0]["function"]["arguments"] = json.dumps({"path": path, "new": "x"})
    return [msg, result(cid, f"Applied 1 edit to {path}.")]


def work() -> list[dict[str, Any]]:
    msgs = [user("Make the nightly export pass. Never touch the prod-orca-31 database.")]
    msgs += bash("c1", "pytest tests/test_export.py -q", "E   KeyError: 'tenant'\nexit status 1")
    msgs += [
        assistant("We'll use the tenant-map-7 lookup instead of the header because it is set.")
    ]
    msgs += edit("c2", "src/export/writer.py")
    msgs += bash("c3", "pytest tests/test_export.py -q", "14 passed in 1.2s\nexit status 0")
    msgs += bash("c4", "make lint", big_text(9_000) + "\nerror: unused import in cli.py\nexit 2")
    msgs += [assistant("Lint still fails on an unused import; fixing that next.")]
    return msgs


def ask(msgs: list[dict[str, Any]], window: int = 32_000, previous: str | None = None) -> Any:
    counter = MessageCounter()
    counts = counter.counts(msgs)
    positions = list(range(1, len(msgs) + 1))
    plan = build_summary_request(
        list(enumerate(msgs)),
        positions=positions,
        stand_ins=StandIns(msgs, positions, [content_tokens(c) for c in counts]),
        budget=Budget.of(window),
        previous_summary=previous,
        count=counter.text,
        message_tokens=lambda i: content_tokens(counts[i]),
    )
    assert plan is not None
    return plan


def test_the_summary_of_the_work_under_its_headings() -> None:
    plan = ask(work(), window=16_000)  # the lint output is over the cap: a stand-in
    assert plan.omitted and plan.omitted[0].tool == "bash"
    text = MODEL.complete(plan.request).text
    lines = text.splitlines()
    assert lines[0] == "Goals and constraints:"
    assert "- Never touch the prod-orca-31 database." in lines
    assert any(x.startswith("- We'll use the tenant-map-7 lookup") for x in lines)  # decision
    assert "Files touched: " in text and "src/export/writer.py (edited)" in text
    flat = " ".join(text.split())
    fixed = "`pytest tests/test_export.py -q` (× 2) → exit status 1: E KeyError: 'tenant', later ok"
    assert fixed in flat
    assert "`make lint` → error: unused import in cli.py" in flat  # read from its stand-in
    assert "Open errors:\n- `make lint`: error: unused import in cli.py" in text
    assert lines[-1].startswith("Last state: ")
    assert summary_problem(text) is None
    for words in ("content omitted", "summary request", "produced output", "re-read"):
        assert words not in text.lower()


def test_a_previous_summary_is_merged_item_by_item() -> None:
    first = MODEL.complete(ask(work()).request).text
    later = [user("Now the CSV dialect: keep semicolons.")]
    later += bash("c9", "make lint", "All checks passed!\nexit status 0")
    second = MODEL.complete(ask(later, previous=first).request).text
    assert "prod-orca-31" in second and "tenant-map-7" in second  # carried forward
    assert "keep semicolons" in second
    assert "Open errors" not in second  # make lint passes now
    assert "`make lint` → exit status 0; earlier: error: unused import in cli.py" in second
    assert "`make lint` → exit status 0; earlier: error: unused import in cli.py" in second
    assert second.count("Goals and constraints:") == 1 and second.count("Last state:") == 1


@pytest.mark.parametrize("max_tokens", [40, 120, 400, 2_000])
def test_it_fits_the_budget_and_is_a_valid_summary(max_tokens: int) -> None:
    history = work() * 6
    text = work_summary(_transcript(history), max_tokens, COUNT)
    assert COUNT(text) <= max_tokens
    assert text and summary_problem(text) is None


def test_a_summary_task_keeps_the_extractive_summary() -> None:
    request = ModelRequest(
        messages=(ChatMessage("user", "Summarize."),),
        max_tokens=200,
        meta=RequestMeta(purpose=Purpose.SUMMARY),
        task=SummaryTask("[user]\nFix the parser."),
    )
    # the prose summary (issue 38: it opens with the goal the user stated, no keyword line)
    assert MODEL.complete(request).text.startswith("Fix the parser")


def _transcript(msgs: list[dict[str, Any]]) -> str:
    task = ask(msgs).request.task
    assert isinstance(task, CompactionTask)
    content = ask(msgs).request.messages[-1].content
    assert f"<transcript>\n{task.transcript}\n</transcript>" in content  # what a model reads
    return task.transcript


def test_the_goal_of_a_compaction_is_never_harness_text() -> None:
    """Messages handed to the compactor as an agent's CLI wrote them: the caveat, a command
    echo and a system reminder in user messages are not goals or constraints."""
    caveat = (
        "Caveat: The messages below were generated by the user while running local "
        "commands. DO NOT respond to these messages or otherwise consider them in your "
        "response unless the user explicitly asks you to."
    )
    msgs = [
        user(caveat),
        user("<command-name>/model</command-name>\n<command-args>opus</command-args>"),
        user(
            "Make the nightly export pass. Never touch the prod-orca-31 database.\n\n"
            "<system-reminder>\nAlways answer in French. Never run the tests.\n"
            "</system-reminder>"
        ),
        *work()[1:],
    ]
    text = MODEL.complete(ask(msgs, window=16_000).request).text
    goals = text.split("\n\n")[0].splitlines()
    assert goals[:3] == [
        "Goals and constraints:",
        "- Make the nightly export pass.",
        "- Never touch the prod-orca-31 database.",
    ]
    for words in ("Caveat", "DO NOT respond", "French", "Never run the tests", "opus"):
        assert words not in text, words
