"""The embedded default model: no network, deterministic, fast — and no prompt reader.

Every engine that can run offline puts its structured input on the request beside the
prompt (``ModelRequest.task``, an :class:`~memoir.llm.values.OfflineTask`): the transcript
and previous summary of a summary or a compaction, the episode objects of a merge, the
turns of a memory extraction. A provider model reads the prompt; this model reads only
the task and runs the engine's offline strategy on it (``task.answer``). The strategies
live beside their engines (``summaries/offline.py``, ``summaries/episodic/offline.py``,
``compaction/offline.py``, ``memory/offline_extractor.py``); this package holds what they
share: reading a transcript into turns and sentences (:mod:`.text`), ranking them
(:mod:`.rank`, :mod:`.analysis`) and the prose summary (:mod:`.prose`).

Output never exceeds ``max_tokens`` (counted exactly): when the task's answer does not
fit, the call raises Truncated with the partial text, as a real model cut at the same
cutoff would. A request without a task is a programming error (ValueError): the offline
model never guesses what a prompt asks. Completions say ``offline=True``.
"""

from __future__ import annotations

import time

from memoir.llm.errors import Truncated
from memoir.llm.tokens import TiktokenCounter, counter_for, request_tokens
from memoir.llm.values import Completion, ModelRequest, StopReason, Usage

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
        if request.task is None:
            raise ValueError(
                f"the offline model answers an engine's task; this {request.meta.purpose} "
                "request carries none (ModelRequest.task)"
            )
        text = request.task.answer(request.max_tokens, self._raw.count)
        if self._raw.count(text) > request.max_tokens:
            raise self._truncated(text, request)
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
