"""Properties over generated histories: every compaction output is a valid sequence for
the OpenAI and Anthropic APIs, strictly below the threshold, and stable."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memoir.compaction import Compactor, validate_sequence
from memoir.llm import ScriptedModel
from memoir.llm.port import OutputBudgetRejected, Transient

from .helpers import GOOD
from .strategies import histories

REPLIES = st.lists(
    st.sampled_from(
        [GOOD, "", "cut mid", OutputBudgetRejected("no"), Transient("down"), "用户完成了任务。"]
    ),
    min_size=1,
    max_size=6,
)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(histories(), st.integers(1_500, 40_000), REPLIES, st.sampled_from([None, 0, 500, 5000]))
def test_every_output_is_valid_and_below_the_threshold(
    msgs: list[dict[str, Any]], window: int, replies: list[Any], tail_budget: int | None
) -> None:
    before = json.dumps(msgs, sort_keys=True)
    compactor = Compactor(
        ScriptedModel(replies, default=Transient("down")), tail_budget=tail_budget
    )
    res = compactor.compact(msgs, window=window)
    assert validate_sequence(res.messages) == []
    assert json.dumps(msgs, sort_keys=True) == before  # the input is never mutated
    if res.strategy == "none":
        assert res.messages == msgs and res.tokens_before < res.threshold
        return
    assert res.tokens_after < res.threshold <= res.tokens_before
    assert res.removed_count > 0 or res.omitted
    if res.strategy == "truncate":
        assert res.summary is None
    again = Compactor(ScriptedModel()).compact(res.messages, window=window)
    assert again.strategy == "none"  # never stuck: one compaction is enough


@settings(max_examples=60, deadline=None)
@given(histories(), st.integers(3_000, 40_000))
def test_the_latest_user_message_survives(msgs: list[dict[str, Any]], window: int) -> None:
    last_user = next(m for m in reversed(msgs) if m["role"] == "user")
    res = Compactor(ScriptedModel(default=GOOD)).compact(msgs, window=window)
    blob = json.dumps(res.messages, ensure_ascii=False)
    text = json.dumps(last_user["content"], ensure_ascii=False)[1:-1]
    omitted_users = [o for o in res.omitted if o.role == "user" and o.where == "context"]
    assert text in blob or omitted_users


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(histories(), st.integers(1_500, 40_000), REPLIES, st.sampled_from([None, 0.0, 0.3, 0.5]))
def test_the_accounts_agree_on_every_path(
    msgs: list[dict[str, Any]], window: int, replies: list[Any], tail_ratio: float | None
) -> None:
    """Issue 26: every message is kept verbatim, kept as a stand-in, or removed — and the
    ones whose content is gone are named in ``omitted``, once each."""
    from memoir.compaction.sequence import leading_system_count

    kw = {} if tail_ratio is None else {"tail_ratio": tail_ratio}
    model = ScriptedModel(replies, default=Transient("down"))
    res = Compactor(model, **kw).compact(msgs, window=window)
    considered = len(msgs) - leading_system_count(msgs)
    in_context = [o for o in res.omitted if o.where == "context"]
    assert res.kept_verbatim + res.removed_count + len(in_context) == considered
    assert len({o.position for o in res.omitted}) == len(res.omitted)
    lost = {o.where for o in res.omitted} - {"context"}
    assert lost <= ({"dropped"} if res.strategy == "truncate" else {"request"})
    if res.strategy == "truncate":
        assert sum(o.where == "dropped" for o in res.omitted) == res.removed_count
    if res.strategy in ("stand_in", "none"):
        assert res.removed_count == 0 and model.calls == 0
    assert res.trace_data()["kept_verbatim"] == res.kept_verbatim
