"""The one redaction step at the model boundary.

:class:`Redacting` wraps a Model and replaces every secret in a request's system prompt and
messages (:func:`memoir.secrets.redact`: detect-secrets' plugins, a stable placeholder per
kind) before the inner model — and so the provider — sees it. Summaries, episodes,
compaction and memory extraction all reach a provider through ``Model.complete``, so this
is the one place it happens. The number of secrets replaced rides on the request
(``RequestMeta.redacted``) to the ledger inside; the secrets themselves are never logged.
The offline model reads the request's task instead of its prompt, so the task's text is
redacted the same way (it holds the same text: the count is the prompt's).
"""

from __future__ import annotations

import dataclasses
from dataclasses import replace
from typing import Any

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
    task = _redacted(request.task)
    return replace(request, system=system, messages=tuple(messages), meta=meta, task=task)


def _redacted(value: Any) -> Any:
    """``value`` with every string inside it redacted: a str (not a str enum), and the
    items of a tuple, list or dict and the fields of a dataclass, recursively."""
    if type(value) is str:
        return redact(value).text
    if isinstance(value, tuple | list):
        return type(value)(_redacted(v) for v in value)
    if isinstance(value, dict):
        return {k: _redacted(v) for k, v in value.items()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {f.name: _redacted(getattr(value, f.name)) for f in dataclasses.fields(value)}
        return replace(value, **changes)
    return value


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
