"""What a tool's output says of how it ended: the last exit status it states and its last
error lines. Pure; the one reading compaction's stand-ins and the offline work summary
share."""

from __future__ import annotations

import re
from collections.abc import Callable

__all__ = ["ERROR_LINE", "EXIT_STATUS", "tool_outcome"]

EXIT_STATUS = re.compile(
    r"\b(?:exit(?:ed)?(?:[ _]with)?[ _](?:code|status)|exit_?code|return_?code|returncode"
    r"|status code|process exited with code)\b[\s:=]*(-?\d{1,4})\b",
    re.IGNORECASE,
)
ERROR_LINE = re.compile(
    r"\b(?:error|errors|exception|traceback|failed|failure|failing|fatal|panic|denied"
    r"|not found|no such file|cannot|can't|could not|unable to|refused|timed out)\b"
    r"|(?-i:[a-z](?:Error|Exception)\b)",  # ModuleNotFoundError, NullPointerException
    re.IGNORECASE,
)
_SCAN_CHARS = 20_000  # the tail an exit status is looked for in
_SCAN_LINES = 4_000  # the tail error lines are looked for in


def _collapsed(line: str) -> str:
    return " ".join(line.split())


def tool_outcome(
    text: str,
    *,
    most: int = 2,
    clean: Callable[[str], str | None] = lambda line: line,
    show: Callable[[str], str] = _collapsed,
) -> tuple[str | None, tuple[str, ...]]:
    """The last exit status stated in ``text`` (None: none) and its last ``most`` distinct
    error lines, in order. ``clean`` turns a stripped line into the text to judge (None:
    skip it); ``show`` into the text kept (whitespace collapsed by default)."""
    statuses = EXIT_STATUS.findall(text[-_SCAN_CHARS:])
    errors: list[str] = []
    for line in reversed(text.splitlines()[-_SCAN_LINES:]):
        if len(errors) >= most:
            break
        candidate = clean(line.strip())
        if candidate is None or len(candidate) < 4 or not ERROR_LINE.search(candidate):
            continue
        shown = show(candidate)
        if shown not in errors:
            errors.append(shown)
    return (statuses[-1] if statuses else None), tuple(reversed(errors))
