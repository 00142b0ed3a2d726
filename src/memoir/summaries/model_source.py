"""Where the summaries engine gets its models: asked for only once a model call is due.

A home with nothing to summarize never needs a usable model, so a missing key or a bad
``MEMOIR_LLM`` surfaces where a summary is about to be written (after the read-only check,
the session's claim and its lookup), never as a failure charged to a conversation. The
composition root hands in its own factories (``ModelSource(memoir.model,
memoir.fallback_model)``); a caller that has its models at hand uses :meth:`ModelSource.of`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from memoir.llm.port import Model

__all__ = ["ModelSource"]


def _no_fallback() -> Model | None:
    return None


@dataclass(frozen=True, slots=True)
class ModelSource:
    """The model a summary is written with, and the refusal fallback (None: none)."""

    model: Callable[[], Model]
    fallback: Callable[[], Model | None] = _no_fallback

    @classmethod
    def of(cls, model: Model, fallback: Model | None = None) -> ModelSource:
        """Models already built (tests, a caller that resolved them itself)."""
        return cls(lambda: model, lambda: fallback)
