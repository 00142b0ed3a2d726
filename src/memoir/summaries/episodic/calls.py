"""One request, carried through: budget, retries, the refusal fallback, parsing.

:class:`Caller` spends one attempt of the run's shared budget per model call. After a
failure it follows :func:`memoir.summaries.episodic.plan.next_action`: a transient failure (rate
limit, 5xx, empty or unusable answer) is retried on the same model; a refusal is sent once
to the fallback model (purpose FALLBACK); a truncated episode goes back to the caller to be
split; everything else ends the run with a :class:`SummaryError` whose one-line reason says
whether a fallback was actually attempted.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from memoir.errors import SummaryError
from memoir.llm import port as llm_errors
from memoir.llm.port import Completion, Model, ModelRequest
from memoir.summaries.episodic.budget import AttemptBudget
from memoir.summaries.episodic.plan import Action, next_action, retry_delay
from memoir.summaries.episodic.shape import UnusableAnswer, parse_summary

__all__ = ["Answer", "Caller", "Cancelled", "describe"]


class Cancelled(Exception):
    """Another part of the run failed; this one stops before its next call."""


@dataclass(frozen=True, slots=True)
class Answer:
    data: dict[str, Any]
    model: str  # the name of the model that produced it
    fallback: bool


def describe(exc: BaseException, limit: int = 200) -> str:
    """``Class: message`` on one line, clipped."""
    text = " ".join(str(exc).split()) or "no detail"
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return f"{type(exc).__name__}: {text}"


class Caller:
    def __init__(
        self,
        model: Model,
        fallback: Model | None,
        budget: AttemptBudget,
        *,
        retries: int = 2,
        backoff_s: float = 0.5,
        cancelled: threading.Event | None = None,
        sleep: Callable[[float], None] | None = None,
    ) -> None:
        self.model = model
        self.fallback = fallback
        self.budget = budget
        self.retries = retries
        self.backoff_s = backoff_s
        self.cancelled = cancelled or threading.Event()
        self._sleep = sleep or (lambda seconds: time.sleep(seconds))
        self._lock = threading.Lock()
        self.input_tokens = 0
        self.output_tokens = 0

    def ask(self, request: ModelRequest, label: str, *, can_split: bool) -> Answer:
        """The parsed answer to ``request``. Raises :class:`~memoir.llm.port.Truncated`
        only when ``can_split`` (the caller splits), else SummaryError / BudgetExhausted."""
        retry = 0
        while True:
            try:
                return Answer(self._once(self.model, request, label), self.model.name, False)
            except (llm_errors.ModelError, UnusableAnswer) as exc:
                action = next_action(exc, can_split=can_split)
                if action is Action.SPLIT:
                    raise
                if action is Action.FALLBACK:
                    return self._fallback(request, label, exc, can_split=can_split)
                after = exc.retry_after if isinstance(exc, llm_errors.RateLimited) else None
                wait = retry_delay(retry + 1, base=self.backoff_s, retry_after=after)
                if action is Action.RETRY and retry < self.retries and wait is not None:
                    retry += 1
                    self._sleep(wait)
                    continue
                raise self._failure(label, request, exc, tries=retry + 1) from exc

    def _once(self, model: Model, request: ModelRequest, label: str) -> dict[str, Any]:
        if self.cancelled.is_set():
            raise Cancelled(label)
        self.budget.take(label if model is self.model else f"{label} on the fallback")
        completion = model.complete(request)
        self._count(completion)
        return parse_summary(completion.text)

    def _count(self, completion: Completion) -> None:
        with self._lock:
            self.input_tokens += completion.usage.input_tokens
            self.output_tokens += completion.usage.output_tokens

    def _fallback(
        self, request: ModelRequest, label: str, refusal: BaseException, *, can_split: bool
    ) -> Answer:
        primary = self.model.name
        if self.fallback is None:
            raise SummaryError(
                f"{label}: {primary} refused the request ({describe(refusal)}); no fallback "
                "attempted because MEMOIR_LLM_FALLBACK is not set",
                fallback_attempted=False,
            ) from refusal
        fb = self.fallback  # the same request, purpose and all: its answer has that shape
        try:
            data = self._once(fb, request, label)
        except llm_errors.Truncated as exc:
            if can_split and exc.partial.strip():
                raise
            raise self._fallback_failed(label, fb.name, exc) from exc
        except (llm_errors.ModelError, UnusableAnswer) as exc:
            raise self._fallback_failed(label, fb.name, exc) from exc
        return Answer(data, fb.name, True)

    def _fallback_failed(self, label: str, fb: str, exc: BaseException) -> SummaryError:
        verb = "refused it too" if isinstance(exc, llm_errors.Refused) else "failed"
        return SummaryError(
            f"{label}: {self.model.name} refused the request; the fallback {fb} was attempted "
            f"once and {verb} ({describe(exc)})",
            fallback_attempted=True,
        )

    def _failure(
        self, label: str, request: ModelRequest, exc: BaseException, *, tries: int
    ) -> SummaryError:
        name = self.model.name
        if isinstance(exc, llm_errors.Truncated):
            what = "produced nothing before" if not exc.partial.strip() else "was cut off at"
            reason = (
                f"{label}: {name} {what} the {request.max_tokens}-token output cutoff; "
                "truncated output is never used and a part is split at most once "
                "(no fallback attempted)"
            )
        elif isinstance(exc, llm_errors.AuthError):
            reason = (
                f"{label}: {name} rejected the call ({describe(exc)}); no fallback attempted — "
                "authentication, permission and credit errors never switch model"
            )
        else:
            times = f" {tries} times" if tries > 1 else ""
            reason = (
                f"{label}: {name} failed{times} ({describe(exc)}); no fallback attempted "
                "(only refusals switch model)"
            )
        return SummaryError(reason, fallback_attempted=False)
