"""The one model interface: values, errors, providers, token counting, usage ledger.

Modules: ``port`` (requests, completions, the failure tree, the Model / TokenCounter /
UsageSink protocols, the usage ledger), ``mapping`` (provider answers → errors),
``sdk_providers`` (OpenAI, Anthropic) / ``agent_cli`` and ``agent_providers`` (Claude Code,
Codex) / ``offline`` (the offline and scripted models, exact token counts) (models),
``wiring`` (models from settings, retry, redaction, metering), ``transcript``,
``offline_summary`` and ``offline_prose`` (the offline strategies). Providers are imported
from their modules so that importing this package stays cheap.
"""

from memoir.llm.offline import ScriptedModel
from memoir.llm.port import (
    AuthError,
    BadResponse,
    ChatMessage,
    Completion,
    ContextTooLong,
    EmptyResponse,
    Forbidden,
    Model,
    ModelError,
    ModelRequest,
    OutOfCredit,
    OutputBudgetRejected,
    Purpose,
    RateLimited,
    Refused,
    RequestMeta,
    StopReason,
    TokenCounter,
    Transient,
    Truncated,
    Unauthorized,
    Usage,
    UsageRecord,
    UsageSink,
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
