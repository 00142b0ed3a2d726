"""Fake ``claude`` and ``codex`` executables that speak the real CLIs' output formats.

:func:`install` writes one into a ``bin`` folder the test puts first on PATH. It is a small
Python script; the test steers it with environment variables (inherited by the child):

- ``FAKE_AGENT_MODE``: ``ok`` | ``partial`` (the JSON cut short, exit 0) | ``partial_crash``
  (cut short, exit 1 with a stderr line) | ``logged_out`` | ``rate_limit`` | ``api_429`` |
  ``refused`` | ``overloaded`` | ``crash`` (no stdout, a stderr line, exit 2) | ``hang``
  (starts a child that sleeps too — the pid goes to ``FAKE_AGENT_LOG/child.pid`` — and
  sleeps past any timeout);
- ``FAKE_AGENT_ANSWER``: the model's answer text;
- ``FAKE_AGENT_LOG``: a folder where every call leaves ``call-N.json`` with its argv, the
  stdin it read, its working folder and the ``CLAUDECODE`` variable it saw (the fake
  ``claude`` refuses to start under it, as Claude Code does: "cannot be launched inside
  another Claude Code session");
- ``FAKE_AGENT_TRANSCRIPTS``: when set, the call also leaves a session transcript there the
  way the real CLI does (under ``<claude_folder(cwd)>/<session>.jsonl`` for Claude Code, as
  in ``~/.claude/projects``; ``YYYY/MM/DD/rollout-….jsonl`` with a ``session_meta`` line
  holding the cwd for Codex, as in ``~/.codex/sessions``) — as if the flag asking it not to
  keep sessions had been ignored, so the tests check that sync does not rely on it.

The formats, from the tools' own documentation:

**Claude Code** (``claude -p --output-format json``; "Run Claude Code programmatically" /
the CLI reference and the Agent SDK's result message): one JSON object printed when the run
ends. ``type`` is ``"result"``; ``subtype`` ``"success"`` or an error kind
(``"error_max_turns"``, ``"error_during_execution"``); ``is_error`` true when the run failed
(an API or login error with subtype success too, its message in ``result``); ``result`` the
final answer text; ``session_id`` the session's id; ``num_turns``, ``duration_ms``,
``duration_api_ms``; ``total_cost_usd`` the run's cost; ``usage`` the API usage object
(``input_tokens``, ``cache_creation_input_tokens``, ``cache_read_input_tokens``,
``output_tokens``, ``server_tool_use``, ``service_tier``); ``modelUsage`` per model id
(``inputTokens``, ``outputTokens``, ``cacheReadInputTokens``, ``cacheCreationInputTokens``,
``costUSD``); ``permission_denials``. A logged-out CLI answers ``is_error: true`` with
``"Invalid API key · Please run /login"`` and exits 1; API failures read ``"API Error:
<status> <body>"``; the subscription's usage limit ``"Claude AI usage limit
reached|<epoch second it resets>"``; a policy refusal "…unable to respond to this request,
which appears to violate our Usage Policy…".

**Codex** (``codex exec --json``; the non-interactive mode docs and ``exec_events.rs``):
one JSON event per line. ``thread.started`` (``thread_id``), ``turn.started``,
``item.started`` / ``item.updated`` / ``item.completed`` (``item``: ``id``, ``type`` —
``agent_message`` with ``text`` is the answer; ``reasoning``, ``command_execution``, … are
not), ``turn.completed`` (``usage``: ``input_tokens``, ``cached_input_tokens`` — part of the
input —, ``output_tokens``), ``turn.failed`` (``error.message``) and ``error``
(``message``; ``Reconnecting… n/5`` notices are progress). HTTP failures read ``unexpected
status 401 Unauthorized: …``; the plan's usage limit "You've hit your usage limit. … try
again in 1 hour 20 minutes."
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

__all__ = ["calls", "install"]

_SCRIPT = r"""
import json, os, subprocess, sys, time, uuid
from datetime import datetime, timezone

TOOL = os.path.basename(sys.argv[0])
MODE = os.environ.get("FAKE_AGENT_MODE", "ok")
ANSWER = os.environ.get("FAKE_AGENT_ANSWER", "A short answer.")
LOG = os.environ.get("FAKE_AGENT_LOG")
TRANSCRIPTS = os.environ.get("FAKE_AGENT_TRANSCRIPTS")

prompt = sys.stdin.read()
cwd = os.getcwd()
if LOG:
    os.makedirs(LOG, exist_ok=True)
    n = len([f for f in os.listdir(LOG) if f.startswith("call-")])
    with open(os.path.join(LOG, f"call-{n}.json"), "w") as fp:
        nested = os.environ.get("CLAUDECODE")
        json.dump({"argv": sys.argv[1:], "stdin": prompt, "cwd": cwd, "nested": nested}, fp)
if TOOL == "claude" and os.environ.get("CLAUDECODE"):  # what Claude Code itself does
    sys.stderr.write("Error: Claude Code cannot be launched inside another Claude Code "
                     "session.\n")
    sys.exit(1)

def arg(flag, default=None):
    args = sys.argv[1:]
    return args[args.index(flag) + 1] if flag in args else default

session = str(uuid.uuid4())
now = datetime.now(timezone.utc).isoformat().replace("+00:00", "Z")

def claude_transcript():
    folder = "".join(c if c.isascii() and c.isalnum() else "-" for c in cwd.rstrip("/"))
    path = os.path.join(TRANSCRIPTS, folder, session + ".jsonl")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    base = {"parentUuid": None, "isSidechain": False, "userType": "external", "cwd": cwd,
            "sessionId": session, "version": "2.0.14", "timestamp": now}
    user = dict(base, type="user", uuid=str(uuid.uuid4()),
                message={"role": "user", "content": prompt})
    reply = dict(base, type="assistant", uuid=str(uuid.uuid4()), parentUuid=user["uuid"],
                 message={"id": "msg_1", "type": "message", "role": "assistant",
                          "model": "claude-sonnet-4-5-20250929",
                          "content": [{"type": "text", "text": ANSWER}],
                          "stop_reason": "end_turn",
                          "usage": {"input_tokens": 12, "output_tokens": 42}})
    with open(path, "w") as fp:
        fp.write(json.dumps(user) + "\n" + json.dumps(reply) + "\n")

def codex_transcript():
    day = datetime.now(timezone.utc)
    folder = os.path.join(TRANSCRIPTS, day.strftime("%Y"), day.strftime("%m"), day.strftime("%d"))
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, f"rollout-{day.strftime('%Y-%m-%dT%H-%M-%S')}-{session}.jsonl")
    lines = [
        {"timestamp": now, "type": "session_meta",
         "payload": {"id": session, "timestamp": now, "cwd": cwd, "originator": "codex_exec",
                     "cli_version": "0.46.0", "instructions": None}},
        {"timestamp": now, "type": "response_item",
         "payload": {"type": "message", "role": "user",
                     "content": [{"type": "input_text", "text": prompt}]}},
        {"timestamp": now, "type": "response_item",
         "payload": {"type": "message", "role": "assistant",
                     "content": [{"type": "output_text", "text": ANSWER}]}},
    ]
    with open(path, "w") as fp:
        fp.write("".join(json.dumps(line) + "\n" for line in lines))

def hang():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    if LOG:
        with open(os.path.join(LOG, "child.pid"), "w") as fp:
            fp.write(str(child.pid))
    time.sleep(120)

def claude():
    model = {"sonnet": "claude-sonnet-4-5-20250929", "haiku": "claude-haiku-4-5-20251001"}.get(
        arg("--model", "sonnet"), arg("--model", "sonnet"))
    usage = {"input_tokens": 12, "cache_creation_input_tokens": 300,
             "cache_read_input_tokens": 1000, "output_tokens": 42,
             "server_tool_use": {"web_search_requests": 0}, "service_tier": "standard"}
    result = {"type": "result", "subtype": "success", "is_error": False, "duration_ms": 1830,
              "duration_api_ms": 1710, "num_turns": 1, "result": ANSWER,
              "stop_reason": "end_turn", "session_id": session, "total_cost_usd": 0.0042,
              "usage": usage,
              "modelUsage": {model: {"inputTokens": 12, "outputTokens": 42,
                                     "cacheReadInputTokens": 1000,
                                     "cacheCreationInputTokens": 300, "costUSD": 0.0042}},
              "permission_denials": [], "uuid": str(uuid.uuid4())}
    failed = dict(result, is_error=True, total_cost_usd=0, modelUsage={},
                  usage=dict(usage, input_tokens=0, cache_creation_input_tokens=0,
                             cache_read_input_tokens=0, output_tokens=0))
    reset = int(time.time()) + 7200
    said = {
        "logged_out": "Invalid API key · Please run /login",
        "rate_limit": f"Claude AI usage limit reached|{reset}",
        "api_429": 'API Error: 429 {"type":"error","error":{"type":"rate_limit_error",'
                   '"message":"Number of request tokens has exceeded your per-minute rate '
                   'limit"}}',
        "overloaded": 'API Error: 529 {"type":"error","error":{"type":"overloaded_error",'
                      '"message":"Overloaded"}}',
        "refused": "API Error: Claude Code is unable to respond to this request, which "
                   "appears to violate our Usage Policy (https://www.anthropic.com/legal/aup).",
    }
    if MODE == "ok":
        if TRANSCRIPTS:
            claude_transcript()
        print(json.dumps(result))
    elif MODE in said:
        print(json.dumps(dict(failed, result=said[MODE])))
        sys.exit(1)
    elif MODE in ("partial", "partial_crash"):
        sys.stdout.write(json.dumps(result)[:70])
        if MODE == "partial_crash":
            sys.stderr.write("Error: socket hang up\n")
            sys.exit(1)
    elif MODE == "crash":
        sys.stderr.write("Error: unknown option '--tools'\n")
        sys.exit(2)
    elif MODE == "hang":
        hang()

def codex():
    def emit(event):
        print(json.dumps(event), flush=True)
    emit({"type": "thread.started", "thread_id": session})
    emit({"type": "turn.started"})
    failures = {
        "logged_out": "unexpected status 401 Unauthorized: Missing bearer or basic "
                      "authentication in header",
        "rate_limit": "You've hit your usage limit. Upgrade to Pro "
                      "(https://openai.com/chatgpt/pricing) or try again in 1 hour 20 minutes.",
        "api_429": "exceeded retry limit, last status: 429 Too Many Requests",
        "overloaded": "stream disconnected before completion: error sending request",
        "refused": "Invalid prompt: your prompt was flagged as potentially violating our "
                   "usage policy.",
    }
    if MODE == "ok":
        if TRANSCRIPTS:
            codex_transcript()
        emit({"type": "error", "message": "Reconnecting... 1/5"})
        emit({"type": "item.completed",
              "item": {"id": "item_0", "type": "reasoning", "text": "**Reading the text**"}})
        emit({"type": "item.completed",
              "item": {"id": "item_1", "type": "agent_message", "text": ANSWER}})
        emit({"type": "turn.completed",
              "usage": {"input_tokens": 2400, "cached_input_tokens": 1024,
                        "output_tokens": 88}})
    elif MODE in failures:
        emit({"type": "error", "message": failures[MODE]})
        emit({"type": "turn.failed", "error": {"message": failures[MODE]}})
        sys.exit(1)
    elif MODE in ("partial", "partial_crash"):
        emit({"type": "item.completed",
              "item": {"id": "item_1", "type": "agent_message", "text": ANSWER}})
        sys.stdout.write('{"type": "turn.completed", "usage": {"input_tok')
        if MODE == "partial_crash":
            sys.stderr.write("thread 'main' panicked at core/src/codex.rs:1:1\n")
            sys.exit(101)
    elif MODE == "crash":
        sys.stderr.write("error: unexpected argument '--ephemeral' found\n")
        sys.exit(2)
    elif MODE == "hang":
        hang()

claude() if TOOL == "claude" else codex()
"""


def install(bin_dir: Path, name: str) -> Path:
    """Write the fake ``name`` (``claude`` or ``codex``) into ``bin_dir``; returns its path."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    path = bin_dir / name
    path.write_text(f"#!{sys.executable}\n{_SCRIPT}", encoding="utf-8")
    path.chmod(0o755)
    return path


def calls(log: Path) -> list[dict[str, object]]:
    """What each call of a fake saw (argv, stdin, cwd), in order."""
    found = sorted(log.glob("call-*.json"), key=lambda p: int(p.stem.split("-")[1]))
    return [json.loads(p.read_text(encoding="utf-8")) for p in found]


def alive(pid: int) -> bool:
    """The process ``pid`` still runs (a zombie waiting to be reaped does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        status = Path(f"/proc/{pid}/status").read_text(encoding="utf-8")
    except OSError:
        return True
    return "\nState:\tZ" not in status
