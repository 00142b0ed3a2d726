"""Where the summaries engine gets its models: asked for only once a model call is due.

A home with nothing to summarize never needs a usable model, so a missing key or a bad
``MEMOIR_LLM`` surfaces where a summary is about to be written (after the read-only check,
the session's claim and its lookup), never as a failure charged to a conversation. The
composition root hands in its own factories (``ModelSource(memoir.model,
memoir.fallback_model)``); a caller that has its models at hand uses :meth:`ModelSource.of`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from memoir.llm.port import Model
from memoir.llm.transcript import SentenceScorer

__all__ = ["ModelSource", "closing_source"]


def _no_fallback() -> Model | None:
    return None


def _no_scorer() -> SentenceScorer | None:
    return None


@dataclass(frozen=True, slots=True)
class ModelSource:
    """The model a summary is written with, the refusal fallback (None: none) and the
    sentence scorer an offline summary ranks by (None: lexically)."""

    model: Callable[[], Model]
    fallback: Callable[[], Model | None] = _no_fallback
    scorer: Callable[[], SentenceScorer | None] = _no_scorer

    @classmethod
    def of(cls, model: Model, fallback: Model | None = None) -> ModelSource:
        """Models already built (tests, a caller that resolved them itself)."""
        return cls(lambda: model, lambda: fallback)


@contextmanager
def closing_source(
    model: Callable[[], Model],
    fallback: Callable[[], Model | None] = _no_fallback,
    scorer: Callable[[], SentenceScorer | None] = _no_scorer,
) -> Iterator[ModelSource]:
    """A :class:`ModelSource` over these factories whose models, those it built, are
    closed when the block ends (a remote model holds an HTTP client's connections)."""
    built: list[Model] = []

    def kept(factory: Callable[[], Model | None]) -> Model | None:
        made = factory()
        if made is not None:
            built.append(made)
        return made

    def first() -> Model:
        made = model()
        built.append(made)
        return made

    try:
        yield ModelSource(first, lambda: kept(fallback), scorer)
    finally:
        for made in built:
            close = getattr(made, "close", None)
            if callable(close):
                close()
