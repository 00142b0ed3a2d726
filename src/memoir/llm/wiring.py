"""How the configured model is wrapped for use:
``Retrying(Redacting(Metered(model, store)))``.

Every model is redacted unless ``MEMOIR_REDACT=off`` (``Settings.redact``): secrets never
reach a provider, and each ledger row counts them. The offline model is redacted too:
what it writes (summaries, episodes, compaction summaries, memory items) is derived text,
and derived text carries placeholders, never a credential (issue 41).

Metering sits inside the retry loop so that every attempt the provider saw (and may have
billed) is one ledger row. The offline model is metered too (its rows say ``offline``)
but never retried: it has no transient failures.
"""

from __future__ import annotations

from memoir.config import Settings
from memoir.llm.factory import fallback_from_settings, model_from_settings
from memoir.llm.ledger import Metered
from memoir.llm.port import Model, UsageSink
from memoir.llm.redacting import Redacting
from memoir.llm.retry import Retrying, RetryPolicy

__all__ = ["wrap", "wrapped_fallback", "wrapped_model"]


def wrap(model: Model, sink: UsageSink, settings: Settings) -> Model:
    """Meter every call of ``model`` into ``sink``; retry within the settings' budget."""
    metered: Model = Metered(model, sink)
    if settings.redact == "on":
        metered = Redacting(metered)
    if model.name == "offline":
        return metered
    return Retrying(metered, RetryPolicy(attempts=max(1, settings.llm_retry_budget)))


def wrapped_model(settings: Settings, sink: UsageSink) -> Model:
    return wrap(model_from_settings(settings), sink, settings)


def wrapped_fallback(settings: Settings, sink: UsageSink) -> Model | None:
    fallback = fallback_from_settings(settings)
    return None if fallback is None else wrap(fallback, sink, settings)
