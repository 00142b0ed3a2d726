"""The one model interface: values, errors, providers, token counting, usage ledger.

Modules: ``values`` (requests, completions), ``errors`` (the failure tree), ``port``
(Model / TokenCounter / UsageSink protocols), ``mapping`` (provider answers → errors),
``openai_provider`` / ``anthropic_provider`` / ``offline`` / ``scripted`` (models),
``retry`` (backoff), ``ledger`` (usage records), ``tokens`` (exact counts), ``factory`` and
``wiring`` (models from settings). Providers are imported from their modules so that
importing this package stays cheap.
"""

from memoir.llm.errors import (
    AuthError,
    BadResponse,
    ContextTooLong,
    EmptyResponse,
    Forbidden,
    ModelError,
    OutOfCredit,
    OutputBudgetRejected,
    RateLimited,
    Refused,
    Transient,
    Truncated,
    Unauthorized,
)
from memoir.llm.port import Model, TokenCounter, UsageRecord, UsageSink
from memoir.llm.scripted import ScriptedModel
from memoir.llm.values import (
    ChatMessage,
    Completion,
    ModelRequest,
    Purpose,
    RequestMeta,
    StopReason,
    Usage,
)

__all__ = [
    "AuthError",
    "BadResponse",
    "ChatMessage",
    "Completion",
    "ContextTooLong",
    "EmptyResponse",
    "Forbidden",
    "Model",
    "ModelError",
    "ModelRequest",
    "OutOfCredit",
    "OutputBudgetRejected",
    "Purpose",
    "RateLimited",
    "Refused",
    "RequestMeta",
    "ScriptedModel",
    "StopReason",
    "TokenCounter",
    "Transient",
    "Truncated",
    "Unauthorized",
    "Usage",
    "UsageRecord",
    "UsageSink",
]
