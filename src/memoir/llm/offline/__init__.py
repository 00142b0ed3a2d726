"""The embedded default model: no network, deterministic, fast.

It reads the material of the prompt (``<transcript>…</transcript>``, else the last user
message; see :mod:`memoir.llm.offline.text`) and answers by ``request.meta.purpose``:

- SUMMARY, COMPACTION, OTHER (no JSON): the prose summary (:mod:`.prose`) — first the
  goal the user stated and how it ended, then the most central sentences in order, the
  files and commands the agent touched and what remains — the conversation's own
  sentences within ``max_tokens``. (:func:`.summary.text_summary`, the keyword-led
  summary of summary format 1, stays callable: the summaries bench's baseline.)
- COMPACTION that gives the headings it wants (``<summary_format>``, as the compaction
  engine's request does): the summary of the work (:mod:`.work`) — goals and
  constraints, decisions, files touched, commands run and their outcomes, open errors,
  key facts, the last state — merged with ``<previous_summary>`` item by item.
- EPISODE, FALLBACK (and any other purpose with ``json=True``): the episode JSON object;
  HALF: the compact half object; MERGE: combines ``<previous_summary>`` and
  ``<episodes>``; EXTRACTION: ``{"items": [...]}`` with exact user-text evidence.

Output never exceeds ``max_tokens`` (counted exactly): a JSON answer is shrunk item by
item; when even its smallest form does not fit, the call raises Truncated with the
partial text, as a real model cut at the same cutoff would. Completions say
``offline=True``.
"""

from __future__ import annotations

import json
import time
from typing import Any

from memoir.llm.errors import Truncated
from memoir.llm.offline.prose import prose_summary
from memoir.llm.offline.structured import (
    DROP_ORDER,
    episode_object,
    extraction_object,
    half_object,
    merge_object,
)
from memoir.llm.offline.text import material_of
from memoir.llm.offline.work import work_summary
from memoir.llm.tokens import TiktokenCounter, counter_for, request_tokens
from memoir.llm.values import Completion, ModelRequest, Purpose, StopReason, Usage

__all__ = ["OfflineModel"]

NAME = "offline"


class OfflineModel:
    """The offline provider. Stateless and thread-safe."""

    name = NAME

    def __init__(self) -> None:
        self._counter = counter_for("cl100k_base")
        self._raw = TiktokenCounter("cl100k_base")

    def complete(self, request: ModelRequest) -> Completion:
        started = time.monotonic()
        text = self._answer(request)
        usage = Usage(
            input_tokens=request_tokens(request, self._counter),
            output_tokens=self._raw.count(text),
        )
        return Completion(
            text=text,
            stop_reason=StopReason.END,
            usage=usage,
            model=NAME,
            provider=NAME,
            request_id=None,
            latency_ms=(time.monotonic() - started) * 1000.0,
            offline=True,
        )

    def _answer(self, request: ModelRequest) -> str:
        purpose = request.meta.purpose
        material = material_of(request)
        if purpose is Purpose.MERGE:
            obj = merge_object(
                material_of(request, "previous_summary"), material_of(request, "episodes")
            )
            return self._fit_json(obj, request)
        if purpose is Purpose.EXTRACTION:
            return self._fit_json(extraction_object(material), request)
        if purpose is Purpose.HALF:
            return self._fit_json(half_object(material), request)
        if request.json:  # EPISODE, FALLBACK and any other structured request
            return self._fit_json(episode_object(material), request)
        previous = material_of(request, "previous_summary")
        text = ""
        if purpose is Purpose.COMPACTION and material_of(request, "summary_format").strip():
            text = work_summary(material, request.max_tokens, self._raw.count, previous)
        if not text:
            text = prose_summary(material, request.max_tokens, self._raw.count, previous)
        if self._raw.count(text) > request.max_tokens:
            raise self._truncated(text, request)
        return text

    def _fit_json(self, obj: dict[str, Any], request: ModelRequest) -> str:
        """Shrink ``obj`` until it fits max_tokens; Truncated when even the skeleton
        does not."""
        limit = request.max_tokens
        text = _dumps(obj)
        while self._raw.count(text) > limit and _shrink(obj):
            text = _dumps(obj)
        if self._raw.count(text) > limit:
            raise self._truncated(text, request)
        return text

    def _truncated(self, text: str, request: ModelRequest) -> Truncated:
        tokens = self._raw.encode(text)[: max(0, request.max_tokens)]
        partial = self._raw.decode(tokens)
        return Truncated(
            f"offline answer needs more than max_tokens={request.max_tokens}",
            partial=partial,
            provider=NAME,
            model=NAME,
            usage=Usage(request_tokens(request, self._counter), len(tokens)),
        )


def _dumps(obj: dict[str, Any]) -> str:
    return json.dumps(obj, ensure_ascii=False)


def _shrink(obj: dict[str, Any]) -> bool:
    """Remove one piece of ``obj`` (least important first); False when nothing is left."""
    if obj.get("items"):
        obj["items"].pop()
        return True
    for name in DROP_ORDER:
        if obj.get(name):
            obj[name].pop()
            return True
    if obj.get("keywords"):
        obj["keywords"].pop()
        return True
    narrative = str(obj.get("narrative", ""))
    words = narrative.split()
    if len(words) > 1:
        obj["narrative"] = " ".join(words[: max(1, len(words) * 2 // 3)]).rstrip(".,;:") + "."
        return True
    return False
