"""Model failures, mapped at the provider boundary into one tree.

::

    memoir.errors.MemoirError
    └── ModelError                 every failed model call; .provider, .model, .request_id
        ├── Truncated              stopped at max_tokens; .partial holds the text. Never
        │                          returned as a success.
        ├── Refused                content policy / Terms-of-Service rejection: a
        │                          refusal stop reason, finish_reason "content_filter",
        │                          or a moderation error body ("was flagged"), whatever
        │                          the HTTP status. The only error that selects a fallback.
        ├── AuthError              never retried, never a reason to switch model
        │   ├── Unauthorized       401 / bad or missing key
        │   ├── Forbidden          403 without a moderation body (permissions)
        │   ├── OutOfCredit        402 / insufficient credit or quota
        │   └── UnknownModel       404: no such model (or no such endpoint: a base URL
        │                          that is wrong) — the setting's problem, not the input's
        ├── RateLimited            429; .retry_after seconds when the provider said so
        ├── Transient              5xx, timeouts, connection errors
        ├── EmptyResponse          success status with no content
        ├── ContextTooLong         the provider rejected the input size
        ├── OutputBudgetRejected   the provider rejected max_tokens (the compaction ladder
        │                          steps down on this)
        └── BadResponse            the provider answered something unparseable

RateLimited and Transient are retried with jittered backoff inside a caller-given budget
(memoir.llm.retry); everything else surfaces at once. ``usage`` carries the tokens the
provider reported for a failed call when it reported any (a Truncated call was billed).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memoir.errors import MemoirError

if TYPE_CHECKING:
    from memoir.llm.values import Usage

__all__ = [
    "AuthError",
    "BadResponse",
    "ContextTooLong",
    "EmptyResponse",
    "Forbidden",
    "ModelError",
    "OutOfCredit",
    "OutputBudgetRejected",
    "RateLimited",
    "Refused",
    "Transient",
    "Truncated",
    "Unauthorized",
    "UnknownModel",
]


class ModelError(MemoirError):
    """A model call failed. ``retryable`` says whether backoff may help."""

    retryable = False

    def __init__(
        self,
        message: str,
        *,
        provider: str | None = None,
        model: str | None = None,
        request_id: str | None = None,
        status: int | None = None,
        usage: Usage | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.usage = usage
        self.provider = provider
        self.model = model
        self.request_id = request_id
        self.status = status


class Truncated(ModelError):
    def __init__(self, message: str, *, partial: str = "", **kw: object) -> None:
        super().__init__(message, **kw)  # type: ignore[arg-type]
        self.partial = partial


class Refused(ModelError):
    pass


class AuthError(ModelError):
    pass


class Unauthorized(AuthError):
    pass


class Forbidden(AuthError):
    pass


class OutOfCredit(AuthError):
    pass


class UnknownModel(AuthError):
    pass


class RateLimited(ModelError):
    retryable = True

    def __init__(self, message: str, *, retry_after: float | None = None, **kw: object) -> None:
        super().__init__(message, **kw)  # type: ignore[arg-type]
        self.retry_after = retry_after


class Transient(ModelError):
    retryable = True


class EmptyResponse(ModelError):
    pass


class ContextTooLong(ModelError):
    pass


class OutputBudgetRejected(ModelError):
    pass


class BadResponse(ModelError):
    pass
