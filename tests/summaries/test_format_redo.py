"""Issue 38: a summary of format 1 (the keyword-led offline summary) is redone by the
summary pass even though its conversation did not grow — bounded per run like any
re-summary; a current summary, or one a remote model wrote, is left alone."""

from __future__ import annotations

from memoir.home_files import write_text_atomic
from memoir.llm import ScriptedModel
from memoir.summaries.state import SummaryState, format_summary_file, parse_summary_file

from .helpers import NOW_MS, archive, conversation, make_memoir, run_pass, summary_file

OLD = "This conversation was about parser, refactor and word1.\nKey points: Answer 0."


def test_old_format_summaries_are_redone_a_limited_number_per_run(home) -> None:
    memoir = make_memoir(home)
    paths = []
    for i in range(3):
        sid = f"conv-{i}"
        path = archive(memoir.settings.home, sid, conversation(sid, 3))
        memoir.store.index_file(path)
        paths.append(path)
    model = ScriptedModel(["First.", "Second.", "Third."])
    assert run_pass(memoir, limit=10, now_ms=NOW_MS, model=model).summarized == 3
    sizes = [p.stat().st_size for p in paths]
    # two conversations carry an old-format body, one a remote model's: all fully covered
    bodies = [OLD, OLD, "A summary a remote model wrote."]
    for path, size, body in zip(paths, sizes, bodies, strict=True):
        # as Memoir writes a summary (by rename), so the scan sees the folder changed
        write_text_atomic(summary_file(path), format_summary_file(SummaryState.real(body, size)))

    model.queue("Fix the parser — done: refactored.", "Fix the parser — done: again.")
    report = run_pass(memoir, limit=1, now_ms=NOW_MS, model=model)
    assert (report.resummarized, model.calls) == (1, 4)  # bounded: one per run here
    report = run_pass(memoir, limit=1, now_ms=NOW_MS, model=model)
    assert (report.resummarized, model.calls) == (1, 5)
    texts = [parse_summary_file(summary_file(p).read_text()).body for p in paths]
    assert sorted(texts[:2]) == [
        "Fix the parser — done: again.",
        "Fix the parser — done: refactored.",
    ]
    assert texts[2] == "A summary a remote model wrote."
    report = run_pass(memoir, limit=10, now_ms=NOW_MS, model=model)
    assert (report.resummarized, report.summarized, model.calls) == (0, 0, 5)  # all current
