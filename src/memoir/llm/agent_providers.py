"""The agent CLI providers, one run of the user's own coding agent per call: Claude Code and
Codex, under the login the user already has.

:func:`run_agent` starts the CLI in its own process group with the prompt on stdin and its
working folder set to Memoir's own runs folder (``<MEMOIR_HOME>/agent-runs``), and kills
the whole group when ``MEMOIR_LLM_TIMEOUT_S`` passes (a hang never outlives it). The runs
folder is how sync recognises the transcripts these calls leave behind
(:func:`memoir.ingest.plan.plan_file`): a session whose working folder is it is Memoir's,
never the user's — the flags that ask the CLIs not to keep a session are passed too, but
sync does not rely on them. The prompt and the mapping of a CLI's failure onto the error
tree are :mod:`memoir.llm.mapping`'s.

The ``claude-code`` provider: the installed Claude Code CLI, under the user's own login.

One call is one run of ``claude -p --output-format json`` (print mode: answer and exit)
with the prompt on stdin and no tools (``--tools ""``), no MCP servers but none
(``--strict-mcp-config``), no hooks (``disableAllHooks``: Memoir's own SessionStart hook
would start a sync from inside a sync) and no saved session (``--no-session-persistence``;
sync recognises the runs anyway, by their working folder: :func:`run_agent`).
Memoir's system prompt replaces Claude Code's own (``--system-prompt``); ``claude-code:<model>``
passes ``--model <model>`` (an alias such as ``sonnet`` or a full model id).

The JSON result object (one object on stdout when the run ends)::

    {"type": "result", "subtype": "success", "is_error": false, "result": "<answer>",
     "session_id": "…", "num_turns": 1, "duration_ms": …, "total_cost_usd": 0.0123,
     "stop_reason": "end_turn",            (newer versions)
     "usage": {"input_tokens": …, "cache_creation_input_tokens": …,
               "cache_read_input_tokens": …, "output_tokens": …},
     "modelUsage": {"<model id>": {"inputTokens": …, "outputTokens": …, "costUSD": …}}}

A failed run says so with ``is_error: true`` (the message in ``result``, e.g. ``Invalid API
key · Please run /login`` or ``API Error: 429 …``) or an ``error_*`` subtype (``errors``
lists why), and exits non-zero. Input tokens in the ledger are all three input counts
(``input_tokens`` leaves out what was read from or written to the prompt cache).

The ``codex`` provider: the installed Codex CLI, under the user's own login.

One call is one run of ``codex exec --json -`` (non-interactive: answer and exit; ``-``
reads the prompt from stdin) in a read-only sandbox (``--sandbox read-only``: it cannot
edit or run anything that writes), asking for no MCP servers and no notify program
(``-c mcp_servers={}``, ``-c notify=[]``; a Codex that merges overrides into the user's
tables still starts the servers configured there), no saved session (``--ephemeral``; sync
recognises the runs anyway, by their working folder: :func:`run_agent`) and no
git check (the runs folder is not a repository). Codex takes no system prompt of its own
here, so Memoir's goes in front of the prompt. ``codex:<model>`` passes ``-m <model>``.

``--json`` prints one JSON event per line (JSONL)::

    {"type": "thread.started", "thread_id": "0199a213-…"}
    {"type": "turn.started"}
    {"type": "item.completed", "item": {"id": "item_0", "type": "reasoning", "text": "…"}}
    {"type": "item.completed",
     "item": {"id": "item_1", "type": "agent_message", "text": "<answer>"}}
    {"type": "turn.completed", "usage": {"input_tokens": …, "cached_input_tokens": …,
                                         "output_tokens": …}}

A failed turn ends with ``{"type": "turn.failed", "error": {"message": …}}``, often after
``{"type": "error", "message": …}`` (``Reconnecting… 1/5`` notices are progress, not
failure); the process exits non-zero. ``cached_input_tokens`` is part of ``input_tokens``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memoir.home_files import private_dir
from memoir.llm.mapping import (
    NEUTRAL_SYSTEM,
    completion_or_error,
    error_for_message,
    first_line,
    prompt_of,
    stop_reason_of,
    system_of,
)
from memoir.llm.port import (
    BadResponse,
    Completion,
    ModelRequest,
    StopReason,
    Transient,
    UnknownModel,
    Usage,
)

__all__ = [
    "RUNS_FOLDER",
    "AgentRun",
    "ClaudeCodeModel",
    "CodexModel",
    "claude_argv",
    "codex_argv",
    "completion_of_events",
    "completion_of_result",
    "run_agent",
    "runs_folder",
]

# one run of an agent CLI ---------------------------------------------------------------

RUNS_FOLDER = "agent-runs"  # under MEMOIR_HOME: the working folder of every agent call


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


# Claude Code ---------------------------------------------------------------------------

CLAUDE_CODE = "claude-code"
# a system prompt longer than this goes on stdin with the prompt, not on the command line
MAX_SYSTEM_ARG = 16_000
NO_HOOKS = json.dumps({"disableAllHooks": True})
NESTING_MARKS = ("CLAUDECODE", "CLAUDE_CODE_ENTRYPOINT")


def claude_argv(binary: str, model: str, system: str) -> list[str]:
    """The command line of one call (the prompt is not on it: it goes on stdin)."""
    argv = [
        binary,
        "-p",
        "--output-format",
        "json",
        "--tools",
        "",
        "--strict-mcp-config",
        "--no-session-persistence",
        "--settings",
        NO_HOOKS,
        "--system-prompt",
        system,
    ]
    if model:
        argv += ["--model", model]
    return argv


class ClaudeCodeModel:
    """Claude through the user's Claude Code CLI. Thread-safe (one process per call)."""

    def __init__(
        self,
        model: str = "",
        *,
        runs_dir: Path,
        timeout_s: float | None = 120.0,
        binary: str = "claude",
    ) -> None:
        self.model = model
        self.name = f"{CLAUDE_CODE}:{model}" if model else CLAUDE_CODE
        self.runs_dir = runs_dir
        self.timeout_s = timeout_s
        self.binary = binary

    def complete(self, request: ModelRequest) -> Completion:
        context: dict[str, Any] = {"provider": CLAUDE_CODE, "model": self.model or "default"}
        system = system_of(request)
        if len(system) > MAX_SYSTEM_ARG:
            prompt, system = prompt_of(request, with_system=True), NEUTRAL_SYSTEM
        else:
            prompt = prompt_of(request, with_system=False)
        run = run_agent(
            claude_argv(self.binary, self.model, system),
            prompt,
            cwd=self.runs_dir,
            timeout_s=self.timeout_s,
            context=context,
            env=_child_env(),
        )
        try:
            result = _result_object(run.stdout)
        except ValueError:
            if run.returncode != 0:
                raise error_for_message(
                    first_line(run.stderr) or first_line(run.stdout), **context
                ) from None
            raise BadResponse(
                f"claude printed no complete JSON result: {run.stdout[-200:]!r}", **context
            ) from None
        return completion_of_result(result, run.returncode, run.latency_ms, self.model)


def _child_env() -> dict[str, str]:
    """This process's environment without the marks of a running Claude Code session: Memoir
    started from inside one (its MCP server, the hook's sync) must still reach the CLI, which
    refuses to start "nested" when it sees them. The call is no nested session: it shares
    nothing with the one around it."""
    return {k: v for k, v in os.environ.items() if k not in NESTING_MARKS}


def _result_object(stdout: str) -> dict[str, Any]:
    """The result object: the whole output, or (stream-json, or a banner before it) the
    last line that is one. ValueError when there is none (cut short, or not JSON)."""
    text = stdout.strip()
    candidates = [text, *reversed(text.splitlines())] if text else []
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(value, dict) and value.get("type") == "result":
            return value
    raise ValueError("no result object")


def _count(usage: dict[str, Any], field: str) -> int:
    value = usage.get(field)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _claude_usage(result: dict[str, Any]) -> Usage:
    usage = result.get("usage")
    if not isinstance(usage, dict):
        return Usage()
    fields = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    return Usage(sum(_count(usage, f) for f in fields), _count(usage, "output_tokens"))


def _model_of(result: dict[str, Any], asked: str) -> str:
    """The model that answered: the ``modelUsage`` entry with the most output tokens."""
    per_model = result.get("modelUsage")
    if isinstance(per_model, dict) and per_model:
        return max(
            per_model,
            key=lambda k: (
                _count(per_model[k], "outputTokens") if isinstance(per_model[k], dict) else 0
            ),
        )
    return asked or "default"


def completion_of_result(
    result: dict[str, Any], returncode: int, latency_ms: float, asked: str
) -> Completion:
    """A Completion from Claude Code's result object, or the ModelError it reports."""
    usage = _claude_usage(result)
    model = _model_of(result, asked)
    session = result.get("session_id") if isinstance(result.get("session_id"), str) else None
    context: dict[str, Any] = {
        "provider": CLAUDE_CODE,
        "model": model,
        "request_id": session,
        "usage": usage,
    }
    subtype = str(result.get("subtype") or "")
    said_text = result.get("result")
    text = said_text if isinstance(said_text, str) else ""
    if result.get("is_error") or subtype != "success" or returncode != 0:
        errors = result.get("errors")
        said = text or (
            "; ".join(map(str, errors)) if isinstance(errors, list) and errors else subtype
        )
        raise error_for_message(first_line(said) or f"claude exited {returncode}", **context)
    raw_stop = result.get("stop_reason") if isinstance(result.get("stop_reason"), str) else None
    completion = completion_or_error(
        text=text,
        stop=stop_reason_of(raw_stop),
        usage=usage,
        model=model,
        provider=CLAUDE_CODE,
        request_id=session,
        latency_ms=latency_ms,
        raw_stop=raw_stop,
    )
    cost = result.get("total_cost_usd")
    if isinstance(cost, (int, float)) and not isinstance(cost, bool):
        completion.extra["cost_usd"] = float(cost)
    return completion


CODEX = "codex"


def codex_argv(binary: str, model: str, runs_dir: Path) -> list[str]:
    """The command line of one call (the prompt goes on stdin: the final ``-``)."""
    argv = [
        binary,
        "exec",
        "--json",
        "--ephemeral",
        "--skip-git-repo-check",
        "--sandbox",
        "read-only",
        "-c",
        "mcp_servers={}",
        "-c",
        "notify=[]",
        "-C",
        str(runs_dir),
    ]
    if model:
        argv += ["-m", model]
    return [*argv, "-"]


class CodexModel:
    """An OpenAI model through the user's Codex CLI. Thread-safe (one process per call)."""

    def __init__(
        self,
        model: str = "",
        *,
        runs_dir: Path,
        timeout_s: float | None = 120.0,
        binary: str = "codex",
    ) -> None:
        self.model = model
        self.name = f"{CODEX}:{model}" if model else CODEX
        self.runs_dir = runs_dir
        self.timeout_s = timeout_s
        self.binary = binary

    def complete(self, request: ModelRequest) -> Completion:
        context: dict[str, Any] = {"provider": CODEX, "model": self.model or "default"}
        run = run_agent(
            codex_argv(self.binary, self.model, self.runs_dir),
            prompt_of(request, with_system=True),
            cwd=self.runs_dir,
            timeout_s=self.timeout_s,
            context=context,
        )
        return completion_of_events(
            run.stdout, run.stderr, run.returncode, run.latency_ms, self.model
        )


def _events(stdout: str) -> list[dict[str, Any]]:
    events = []
    for line in stdout.splitlines():
        try:
            value = json.loads(line)
        except ValueError:
            continue  # a line cut short (the process died mid-write), or a stray banner
        if isinstance(value, dict) and isinstance(value.get("type"), str):
            events.append(value)
    return events


def _codex_usage(event: dict[str, Any]) -> Usage:
    usage = event.get("usage")
    if not isinstance(usage, dict):
        return Usage()

    def count(field: str) -> int:
        value = usage.get(field)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
        return 0

    return Usage(count("input_tokens"), count("output_tokens"))


def _failure_of(event: dict[str, Any]) -> str | None:
    """The message of a failure event; None for anything else (a reconnect notice too)."""
    if event["type"] == "turn.failed":
        error = event.get("error")
        message = error.get("message") if isinstance(error, dict) else None
        return str(message or "the turn failed")
    if event["type"] == "error":
        message = str(event.get("message") or "")
        return None if message.lower().startswith("reconnecting") else message or "error"
    return None


def completion_of_events(
    stdout: str, stderr: str, returncode: int, latency_ms: float, asked: str
) -> Completion:
    """A Completion from ``codex exec --json`` output, or the ModelError it reports."""
    events = _events(stdout)
    thread = next((e.get("thread_id") for e in events if e["type"] == "thread.started"), None)
    request_id = thread if isinstance(thread, str) else None
    done = [e for e in events if e["type"] == "turn.completed"]
    usage = _codex_usage(done[-1]) if done else Usage()
    model = asked or "default"
    context: dict[str, Any] = {
        "provider": CODEX,
        "model": model,
        "request_id": request_id,
        "usage": usage,
    }
    failures = [m for e in events if (m := _failure_of(e)) is not None]
    if failures or returncode != 0:
        said = failures[-1] if failures else first_line(stderr) or first_line(stdout)
        raise error_for_message(first_line(said) or f"codex exited {returncode}", **context)
    if not done:
        raise BadResponse(f"codex stopped before its turn completed: {stdout[-200:]!r}", **context)
    messages = [
        str(item.get("text") or "")
        for e in events
        if e["type"] == "item.completed"
        and isinstance(item := e.get("item"), dict)
        and (item.get("type") or item.get("item_type")) in ("agent_message", "assistant_message")
    ]
    return completion_or_error(
        text=messages[-1] if messages else "",
        stop=StopReason.END,
        usage=usage,
        model=model,
        provider=CODEX,
        request_id=request_id,
        latency_ms=latency_ms,
    )
