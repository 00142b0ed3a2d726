"""Which path a conversation takes to its summary, and what the model is asked."""

from __future__ import annotations

import json

import pytest

import memoir.summaries.summarizer as summarizer_mod
from memoir.llm import ScriptedModel
from memoir.llm.port import EmptyResponse, Purpose
from memoir.summaries.summarizer import summarize_conversation

from .helpers import FakeStore, archive, conversation


def _events(tmp_path, data: bytes):
    path = archive(tmp_path, "s1", data)
    return FakeStore().index_file(path)


def test_zero_exchanges_need_no_model(tmp_path) -> None:
    model = ScriptedModel()
    assert summarize_conversation([], model) is None
    snapshots = b'{"type":"file-history-snapshot","messageId":"m","snapshot":{}}\n'
    assert summarize_conversation(_events(tmp_path, snapshots), model) is None
    assert model.calls == 0


def test_one_tiny_exchange_is_summarized_without_a_call(tmp_path) -> None:
    model = ScriptedModel()
    events = _events(tmp_path, conversation("s1", 1, words=3))
    result = summarize_conversation(events, model)
    assert model.calls == 0
    assert result is not None and result.model == "none"
    assert result.body.startswith("A single exchange: the user asked “Question 0 about the parser")
    assert "Answer 0: we decided to refactor" in result.body


def test_short_conversation_takes_one_call(claude_fixtures, tmp_path) -> None:
    model = ScriptedModel(["  It was about tentative behaviour; we agreed to act directly.  "])
    events = _events(tmp_path, (claude_fixtures / "tiny-conversation.jsonl").read_bytes())
    result = summarize_conversation(events, model, session="s1", user="u1")
    assert result is not None
    assert result.body == "It was about tentative behaviour; we agreed to act directly."
    assert (result.model, result.calls) == ("scripted:test", 1)
    (request,) = model.requests
    assert request.meta.purpose is Purpose.SUMMARY
    assert (request.meta.session, request.meta.user) == ("s1", "u1")
    last = request.messages[-1]
    assert last.role == "user"
    assert "<transcript>\n" in last.content and last.content.endswith("\n</transcript>")
    assert "Lately, I've noticed you being very tentative" in last.content
    assert "where it ended" in (request.system or "")


def test_a_reply_cannot_pose_as_a_header(tmp_path) -> None:
    model = ScriptedModel(['__ERRORED__\n{"attempts":9}\nReal text.'])
    result = summarize_conversation(_events(tmp_path, conversation("s1", 3)), model)
    assert result is not None and result.body == '{"attempts":9}\nReal text.'
    assert not result.body.startswith("__")


def test_empty_reply_is_a_failure(tmp_path) -> None:
    with pytest.raises(EmptyResponse):
        summarize_conversation(_events(tmp_path, conversation("s1", 3)), ScriptedModel(["   "]))


def test_long_conversation_goes_through_the_episodic_summarizer(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(summarizer_mod, "SHORT_TOKEN_BUDGET", 200)
    reply = json.dumps(
        {"narrative": "We refactored the parser and stopped at the tests.", "decisions": ["regex"]}
    )
    model = ScriptedModel(default=reply)
    events = _events(tmp_path, conversation("s1", 12, words=60))
    result = summarize_conversation(events, model, session="s1")
    assert result is not None
    assert "We refactored the parser" in result.body
    purposes = {r.meta.purpose for r in model.requests}
    assert Purpose.SUMMARY not in purposes
    assert Purpose.EPISODE in purposes
    assert result.calls == model.calls >= 1


def test_a_refused_short_summary_is_asked_once_of_the_fallback(tmp_path) -> None:
    from memoir.llm.port import Refused

    events = _events(tmp_path, conversation("s1", 3))
    model = ScriptedModel(default=Refused("flagged"))
    fallback = ScriptedModel(["The fallback's summary."], name="fb:model")
    result = summarize_conversation(events, model, fallback=fallback)
    assert result is not None and result.body == "The fallback's summary."
    assert (model.calls, fallback.calls) == (1, 1) and result.model == "fb:model"
    assert fallback.requests[0].meta.purpose is Purpose.SUMMARY  # its answer's shape
    with pytest.raises(Refused):  # no fallback: the refusal is the failure
        summarize_conversation(events, ScriptedModel(default=Refused("flagged")))


def test_the_pass_long_path_takes_the_episode_settings(tmp_path, monkeypatch) -> None:
    from types import SimpleNamespace

    import memoir.summaries.summary_pass as long_path_mod
    from memoir.config import Settings
    from memoir.summaries.state import SummaryState
    from memoir.summaries.summary_pass import PassSettings, session_long_path

    seen: list = []

    def fake_run(store, summaries, session_id, *, mode, summarizer, claim):
        seen.append(summarizer)
        return SimpleNamespace(summary=SimpleNamespace(text="Body.", model="m"), calls=1)

    monkeypatch.setattr(long_path_mod, "summarize_session", fake_run)
    settings = Settings(
        home=tmp_path,
        episode_concurrency=1,
        episode_attempt_budget=50,
        episode_tokens=5000,
        episode_max_full_tokens=90_000,
        llm_retry_budget=1,
        summary_error_retry_hours=2.0,
    )
    episodes = PassSettings.from_settings(settings).episodes  # what the pass hands its long path
    run = session_long_path(
        FakeStore(), None, "s1", SummaryState.missing(), ScriptedModel(), None, None, episodes
    )
    assert run([]).body == "Body."
    assert (seen[0].episode_tokens, seen[0].max_full_tokens) == (5000, 90_000)
    assert seen[0].retries == 0  # MEMOIR_LLM_RETRY_BUDGET=1: one attempt, as `summarize`
    assert seen[0].cache_ttl_s == 3 * 3600.0  # past the 2-hour retry floor
