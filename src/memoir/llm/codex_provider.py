"""The ``codex`` provider: the installed Codex CLI, under the user's own login.

One call is one run of ``codex exec --json -`` (non-interactive: answer and exit; ``-``
reads the prompt from stdin) in a read-only sandbox (``--sandbox read-only``: it cannot
edit or run anything that writes), asking for no MCP servers and no notify program
(``-c mcp_servers={}``, ``-c notify=[]``; a Codex that merges overrides into the user's
tables still starts the servers configured there), no saved session (``--ephemeral``; sync
recognises the runs anyway, by their working folder: :mod:`memoir.llm.agent_cli`) and no
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
from pathlib import Path
from typing import Any

from memoir.llm.agent_cli import error_for_message, first_line, prompt_of, run_agent
from memoir.llm.errors import BadResponse
from memoir.llm.mapping import completion_or_error
from memoir.llm.values import Completion, ModelRequest, StopReason, Usage

__all__ = ["CodexModel", "codex_argv", "completion_of_events"]

PROVIDER = "codex"


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
        self.name = f"{PROVIDER}:{model}" if model else PROVIDER
        self.runs_dir = runs_dir
        self.timeout_s = timeout_s
        self.binary = binary

    def complete(self, request: ModelRequest) -> Completion:
        context: dict[str, Any] = {"provider": PROVIDER, "model": self.model or "default"}
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


def _usage_of(event: dict[str, Any]) -> Usage:
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
    usage = _usage_of(done[-1]) if done else Usage()
    model = asked or "default"
    context: dict[str, Any] = {
        "provider": PROVIDER,
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
        provider=PROVIDER,
        request_id=request_id,
        latency_ms=latency_ms,
    )
