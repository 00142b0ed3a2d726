"""How the CLI says that something went wrong: one line on stderr, or under ``--json`` one
JSON object, ``{"error": {"code": …, "message": …}}``, with the same exit status.

A bad value given to a flag reads as a plain sentence naming the flag (``--limit must be 1
or more``), whatever phrasing the argument parser (typer, which checks values with
pydantic) produced. The decisions are pure functions, tested with tables
(``tests/cli/test_failures.py``).
"""

from __future__ import annotations

import json
import re
from typing import Any

from memoir.errors import ConfigError, MemoirError

__all__ = [
    "error_code",
    "error_document",
    "exit_status",
    "plain_reason",
    "usage_message",
    "wants_json",
]


def wants_json(argv: list[str]) -> bool:
    """``--json`` among the options (not after ``--``, where it would be a query word)."""
    head = argv[: argv.index("--")] if "--" in argv else argv
    return "--json" in head


def error_code(exc: BaseException) -> str:
    """A stable, machine-readable name for an error: the class name in snake case without
    a trailing ``_error`` (``NotFound`` → ``not_found``, ``ConfigError`` → ``config``); a
    command-line usage error is ``usage``; anything not Memoir's own is ``internal``."""
    if isinstance(exc, MemoirError):
        name = type(exc).__name__
        snake = re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()
        return snake.removesuffix("_error") or "memoir"
    if _is_usage(exc):
        return "usage"
    return "internal"


def exit_status(exc: BaseException) -> int:
    """2 for a bad setting or argument, 1 for any other error."""
    if isinstance(exc, ConfigError) or (not isinstance(exc, MemoirError) and _is_usage(exc)):
        return 2
    return 1


def error_document(code: str, message: str) -> str:
    """The JSON an error is under ``--json``: one line, ending in a newline."""
    return json.dumps({"error": {"code": code, "message": message}}, ensure_ascii=False) + "\n"


def _is_usage(exc: BaseException) -> bool:
    """The argument parser's usage errors (typer vendors click: matched by shape)."""
    return hasattr(exc, "format_message") and getattr(exc, "exit_code", None) == 2


_REASONS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern, re.DOTALL), replacement)
    for pattern, replacement in (
        (r"Input should be greater than or equal to (\S+?)\.?$", r"must be \1 or more"),
        (r"Input should be greater than (\S+?)\.?$", r"must be more than \1"),
        (r"Input should be less than or equal to (\S+?)\.?$", r"must be \1 or less"),
        (r"Input should be less than (\S+?)\.?$", r"must be less than \1"),
        (r"Input should be a valid integer.*", "must be a whole number"),
        (r"Input should be a valid number.*", "must be a number"),
        (r"Input should be a valid boolean.*", "must be true or false"),
        (r"Input should be a valid (date|datetime).*", r"must be a \1"),
    )
)
_NOT_ONE_OF = re.compile(r"^(?P<value>'.*?'|\S+) is not one of (?P<choices>.+?)\.?$", re.DOTALL)


def plain_reason(message: str, value: str | None = None) -> str:
    """What was wrong with a flag's value, as the end of a sentence that starts with the
    flag's name: ``must be 1 or more``, ``must be one of text, vector, hybrid, not 'foo'``.
    ``value``: what the user typed, when known, added where the reason does not say it.
    A reason in no known phrasing is kept (without pydantic's ``Value error, ``). Pure."""
    text = message.strip().removeprefix("Value error, ")
    found = _NOT_ONE_OF.match(text)
    if found:
        choices = ", ".join(c.strip().strip("'\"") for c in found["choices"].split(","))
        return f"must be one of {choices}, not {found['value']}"
    for pattern, replacement in _REASONS:
        if pattern.fullmatch(text):
            plain = pattern.sub(replacement, text)
            return plain if value is None else f"{plain}, not {value!r}"
    return text[:1].lower() + text[1:] if text[:1].isupper() and text[1:2].islower() else text


def _flag_name(exc: Any) -> str | None:
    hint = getattr(exc, "param_hint", None)
    if isinstance(hint, str):
        return hint.strip("'\"")
    if isinstance(hint, (list, tuple)) and hint:
        return str(hint[0]).strip("'\"")
    param = getattr(exc, "param", None)
    if param is None:
        return None
    opts = [o for o in getattr(param, "opts", []) if isinstance(o, str)]
    if getattr(param, "param_type_name", "") == "argument" or not opts:
        return str(getattr(param, "name", "") or "").upper() or None
    return next((o for o in opts if o.startswith("--")), opts[0])


def usage_message(exc: Any, argv: list[str] | None = None) -> str:
    """One sentence for a usage error of the argument parser: a bad value names the flag
    and says what it must be (``--limit must be 1 or more, not '0'``); any other (an
    unknown option, a missing argument) keeps the parser's own words, without its
    ``Error:`` box."""
    name = type(exc).__name__
    if name == "BadParameter" or (name != "MissingParameter" and getattr(exc, "param", None)):
        flag = _flag_name(exc)
        reason = str(getattr(exc, "message", "") or exc)
        param = getattr(exc, "param", None)
        opts = [*getattr(param, "opts", []), *getattr(param, "secondary_opts", [])]
        value = _value_given([o for o in opts if isinstance(o, str)], argv or [])
        if flag:
            return f"{flag} {plain_reason(reason, value)}"
    text: str = exc.format_message()
    return text.replace("Invalid value: ", "")


def _value_given(opts: list[str], argv: list[str]) -> str | None:
    """The value typed after one of a flag's names (``--limit 0``, ``-n 0``,
    ``--limit=0``), the last one given; None when there is none. Pure."""
    found = None
    for i, arg in enumerate(argv):
        if arg == "--":
            break
        if arg in opts and arg.startswith("-") and i + 1 < len(argv):
            found = argv[i + 1]
        elif "=" in arg and arg.split("=", 1)[0] in opts:
            found = arg.split("=", 1)[1]
    return found
