"""Request bodies. Unknown fields are refused (422), so a typo is never silently ignored."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic_core import PydanticCustomError

from memoir.ingest.records import parse_ts

__all__ = ["CompactBody", "EventsBody", "Message", "NewSession", "RememberBody"]

# no ":": an exchange id is SESSION:N, so a session id holding one could be read as
# another session's exchange (`memoir show`, the MCP `read` tool)
_ID = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$"


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class NewSession(_Body):
    id: str | None = Field(
        default=None,
        pattern=_ID,
        description="Your name for it (else Memoir chooses an id): letters, digits, `.`, `_` "
        "and `-`, at most 128 characters; no `:` (exchange ids are `SESSION:N`). Names are "
        "yours alone: the session is stored under an id derived from your user and the "
        "name, answered as `id`, and either works in every URL.",
    )
    project: str | None = Field(default=None, min_length=1, max_length=200)
    incognito: bool = False
    memory_disabled: bool = False

    @field_validator("id", mode="before")
    @classmethod
    def _no_colon(cls, value: object) -> object:
        # said plainly, before the pattern's "should match ^[A-Za-z0-9]…" would
        if isinstance(value, str) and ":" in value:
            raise PydanticCustomError(
                "session_id",
                "a session id may not contain ':' (exchange ids are SESSION:N, so "
                "'{value}' would read as an exchange of another session); use '-' or '.'",
                {"value": value[:140]},
            )
        return value


class Message(_Body):
    """An OpenAI-style chat message, with your own ``id`` for it (a retried batch stores a
    message of a known id nothing twice)."""

    role: Literal["user", "assistant", "tool", "function", "system", "developer"]
    content: str | list[dict[str, Any] | str] | None = None
    id: str | None = Field(default=None, min_length=1, max_length=200)
    name: str | None = Field(default=None, max_length=200)
    tool_calls: list[dict[str, Any]] | None = None
    tool_call_id: str | None = Field(default=None, max_length=200)
    timestamp: str | float | None = Field(
        default=None,
        description="When it was said: an ISO-8601 date or time (UTC unless it says), or "
        "epoch seconds or milliseconds.",
    )

    @field_validator("timestamp", mode="before")
    @classmethod
    def _a_time(cls, value: object) -> object:
        # the reader drops a time it cannot read (parse_ts → None): refused here instead
        if value is not None and parse_ts(value) is None:
            raise PydanticCustomError(
                "timestamp",
                "not a time: send an ISO-8601 date or time, or epoch seconds or "
                "milliseconds after 1970",
            )
        return value


class EventsBody(_Body):
    messages: list[Message] = Field(min_length=1, max_length=5000)


class CompactBody(_Body):
    window: int = Field(gt=0, le=10_000_000, description="The model's context window, tokens.")
    messages: list[dict[str, Any]] | None = Field(
        default=None, description="The context to compact (default: the session's events)."
    )


class RememberBody(_Body):
    turn: int | None = Field(default=None, ge=1)
