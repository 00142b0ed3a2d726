"""The one attempt budget of a run, shared by every call (episodes, halves, fallbacks,
merge, retries). Thread-safe; a cache hit costs nothing."""

from __future__ import annotations

import threading

from memoir.errors import BudgetExhausted, ConfigError

__all__ = ["AttemptBudget"]


class AttemptBudget:
    def __init__(self, total: int) -> None:
        if total <= 0:
            raise ConfigError("the attempt budget must be positive")
        self.total = total
        self._used = 0
        self._lock = threading.Lock()

    @property
    def used(self) -> int:
        with self._lock:
            return self._used

    @property
    def left(self) -> int:
        with self._lock:
            return self.total - self._used

    def take(self, what: str) -> None:
        """Spend one attempt on ``what`` or raise :class:`BudgetExhausted`."""
        with self._lock:
            if self._used >= self.total:
                raise BudgetExhausted(
                    f"the run's attempt budget of {self.total} calls was used up before {what}; "
                    "run it again (finished episodes are reused from the cache) or raise "
                    "MEMOIR_EPISODE_ATTEMPT_BUDGET"
                )
            self._used += 1
