"""The user's own coding agent as a model: one non-interactive run of its CLI per call.

``MEMOIR_LLM=claude-code`` (:mod:`memoir.llm.agent_providers`) and ``MEMOIR_LLM=codex``
(:mod:`memoir.llm.agent_providers`) answer through the ``claude`` / ``codex`` executable on
PATH, under the login the user already has. What the two share lives here:

- :func:`run_agent` starts the CLI in its own process group with the prompt on stdin and
  its working folder set to Memoir's own runs folder (``<MEMOIR_HOME>/agent-runs``), and
  kills the whole group when ``MEMOIR_LLM_TIMEOUT_S`` passes (a hang never outlives it).
  The runs folder is how sync recognises the transcripts these calls leave behind
  (:func:`memoir.ingest.plan.plan_file`): a session whose working folder is it is Memoir's,
  never the user's — the flags that ask the CLIs not to keep a session are passed too,
  but sync does not rely on them.
- :func:`prompt_of` renders a request as the one prompt a CLI takes.
- :func:`error_for_message` maps what a CLI said when it failed (an ``API Error: 429 …``,
  ``Invalid API key · Please run /login``, a usage limit, a policy refusal) onto the
  :mod:`memoir.llm.port` tree; it is pure and tested as a table.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memoir.home_files import private_dir
from memoir.llm.mapping import error_for_status
from memoir.llm.port import (
    ContextTooLong,
    ModelError,
    ModelRequest,
    OutOfCredit,
    RateLimited,
    Refused,
    Transient,
    Unauthorized,
    UnknownModel,
)

__all__ = [
    "RUNS_FOLDER",
    "AgentRun",
    "error_for_message",
    "first_line",
    "prompt_of",
    "run_agent",
    "runs_folder",
    "system_of",
]

RUNS_FOLDER = "agent-runs"  # under MEMOIR_HOME: the working folder of every agent call

# the system prompt a call without one gets: it replaces the coding agent's own
NEUTRAL_SYSTEM = (
    "You are a text-processing model called by a program. Use no tools. Answer with the "
    "requested output only, in the requested format."
)


def runs_folder(home: Path) -> Path:
    """``<home>/agent-runs``: the folder the agent CLIs run in (see the module)."""
    return home / RUNS_FOLDER


@dataclass(frozen=True, slots=True)
class AgentRun:
    """What one CLI run left: its exit status, its output, and how long it took."""

    returncode: int
    stdout: str
    stderr: str
    latency_ms: float


def prompt_of(request: ModelRequest, *, with_system: bool) -> str:
    """The request as one prompt. One user message is sent as it is; a conversation is
    written out turn by turn. ``with_system`` puts the system prompt (and any system
    message) in front, for a CLI that takes no system prompt of its own."""
    parts: list[str] = []
    systems = [m.content for m in request.messages if m.role == "system"]
    if with_system:
        systems = [request.system, *systems] if request.system else systems
        if systems:
            parts.append("Instructions:\n" + "\n\n".join(systems))
    turns = [m for m in request.messages if m.role != "system"]
    if len(turns) == 1 and turns[0].role == "user" and not parts:
        return turns[0].content
    if len(turns) == 1 and turns[0].role == "user":
        parts.append(turns[0].content)
    else:
        label = {"user": "User", "assistant": "Assistant", "tool": "Tool output"}
        parts.extend(f"{label[m.role]}:\n{m.content}" for m in turns)
    return "\n\n".join(parts)


def system_of(request: ModelRequest) -> str:
    """The system prompt for a CLI that takes one (system messages folded in), or the
    neutral one: never the coding agent's own."""
    given = [request.system, *(m.content for m in request.messages if m.role == "system")]
    systems = [s for s in given if s]
    return "\n\n".join(systems) if systems else NEUTRAL_SYSTEM


def run_agent(
    argv: Sequence[str],
    prompt: str,
    *,
    cwd: Path,
    timeout_s: float | None,
    context: Mapping[str, Any],
    env: Mapping[str, str] | None = None,
) -> AgentRun:
    """Run ``argv`` in ``cwd`` with ``prompt`` on stdin. A missing executable raises
    UnknownModel (a setting to fix, never retried); no answer within ``timeout_s`` kills
    the process group and raises Transient."""
    private_dir(cwd)
    started = time.monotonic()
    tool = Path(argv[0]).name
    try:
        proc = subprocess.Popen(  # argv is ours; the prompt goes on stdin
            list(argv),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=dict(os.environ if env is None else env),
            start_new_session=True,  # its own process group: a timeout kills all of it
        )
    except FileNotFoundError as exc:
        raise UnknownModel(
            f"the {tool} command is not installed or not on PATH ({argv[0]})", **context
        ) from exc
    except PermissionError as exc:
        raise UnknownModel(f"the {tool} command cannot be run: {exc}", **context) from exc
    try:
        out, err = proc.communicate(prompt.encode("utf-8"), timeout=timeout_s)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        raise Transient(
            f"{tool} did not answer within {timeout_s:g}s (MEMOIR_LLM_TIMEOUT_S); it was stopped",
            **context,
        ) from None
    except BaseException:
        _kill_group(proc)
        raise
    return AgentRun(
        proc.returncode,
        out.decode("utf-8", "replace"),
        err.decode("utf-8", "replace"),
        (time.monotonic() - started) * 1000.0,
    )


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()
    try:
        proc.communicate(timeout=5)
    except (subprocess.TimeoutExpired, ValueError, OSError):
        pass


def first_line(text: str, limit: int = 300) -> str:
    """The first non-blank line of ``text`` (an error message's own), cut to ``limit``."""
    for line in text.splitlines():
        if line.strip():
            line = line.strip()
            return line if len(line) <= limit else line[: limit - 1] + "…"
    return ""


# "API Error: 529 {...}" (Claude Code), "unexpected status 401 Unauthorized: …" (Codex)
_STATUS = re.compile(r"(?:API Error:?|unexpected status|status(?: code)?:?)\s*(\d{3})\b", re.I)
_LOGGED_OUT = re.compile(
    r"invalid api key|please run /login|run `?codex login|not logged in|log ?in again"
    r"|oauth token (?:has )?expired|authentication[_ ](?:error|failed)|invalid x-api-key"
    r"|token (?:is )?expired|unauthori[sz]ed",
    re.I,
)
_CREDIT = re.compile(r"credit balance is too low|insufficient[_ ]quota|out of credits?", re.I)
_CONTEXT = re.compile(
    r"prompt is too long|context[ _](?:length|window)|maximum context|input is too long"
    r"|too many (?:input )?tokens",
    re.I,
)
_LIMIT = re.compile(
    r"usage limit|limit reached|rate[_ ]limit|too many requests|hit your (?:usage )?limit", re.I
)
_REFUSAL = re.compile(
    r"usage polic|violat\w* (?:our|the|anthropic|openai)|content (?:policy|filter)"
    r"|unable to respond to this request|flagged",
    re.I,
)
_TRANSIENT = re.compile(
    r"overloaded|internal server error|service unavailable|bad gateway|timed? ?out"
    r"|connection (?:error|refused|reset)|stream (?:error|disconnected)|network|ECONNRESET",
    re.I,
)
_MODEL = re.compile(
    r"\bmodel\b.{0,80}\b(?:not found|does not exist|not supported|not available|invalid)"
    r"|unknown model|invalid model|not_found_error",
    re.I,
)
# Claude Code: "Claude AI usage limit reached|1767225600" (the epoch second it resets)
_RESET_EPOCH = re.compile(r"limit reached\|(\d{9,11})")
# Codex: "Try again in 4 days 20 hours 9 minutes." / "try again in 42s"
_TRY_AGAIN = re.compile(
    r"try again in\s+((?:\d+\s*(?:days?|d|hours?|h|minutes?|mins?|m|seconds?|secs?|s)[\s,]*)+)",
    re.I,
)
_UNITS = {"d": 86400, "h": 3600, "m": 60, "s": 1}
_LOG_IN = "(log the CLI in, then try again)"
# a usage window (hours away) with no reset time given: past any retry wait
USAGE_WINDOW_S = 3600.0


def _wait_of(message: str, now: float) -> float | None:
    if m := _RESET_EPOCH.search(message):
        return max(0.0, int(m.group(1)) - now)
    if m := _TRY_AGAIN.search(message):
        total = 0
        for num, unit in re.findall(r"(\d+)\s*([a-z]+)", m.group(1), re.I):
            total += int(num) * _UNITS.get(unit[0].lower(), 0)
        return float(total)
    if re.search(r"usage limit|limit reached|hit your (?:usage )?limit", message, re.I):
        return USAGE_WINDOW_S
    return None


def error_for_message(message: str, *, now: float | None = None, **context: Any) -> ModelError:
    """The ModelError for what an agent CLI said when a call failed (``context``:
    provider, model, request_id, usage). Order matters: a refusal is a refusal whatever
    status came with it; then a status the CLI quoted; then the words alone."""
    text = message.strip() or "the command failed without saying why"
    now = time.time() if now is None else now
    if _REFUSAL.search(text):
        return Refused(f"refused: {text}", **context)
    if (m := _STATUS.search(text)) is not None:
        status = int(m.group(1))
        if status == 429 or (status in (400, 403) and _LIMIT.search(text)):
            if _CREDIT.search(text):
                return OutOfCredit(text, status=status, **context)
            return RateLimited(text, retry_after=_wait_of(text, now), status=status, **context)
        kind = type(error_for_status(status, text))  # the CLI's own words, no "HTTP …:"
        if kind is Unauthorized:
            text = f"{text} {_LOG_IN}"
        return kind(text, status=status, **context)
    if _CREDIT.search(text):
        return OutOfCredit(text, **context)
    if _CONTEXT.search(text):
        return ContextTooLong(text, **context)
    if _LOGGED_OUT.search(text):
        return Unauthorized(f"{text} {_LOG_IN}", **context)
    if _LIMIT.search(text):
        return RateLimited(text, retry_after=_wait_of(text, now), **context)
    if _MODEL.search(text):
        return UnknownModel(text, **context)
    if _TRANSIENT.search(text):
        return Transient(text, **context)
    return ModelError(text, **context)
