"""The ``<session-id>-summary.txt`` format, compatible with episodic-memory.

Real summary (first line is the coverage header, the rest is the body)::

    __COVERAGE__ {"bytes":8237,"lastExchange":"2025-09-19T17:36:33.487Z","schema":1}
    <body>

after a failed re-summary the header gains ``"resummary":{"attempts":N,"lastAttempt":<ms>}``.

Error sentinel (no real summary yet)::

    __ERRORED__
    {"attempts":2,"lastAttempt":1718040000000}
    <message>

The legacy episodic-memory v1.4.2 sentinel's second line is an ISO timestamp (read as
attempts 0, lastAttempt from it); any other second line reads as ``{0, 0}`` (retried, never
lost). An empty file is a permanent skip. A body without a header (or with a header whose
JSON is corrupt, which is stripped) is a legacy summary. Pure: strings in, strings out.
"""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from typing import Any

from memoir.summaries.state import Coverage, Failure, SummaryKind, SummaryState

__all__ = [
    "COVERAGE_PREFIX",
    "ERROR_MARKER",
    "format_error_sentinel",
    "format_summary_file",
    "parse_summary_file",
    "parse_summary_header",
]

COVERAGE_PREFIX = "__COVERAGE__ "
ERROR_MARKER = "__ERRORED__"
COVERAGE_SCHEMA = 1


def _int(value: Any) -> int | None:
    """A JSON number as a non-negative int (bools and non-finite values rejected)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return max(0, int(value))


def _failure(value: Any) -> Failure | None:
    if not isinstance(value, dict):
        return None
    return Failure(_int(value.get("attempts")) or 0, _int(value.get("lastAttempt")) or 0)


def parse_summary_header(line: str) -> tuple[Coverage, Failure | None] | None:
    """Coverage (and re-summary failure state) from a header line; None when corrupt."""
    if not line.startswith(COVERAGE_PREFIX):
        return None
    try:
        data = json.loads(line[len(COVERAGE_PREFIX) :])
    except ValueError:
        return None
    if not isinstance(data, dict) or (amount := _int(data.get("bytes"))) is None:
        return None
    last = data.get("lastExchange")
    schema = _int(data.get("schema"))
    coverage = Coverage(amount, last if isinstance(last, str) else None, schema or COVERAGE_SCHEMA)
    failure = _failure(data["resummary"]) if "resummary" in data else None
    if "resummary" in data and failure is None:
        failure = Failure(0, 0)  # unreadable failure state: retried, never lost
    return coverage, failure


def _parse_sentinel(content: str) -> SummaryState:
    rest = content[len(ERROR_MARKER) + 1 :] if content != ERROR_MARKER else ""
    second, _, message = rest.partition("\n")
    second = second.strip()
    message = message[:-1] if message.endswith("\n") else message
    failure = Failure(0, 0)
    if second.startswith("{"):
        try:
            failure = _failure(json.loads(second)) or Failure(0, 0)
        except ValueError:
            failure = Failure(0, 0)
    elif second:
        failure = Failure(0, _iso_to_ms(second) or 0)
    return SummaryState(SummaryKind.ERRORED, failure=failure, message=message)


def _iso_to_ms(text: str) -> int | None:
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)


def parse_summary_file(content: str | None) -> SummaryState:
    """The state of a summary file's content (None: the file does not exist)."""
    if content is None:
        return SummaryState.missing()
    if content == "":
        return SummaryState.empty()
    if content == ERROR_MARKER or content.startswith(ERROR_MARKER + "\n"):
        return _parse_sentinel(content)
    if not content.startswith(COVERAGE_PREFIX):
        return SummaryState(SummaryKind.LEGACY, body=content)
    header, _, body = content.partition("\n")
    parsed = parse_summary_header(header.rstrip("\r"))
    if parsed is None:  # corrupt header: stripped, never leaked into the body
        return SummaryState(SummaryKind.LEGACY, body=body)
    coverage, failure = parsed
    return SummaryState(SummaryKind.REAL, body=body, coverage=coverage, failure=failure)


def format_error_sentinel(failure: Failure, message: str) -> str:
    line = json.dumps(
        {"attempts": failure.attempts, "lastAttempt": failure.last_attempt_ms},
        separators=(",", ":"),
    )
    return f"{ERROR_MARKER}\n{line}\n{message}\n"


def format_summary_file(state: SummaryState) -> str:
    """Serialise a state as a file (``missing`` has no file and is rejected)."""
    if state.kind is SummaryKind.EMPTY:
        return ""
    if state.kind is SummaryKind.ERRORED:
        return format_error_sentinel(state.failure or Failure(), state.message or "")
    if state.kind is SummaryKind.LEGACY:
        return state.body
    if state.kind is SummaryKind.REAL:
        coverage = state.coverage or Coverage(0)
        header: dict[str, Any] = {"bytes": coverage.amount}
        if coverage.last_exchange is not None:
            header["lastExchange"] = coverage.last_exchange
        header["schema"] = coverage.schema
        if state.failure is not None:
            header["resummary"] = {
                "attempts": state.failure.attempts,
                "lastAttempt": state.failure.last_attempt_ms,
            }
        text = json.dumps(header, separators=(",", ":"), ensure_ascii=False)
        return f"{COVERAGE_PREFIX}{text}\n{state.body}"
    raise ValueError(f"a {state.kind} summary has no file")
