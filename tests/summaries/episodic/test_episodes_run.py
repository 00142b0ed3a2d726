"""Every path of a run with the scripted model: normal, truncation recovery, refusal
fallback, auth errors, budget, progress, oversized guard, incremental mode."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest

from memoir.errors import BudgetExhausted, OversizedHistory, SummaryError
from memoir.llm import ScriptedModel
from memoir.llm.port import (
    AuthError,
    ContextTooLong,
    Forbidden,
    ModelRequest,
    OutOfCredit,
    Purpose,
    Refused,
    Transient,
    Truncated,
    Unauthorized,
)
from memoir.summaries.episodic import EpisodicSummarizer, EpisodicSummary

from .episode_helpers import Oracle, episode_json, marked_history, transcript_of


def make(model: ScriptedModel, **kw: Any) -> EpisodicSummarizer:
    kw.setdefault("episode_tokens", 300)
    kw.setdefault("retry_backoff_s", 0.0)
    return EpisodicSummarizer(model, **kw)


def purposes(model: ScriptedModel) -> list[Purpose]:
    return [r.meta.purpose for r in model.requests]


def test_normal_run_summarizes_each_episode_then_merges_once() -> None:
    model = ScriptedModel(default=Oracle())
    seen: list[tuple[str, int, int]] = []
    summary = make(model).summarize(
        marked_history(4),
        user="u1",
        session="s1",
        job_id="j1",
        progress=lambda *a: seen.append(a),
    )
    assert summary.calls == 5 == model.calls
    assert sorted(purposes(model)) == sorted([Purpose.EPISODE] * 4 + [Purpose.MERGE])
    assert summary.model == "scripted:test" and not summary.fallback_used
    assert summary.episodes == 4 and summary.splits == 0 and summary.complete
    assert summary.data["narrative"] == "summary of merge of 4"
    assert summary.text.startswith("summary of merge of 4")
    assert summary.last_ordinal == 8 and summary.covered == 8
    for request in model.requests:
        assert request.json is True
        assert (request.meta.user, request.meta.session, request.meta.job_id) == ("u1", "s1", "j1")
        expected = 2400 if request.meta.purpose is Purpose.MERGE else 1500
        assert request.max_tokens == expected
    merge = model.requests[-1]
    assert merge.meta.purpose is Purpose.MERGE
    body = merge.messages[-1].content
    assert "<previous_summary>" not in body
    episodes = body.split("<episodes>\n")[1].split("\n</episodes>")[0].splitlines()
    assert [json.loads(e)["keywords"] for e in episodes] == [["0"], ["1"], ["2"], ["3"]]
    assert seen[0] == ("episodes", 0, 4)
    assert [s for s in seen if s[0] == "episodes"][-1] == ("episodes", 4, 4)
    assert seen[-2:] == [("merge", 0, 1), ("merge", 1, 1)]


def test_episode_prompt_states_the_limits_and_wraps_the_transcript() -> None:
    model = ScriptedModel(default=Oracle())
    make(model).summarize(marked_history(1))
    episode = model.requests[0]
    assert episode.system is not None
    for phrase in ("2–3 sentences", "at most 2 items per list", "at most 8 items", "1,250", "900"):
        assert phrase in episode.system
    assert "MARK0 question" in transcript_of(episode)


def test_truncated_episode_is_split_once_with_exactly_two_extra_calls() -> None:
    oracle = Oracle({(Purpose.EPISODE, "MARK1"): [Truncated("cut", partial='{"narrative": "x')]})
    model = ScriptedModel(default=oracle)
    summary = make(model).summarize(marked_history(3))
    assert summary.calls == model.calls == 3 + 1 + 2
    halves = [r for r in model.requests if r.meta.purpose is Purpose.HALF]
    assert len(halves) == 2
    assert "MARK1 question" in transcript_of(halves[0])
    assert "answer about MARK1" in transcript_of(halves[1])
    assert halves[0].system is not None and "exactly 1 sentence" in halves[0].system
    assert all(h.max_tokens == 1500 for h in halves)
    assert summary.splits == 1
    merge = model.requests[-1].messages[-1].content
    assert merge.count('"narrative"') == 4  # two episodes + two halves


def test_a_truncated_half_fails_the_run_without_further_splitting() -> None:
    oracle = Oracle(
        {
            (Purpose.EPISODE, "MARK0"): [Truncated("cut", partial="{")],
            (Purpose.HALF, "answer about MARK0"): [Truncated("cut", partial='{"n')],
        }
    )
    model = ScriptedModel(default=oracle)
    with pytest.raises(SummaryError) as info:
        make(model, concurrency=1).summarize(marked_history(1))
    assert "half 2 of episode 1" in info.value.reason
    assert "cut off" in info.value.reason and not info.value.fallback_attempted
    assert purposes(model).count(Purpose.HALF) == 2
    assert Purpose.MERGE not in purposes(model)


def test_truncation_with_no_text_fails_instead_of_splitting() -> None:
    oracle = Oracle({(Purpose.EPISODE, None): [Truncated("cut", partial="  ")]})
    model = ScriptedModel(default=oracle)
    with pytest.raises(SummaryError, match="produced nothing"):
        make(model).summarize(marked_history(1))
    assert purposes(model) == [Purpose.EPISODE]


def test_truncated_merge_is_never_accepted() -> None:
    oracle = Oracle({(Purpose.MERGE, None): [Truncated("cut", partial='{"narrative": "all')]})
    with pytest.raises(SummaryError, match=r"the merge: .* cut off at the 2400-token"):
        make(ScriptedModel(default=oracle)).summarize(marked_history(2))


def test_refusal_retries_once_on_the_fallback_and_records_it_as_the_model() -> None:
    oracle = Oracle({(Purpose.EPISODE, "MARK1"): [Refused("flagged by moderation")]})
    model = ScriptedModel(default=oracle)
    fallback = ScriptedModel(default=Oracle(), name="deepseek:v3.2")
    summary = make(model, fallback=fallback).summarize(marked_history(2))
    assert summary.model == "deepseek:v3.2" and summary.fallback_used
    assert fallback.calls == 1 and summary.calls == 4
    retried = fallback.requests[0]
    original = next(r for r in model.requests if "MARK1" in transcript_of(r))
    assert retried.meta == original.meta  # the same request: its purpose shapes the answer
    assert retried.messages == original.messages and retried.system == original.system
    assert retried.max_tokens == original.max_tokens


def test_a_refused_fallback_ends_the_attempt_and_says_it_was_tried() -> None:
    oracle = Oracle({(Purpose.EPISODE, None): [Refused("ToS")]})
    fallback = ScriptedModel([Refused("ToS again")], name="deepseek:v3.2")
    with pytest.raises(SummaryError) as info:
        make(ScriptedModel(default=oracle), fallback=fallback).summarize(marked_history(1))
    assert info.value.fallback_attempted is True
    assert "fallback deepseek:v3.2 was attempted once and refused it too" in info.value.reason
    assert fallback.calls == 1


def test_refusal_without_a_fallback_says_none_was_attempted() -> None:
    oracle = Oracle({(Purpose.EPISODE, None): [Refused("ToS")]})
    with pytest.raises(SummaryError) as info:
        make(ScriptedModel(default=oracle)).summarize(marked_history(1))
    assert info.value.fallback_attempted is False
    assert "no fallback attempted" in info.value.reason
    assert "MEMOIR_LLM_FALLBACK" in info.value.reason


@pytest.mark.parametrize("error", [Unauthorized, Forbidden, OutOfCredit])
def test_auth_errors_never_select_the_fallback(error: type[AuthError]) -> None:
    oracle = Oracle({(Purpose.EPISODE, None): [error("no")]})
    model = ScriptedModel(default=oracle)
    fallback = ScriptedModel(default=Oracle(), name="deepseek:v3.2")
    with pytest.raises(SummaryError) as info:
        make(model, fallback=fallback).summarize(marked_history(1))
    assert fallback.calls == 0 and model.calls == 1
    assert info.value.fallback_attempted is False
    assert error.__name__ in info.value.reason and "never switch model" in info.value.reason


def test_transient_failures_are_retried_within_the_budget() -> None:
    oracle = Oracle({(Purpose.EPISODE, None): [Transient("503"), "not json at all"]})
    model = ScriptedModel(default=oracle)
    summary = make(model).summarize(marked_history(1))
    assert summary.calls == 4  # 503, unusable answer, success, merge


def test_retries_are_bounded_and_reported() -> None:
    oracle = Oracle({(Purpose.MERGE, None): [Transient("503")] * 5})
    model = ScriptedModel(default=oracle)
    with pytest.raises(SummaryError, match=r"the merge: scripted:test failed 3 times \(Transient"):
        make(model, retries=2).summarize(marked_history(1))
    assert purposes(model).count(Purpose.MERGE) == 3


def test_context_too_long_fails_at_once() -> None:
    oracle = Oracle({(Purpose.EPISODE, None): [ContextTooLong("too long")]})
    model = ScriptedModel(default=oracle)
    with pytest.raises(SummaryError, match="ContextTooLong"):
        make(model).summarize(marked_history(1))
    assert model.calls == 1


def test_one_budget_is_shared_by_episodes_halves_fallbacks_and_merge() -> None:
    oracle = Oracle(
        {
            (Purpose.EPISODE, "MARK0"): [Truncated("cut", partial="{")],
            (Purpose.HALF, "MARK0 question"): [Refused("no")],
        }
    )
    model = ScriptedModel(default=oracle)
    fallback = ScriptedModel(default=Oracle(), name="fb:model")
    # episode, half 1 (refused), fallback, half 2 = 4 calls; the merge would be the 5th
    with pytest.raises(BudgetExhausted) as info:
        make(model, fallback=fallback, attempt_budget=4, concurrency=1).summarize(marked_history(1))
    assert model.calls + fallback.calls == 4
    assert "attempt budget of 4 calls was used up before the merge" in info.value.reason


def test_a_history_that_cannot_fit_the_budget_fails_before_any_call() -> None:
    model = ScriptedModel(default=Oracle())
    with pytest.raises(BudgetExhausted, match="5 episodes and a merge need at least 6 calls"):
        make(model, attempt_budget=5).summarize(marked_history(5))
    assert model.calls == 0


def test_oversized_full_regeneration_points_to_incremental_mode() -> None:
    model = ScriptedModel(default=Oracle())
    with pytest.raises(OversizedHistory) as info:
        make(model, max_full_tokens=600).summarize(marked_history(4))
    assert (
        "--incremental" in info.value.reason and "1,012 tokens in 4 episodes" in info.value.reason
    )
    assert model.calls == 0


def test_incremental_takes_a_bounded_part_and_merges_into_the_previous_summary() -> None:
    model = ScriptedModel(default=Oracle())
    summarizer = make(model, max_full_tokens=600)
    history = marked_history(4)
    previous = {"narrative": "earlier part", "facts": ["old fact"]}
    first = summarizer.summarize(history, previous=previous, mode="incremental")
    assert not first.complete and first.episodes == 2
    assert first.covered == 4 and first.last_ordinal == 4
    merge = model.requests[-1].messages[-1].content
    assert '<previous_summary>\n{"narrative": "earlier part"' in merge
    second = summarizer.summarize(history[first.covered :], previous=first, mode="incremental")
    assert second.complete and second.last_ordinal == 8 and second.covered == 4
    assert "summary of merge of 2" in model.requests[-1].messages[-1].content


def test_incremental_with_nothing_new_returns_the_previous_summary_without_calls() -> None:
    model = ScriptedModel(default=Oracle())
    previous = EpisodicSummary(
        text="old", data={"narrative": "old"}, model="m", calls=3, fallback_used=False
    )
    result = make(model).summarize([], previous=previous, mode="incremental")
    assert result.calls == 0 and result.data == {"narrative": "old"} and model.calls == 0


def test_an_empty_full_history_is_a_clear_error() -> None:
    with pytest.raises(SummaryError, match="nothing to summarize"):
        make(ScriptedModel()).summarize([])


def test_concurrency_is_bounded() -> None:
    lock = threading.Lock()
    state = {"now": 0, "peak": 0}
    release = threading.Event()

    def slow(request: ModelRequest) -> str:
        with lock:
            state["now"] += 1
            state["peak"] = max(state["peak"], state["now"])
            if state["now"] >= 2:
                release.set()
        release.wait(timeout=5)
        with lock:
            state["now"] -= 1
        return episode_json("x")

    make(ScriptedModel(default=slow), concurrency=2).summarize(marked_history(6))
    assert state["peak"] == 2


def test_a_failure_stops_the_other_episodes_before_their_next_call() -> None:
    oracle = Oracle({(Purpose.EPISODE, "MARK0"): [Unauthorized("bad key")]})
    model = ScriptedModel(default=oracle)
    with pytest.raises(SummaryError, match="Unauthorized"):
        make(model, concurrency=1).summarize(marked_history(5))
    assert model.calls == 1


def test_an_exception_from_progress_aborts_the_run() -> None:
    model = ScriptedModel(default=Oracle())

    def abort(phase: str, done: int, total: int) -> None:
        if phase == "merge":
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        make(model).summarize(marked_history(2), progress=abort)
    assert Purpose.MERGE not in purposes(model)


def test_message_dicts_are_summarized_like_events() -> None:
    model = ScriptedModel(default=Oracle())
    history = [
        {"role": "system", "content": "You are helpful."},
        {"role": "user", "content": "MARK7 please list files"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c1", "function": {"name": "ls", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "a.py b.py"},
        {"role": "assistant", "content": "There are two files."},
    ]
    summary = make(model).summarize(history)
    sent = transcript_of(model.requests[0])
    assert "You are helpful" not in sent
    assert "User: MARK7 please list files" in sent and "a.py b.py" in sent
    assert summary.covered == 5 and summary.last_ordinal is None


def test_a_refused_merge_goes_to_the_fallback_too() -> None:
    oracle = Oracle({(Purpose.MERGE, None): [Refused("Terms of Service")]})
    fallback = ScriptedModel(default=Oracle(), name="deepseek:v3.2")
    summary = make(ScriptedModel(default=oracle), fallback=fallback).summarize(marked_history(2))
    assert [r.meta.purpose for r in fallback.requests] == [Purpose.MERGE]
    assert "<episodes>" in fallback.requests[0].messages[-1].content
    assert fallback.requests[0].max_tokens == 2400
    assert summary.model == "deepseek:v3.2" and summary.calls == 4
