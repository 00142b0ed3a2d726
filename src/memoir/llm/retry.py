"""Retries with jittered exponential backoff, for RateLimited and Transient only.

The SDKs' own retries are disabled; this is the one retry loop. ``attempts`` is the
caller's budget (total calls, the first included). A provider's ``retry_after`` is honoured
(never waited less than it asked); one longer than ``max_wait_s`` ends the loop at once —
a caller with a budget is better served by the error than by a minutes-long sleep.
Every other error (Truncated, Refused, AuthError, …) surfaces on the first attempt.

``sleep`` and ``rand`` are injectable so tests run without waiting.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from memoir.llm.errors import ModelError, RateLimited
from memoir.llm.port import Model
from memoir.llm.values import Completion, ModelRequest

__all__ = ["RetryPolicy", "Retrying", "backoff_delay", "call_with_retries"]

log = logging.getLogger(__name__)
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    attempts: int = 3
    base_s: float = 1.0
    cap_s: float = 30.0
    max_wait_s: float = 60.0

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError("attempts must be >= 1")


def backoff_delay(
    retry: int, policy: RetryPolicy, *, retry_after: float | None = None, rand: float = 1.0
) -> float | None:
    """Seconds to wait before retry number ``retry`` (1 = the first retry), or None when
    waiting is not worth it. "Full jitter": uniform in [0, min(cap, base·2^(retry-1))],
    ``rand`` in [0, 1]; a provider's retry_after is a floor."""
    ceiling = min(policy.cap_s, policy.base_s * (2 ** (retry - 1)))
    delay = ceiling * min(1.0, max(0.0, rand))
    if retry_after is not None:
        if retry_after > policy.max_wait_s:
            return None
        delay = max(delay, retry_after)
    return delay


def call_with_retries(
    fn: Callable[[], T],
    policy: RetryPolicy,
    *,
    sleep: Callable[[float], None] = time.sleep,
    rand: Callable[[], float] = random.random,
) -> T:
    """Call ``fn`` up to ``policy.attempts`` times, retrying retryable ModelErrors."""
    for attempt in range(1, policy.attempts + 1):
        try:
            return fn()
        except ModelError as exc:
            if not exc.retryable or attempt == policy.attempts:
                raise
            retry_after = exc.retry_after if isinstance(exc, RateLimited) else None
            delay = backoff_delay(attempt, policy, retry_after=retry_after, rand=rand())
            if delay is None:
                raise
            log.info(
                "model call failed (%s), retry %d/%d in %.1fs",
                type(exc).__name__,
                attempt,
                policy.attempts - 1,
                delay,
            )
            sleep(delay)
    raise AssertionError("unreachable")  # pragma: no cover


class Retrying:
    """A Model that retries another one under a policy. Same ``name`` as the inner."""

    def __init__(
        self,
        inner: Model,
        policy: RetryPolicy | None = None,
        *,
        sleep: Callable[[float], None] = time.sleep,
        rand: Callable[[], float] = random.random,
    ) -> None:
        self.inner = inner
        self.name = inner.name
        self.policy = policy or RetryPolicy()
        self._sleep = sleep
        self._rand = rand

    def close(self) -> None:
        """Close the wrapped model when it holds connections."""
        close = getattr(self.inner, "close", None)
        if callable(close):
            close()

    def complete(self, request: ModelRequest) -> Completion:
        return call_with_retries(
            lambda: self.inner.complete(request), self.policy, sleep=self._sleep, rand=self._rand
        )
