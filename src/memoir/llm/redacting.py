"""The one redaction step at the model boundary.

:class:`Redacting` wraps a Model and replaces every secret in a request's system prompt and
messages (:func:`memoir.secrets.redact`: detect-secrets' plugins, a stable placeholder per
kind) before the inner model — and so the provider — sees it. Summaries, episodes,
compaction and memory extraction all reach a provider through ``Model.complete``, so this
is the one place it happens. The number of secrets replaced rides on the request
(``RequestMeta.redacted``) to the ledger inside; the secrets themselves are never logged.
"""

from __future__ import annotations

from dataclasses import replace

from memoir.llm.port import Model
from memoir.llm.values import ChatMessage, Completion, ModelRequest
from memoir.secrets import redact

__all__ = ["Redacting", "redact_request"]


def redact_request(request: ModelRequest) -> ModelRequest:
    """``request`` with its system prompt and every message redacted, the count on its meta."""
    total = 0
    system = request.system
    if system:
        done = redact(system)
        system, total = done.text, done.total
    messages: list[ChatMessage] = []
    for message in request.messages:
        done = redact(message.content)
        total += done.total
        messages.append(message if not done.total else replace(message, content=done.text))
    if not total:
        return request
    meta = replace(request.meta, redacted=request.meta.redacted + total)
    return replace(request, system=system, messages=tuple(messages), meta=meta)


class Redacting:
    """A Model that redacts every request before ``inner`` sees it."""

    def __init__(self, inner: Model) -> None:
        self.inner = inner
        self.name = inner.name

    def close(self) -> None:
        close = getattr(self.inner, "close", None)
        if callable(close):
            close()

    def complete(self, request: ModelRequest) -> Completion:
        return self.inner.complete(redact_request(request))
