"""Request bodies. Unknown fields are refused (422), so a typo is never silently ignored;
values are read strictly, as their schema says (``0`` is not ``false``, ``"5"`` not 5; a
whole number is an integer, ``5.0`` as well as ``5``, as JSON Schema counts them)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from annotated_types import Ge
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from memoir.ingest.records import parse_ts
from memoir.server.routing import LAST_EPOCH_MS, STAMP

__all__ = [
    "CompactBody",
    "EventsBody",
    "Message",
    "NewSession",
    "RememberBody",
    "stores_something",
]

# no ":": an exchange id is SESSION:N, so a session id holding one could be read as
# another session's exchange (`memoir show`, the MCP `read` tool)
_ID = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$"


def _whole(value: object) -> object:
    """A JSON integer: an int, or a float with no fraction (JSON Schema's rule); not a
    bool, not a string. Anything else is left for the strict check to refuse."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**63:
        return int(value)
    return value


Whole = Annotated[int, BeforeValidator(_whole)]


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


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


_TEXT_TYPES = ("text", "input_text", "output_text")
_TEXT_PART = {
    "anyOf": [
        {"type": "string", "minLength": 1},
        {
            "type": "object",
            "required": ["type", "text"],
            "properties": {"type": {"enum": list(_TEXT_TYPES)}, "text": {"not": {"const": ""}}},
        },
    ]
}
_OTHER_PART = {
    "type": "object",
    "not": {"required": ["type"], "properties": {"type": {"enum": list(_TEXT_TYPES)}}},
}
_HAS_TEXT = {
    "required": ["content"],
    "properties": {
        "content": {
            "anyOf": [
                {"type": "string", "minLength": 1},
                {"type": "array", "contains": _TEXT_PART},
            ]
        }
    },
}
_HAS_PART = {
    "required": ["content"],
    "properties": {"content": {"type": "array", "contains": _OTHER_PART}},
}
_HAS_CALL = {
    "required": ["tool_calls"],
    "properties": {"tool_calls": {"type": "array", "minItems": 1}},
}
# what a message must hold to be stored, by role (the schema's words for _stores_something)
_SOMETHING: dict[str, Any] = {
    "anyOf": [
        {"properties": {"role": {"enum": ["tool", "function"]}}},
        {"properties": {"role": {"const": "user"}}, "anyOf": [_HAS_TEXT, _HAS_PART]},
        {"properties": {"role": {"const": "assistant"}}, "anyOf": [_HAS_TEXT, _HAS_CALL]},
        {"properties": {"role": {"enum": ["system", "developer"]}}, **_HAS_TEXT},
    ]
}


def _is_text_part(part: object) -> bool:
    return isinstance(part, dict) and part.get("type") in _TEXT_TYPES


def _has_text(content: object) -> bool:
    if isinstance(content, str):
        return content != ""
    if not isinstance(content, list):
        return False
    return any(
        (isinstance(p, str) and p != "") or (_is_text_part(p) and p.get("text", "") != "")
        for p in content
    )


def stores_something(role: str, content: object, tool_calls: object) -> bool:
    """Does a message of ``role`` with this content and these tool calls make an event?
    (Tool results always do; a user's non-text part does; an assistant's tool call does.)
    The schema states the same rule (``_SOMETHING``). Pure."""
    if role in ("tool", "function"):
        return True
    if _has_text(content):
        return True
    if role == "user":
        return isinstance(content, list) and any(
            isinstance(p, dict) and not _is_text_part(p) for p in content
        )
    return role == "assistant" and isinstance(tool_calls, list) and len(tool_calls) > 0


class Message(_Body):
    """An OpenAI-style chat message, with your own ``id`` for it (a retried batch stores a
    message of a known id nothing twice). It must hold something to store: text, a part
    (a user's image or file) or a tool call (an assistant's); a tool result always does."""

    model_config = ConfigDict(json_schema_extra=_SOMETHING)

    role: Literal["user", "assistant", "tool", "function", "system", "developer"]
    content: str | list[dict[str, Any] | str] | None = None
    id: str | None = Field(default=None, min_length=1, max_length=200)
    name: str | None = Field(default=None, max_length=200)
    tool_calls: list[dict[str, Any]] | None = None
    tool_call_id: str | None = Field(default=None, max_length=200)
    timestamp: (
        Annotated[str, Field(pattern=STAMP)]
        | Annotated[float, Field(gt=0, le=LAST_EPOCH_MS)]
        | None
    ) = Field(
        default=None,
        description="When it was said: an ISO-8601 date or time (UTC unless it says), or "
        "epoch seconds or milliseconds.",
    )

    @model_validator(mode="after")
    def _something(self) -> Message:
        if not stores_something(self.role, self.content, self.tool_calls):
            raise PydanticCustomError(
                "no_content",
                "a {role} message with nothing to store: send text, content parts or tool calls",
                {"role": self.role},
            )
        return self

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
    window: Whole = Field(gt=0, le=10_000_000, description="The model's context window, tokens.")
    messages: list[dict[str, Any]] | None = Field(
        default=None, description="The context to compact (default: the session's events)."
    )


class RememberBody(_Body):
    turn: Annotated[int, Ge(1), BeforeValidator(_whole)] | None = Field(
        default=None,
        description="The event ordinal of one of its user messages (default: the last); "
        "404 for another event.",
    )
