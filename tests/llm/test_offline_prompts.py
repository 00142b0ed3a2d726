"""The offline model answers the codebase's own requests (their tasks) in the shapes
their parsers accept (episodes, halves, merge) and writes compaction summaries the
compaction validator accepts."""

from __future__ import annotations

from pathlib import Path

import pytest

from memoir.compaction.offline import CompactionTask
from memoir.llm import OfflineModel
from memoir.llm.port import RequestMeta

from .test_offline import CONVERSATION, render_claude

episodes_prompts = pytest.importorskip("memoir.summaries.calls")
episodes_shape = pytest.importorskip("memoir.summaries.offline")

MODEL = OfflineModel()
META = RequestMeta(user="u", session="s")


@pytest.fixture(params=["synthetic", "tiny", "short"])
def transcript(request: pytest.FixtureRequest, claude_fixtures: Path) -> str:
    if request.param == "synthetic":
        return CONVERSATION
    return render_claude(claude_fixtures / f"{request.param}-conversation.jsonl")


def test_episode_half_and_merge_parse(transcript: str) -> None:
    episode = episodes_shape.parse_summary(
        MODEL.complete(episodes_prompts.episode_request(transcript, META)).text
    )
    assert episode["narrative"] and len(episode["keywords"]) <= 6
    half = episodes_shape.parse_summary(
        MODEL.complete(episodes_prompts.half_request(transcript, META)).text
    )
    assert half["narrative"] and len(half["keywords"]) <= 4
    merged = episodes_shape.parse_summary(
        MODEL.complete(
            episodes_prompts.merge_request([episode, half], "An earlier summary.", META)
        ).text
    )
    assert merged["narrative"].startswith("An earlier summary.")
    assert episodes_shape.render_summary(merged).strip()


def test_compaction_summary_passes_validation(transcript: str) -> None:
    validation = pytest.importorskip("memoir.compaction.request")
    request_mod = pytest.importorskip("memoir.compaction.request")
    from memoir.llm.port import ChatMessage, ModelRequest, Purpose

    system = getattr(request_mod, "SUMMARY_SYSTEM", "Summarize.")
    for budget in (64, 256, 1024):
        request = ModelRequest(
            messages=(ChatMessage("user", f"<transcript>\n{transcript}\n</transcript>"),),
            max_tokens=budget,
            system=system,
            meta=RequestMeta(purpose=Purpose.COMPACTION),
            task=CompactionTask(transcript),
        )
        completion = MODEL.complete(request)
        assert validation.summary_problem(completion.text, completion.extra) is None
        assert completion.usage.output_tokens <= budget
