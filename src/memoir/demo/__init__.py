"""``memoir demo``: a bundled sample corpus synced into a throwaway home, then a tour.

This module builds the corpus's transcript records and holds its Codex CLI and generic
half; :mod:`memoir.demo.make_corpus` holds the Claude Code half and writes the corpus;
:mod:`memoir.demo.tour` is the tour and the home it makes.

Build realistic transcript records (Claude Code, Codex CLI, generic) as plain dicts.

Used to write the demo corpus, by the ingest tests and by the sync benchmark, so all three
speak the formats exactly as ``shared/fixtures/FORMATS.md`` describes them.

The Codex CLI and generic half of the demo corpus. Written for Memoir's demo.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from typing import Any

__all__ = [
    "ClaudeWriter",
    "CodexWriter",
    "codex_sessions",
    "generic_sessions",
    "jsonl",
    "text_block",
    "tool_result_block",
    "tool_use_block",
]


def jsonl(records: Iterable[dict[str, Any]]) -> bytes:
    """Records as JSONL bytes (compact separators, as Claude Code writes them)."""
    return b"".join(
        json.dumps(r, ensure_ascii=False, separators=(",", ":")).encode() + b"\n" for r in records
    )


def text_block(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def tool_use_block(call_id: str, name: str, tool_input: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": name, "input": tool_input}


def tool_result_block(call_id: str, content: str, *, is_error: bool = False) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": call_id, "content": content}
    if is_error:
        block["is_error"] = True
    return block


class _Clock:
    def __init__(self, start: datetime, step_s: float) -> None:
        self.now = start
        self.step = timedelta(seconds=step_s)

    def tick(self) -> str:
        self.now += self.step
        return self.now.isoformat().replace("+00:00", "Z")


class ClaudeWriter:
    """Accumulates the records of one Claude Code session."""

    def __init__(
        self,
        session_id: str,
        *,
        cwd: str = "/home/ann/code/app",
        start: datetime | None = None,
        step_s: float = 20.0,
        sidechain: bool = False,
        model: str = "claude-sonnet-4-5-20250929",
    ) -> None:
        self.session_id = session_id
        self.cwd = cwd
        self.sidechain = sidechain
        self.model = model
        self.clock = _Clock(start or datetime(2025, 10, 14, 9, 0, tzinfo=UTC), step_s)
        self.records: list[dict[str, Any]] = []
        self._parent: str | None = None
        self._n = 0
        self._msg = 0

    def _uuid(self) -> str:
        self._n += 1
        return f"{self.session_id[:8]}-0000-4000-8000-{self._n:012d}"

    def _base(self, kind: str) -> dict[str, Any]:
        uuid = self._uuid()
        record = {
            "parentUuid": self._parent,
            "isSidechain": self.sidechain,
            "userType": "external",
            "cwd": self.cwd,
            "sessionId": self.session_id,
            "version": "2.0.14",
            "gitBranch": "main",
            "type": kind,
            "uuid": uuid,
            "timestamp": self.clock.tick(),
        }
        self._parent = uuid
        return record

    def user(self, content: str | list[dict[str, Any]], **extra: Any) -> ClaudeWriter:
        record = self._base("user")
        record["message"] = {"role": "user", "content": content}
        record.update(extra)
        self.records.append(record)
        return self

    def assistant(self, *blocks: dict[str, Any] | str, split: bool = True) -> ClaudeWriter:
        """One reply; with ``split`` each block is its own record sharing ``message.id``."""
        self._msg += 1
        msg_id = f"msg_{self.session_id[:6]}{self._msg:06d}"
        items = [text_block(b) if isinstance(b, str) else b for b in blocks]
        groups = [[b] for b in items] if split else [items]
        for group in groups:
            record = self._base("assistant")
            record["requestId"] = f"req_{msg_id}"
            record["message"] = {
                "id": msg_id,
                "type": "message",
                "role": "assistant",
                "model": self.model,
                "content": group,
                "stop_reason": None,
                "usage": {"input_tokens": 1200, "output_tokens": 180},
            }
            self.records.append(record)
        return self

    def tool(
        self,
        call_id: str,
        content: str,
        *,
        is_error: bool = False,
        result: dict[str, Any] | None = None,
    ) -> ClaudeWriter:
        """The tool answering; ``result`` is Claude Code's structured ``toolUseResult``."""
        extra = {"toolUseResult": result} if result is not None else {}
        return self.user([tool_result_block(call_id, content, is_error=is_error)], **extra)

    def summary(self, text: str) -> ClaudeWriter:
        self.records.append({"type": "summary", "summary": text, "leafUuid": self._parent})
        return self

    def snapshot(self) -> ClaudeWriter:
        self.records.append(
            {
                "type": "file-history-snapshot",
                "messageId": self._uuid(),
                "snapshot": {"trackedFileBackups": {}, "timestamp": self.clock.tick()},
                "isSnapshotUpdate": False,
            }
        )
        return self

    def bytes(self) -> bytes:
        return jsonl(self.records)


class CodexWriter:
    """Accumulates the lines of one Codex CLI rollout."""

    def __init__(
        self,
        session_id: str,
        *,
        cwd: str = "/home/ann/code/app",
        start: datetime | None = None,
        model: str = "gpt-5-codex",
    ) -> None:
        self.clock = _Clock(start or datetime(2025, 10, 15, 14, 0, tzinfo=UTC), 15.0)
        self.lines: list[dict[str, Any]] = []
        self._line(
            "session_meta",
            {
                "id": session_id,
                "timestamp": self.clock.now.isoformat(),
                "cwd": cwd,
                "originator": "codex_cli_rs",
                "cli_version": "0.46.0",
                "source": "cli",
                "model_provider": "openai",
                "git": {"branch": "main"},
            },
        )
        self._line(
            "turn_context",
            {"cwd": cwd, "model": model, "approval_policy": "on-request", "summary": "auto"},
        )

    def _line(self, kind: str, payload: dict[str, Any]) -> CodexWriter:
        self.lines.append({"timestamp": self.clock.tick(), "type": kind, "payload": payload})
        return self

    def user(self, text: str) -> CodexWriter:
        item = {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": text}],
        }
        self._line("response_item", item)
        return self._line("event_msg", {"type": "user_message", "message": text})

    def context(self, text: str) -> CodexWriter:
        item = {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": text}],
        }
        return self._line("response_item", item)

    def assistant(self, text: str) -> CodexWriter:
        item = {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": text}],
        }
        self._line("response_item", item)
        return self._line("event_msg", {"type": "agent_message", "message": text})

    def reasoning(self, text: str) -> CodexWriter:
        item = {
            "type": "reasoning",
            "summary": [{"type": "summary_text", "text": text}],
            "encrypted_content": "gAAAAB" + "x" * 40,
        }
        return self._line("response_item", item)

    def call(self, call_id: str, name: str, arguments: dict[str, Any], output: str) -> CodexWriter:
        self._line(
            "response_item",
            {
                "type": "function_call",
                "name": name,
                "arguments": json.dumps(arguments),
                "call_id": call_id,
            },
        )
        result = json.dumps({"output": output, "metadata": {"exit_code": 0}})
        return self._line(
            "response_item", {"type": "function_call_output", "call_id": call_id, "output": result}
        )

    def shell(self, call_id: str, command: list[str], output: str) -> CodexWriter:
        self._line(
            "response_item",
            {
                "type": "local_shell_call",
                "call_id": call_id,
                "status": "completed",
                "action": {"type": "exec", "command": command},
            },
        )
        return self._line(
            "response_item",
            {"type": "local_shell_call_output", "call_id": call_id, "output": output},
        )

    def compacted(self, text: str) -> CodexWriter:
        return self._line("compacted", {"message": text})

    def bytes(self) -> bytes:
        return jsonl(self.lines)


_ENV = (
    "<environment_context>\n  <cwd>{cwd}</cwd>\n"
    "  <approval_policy>on-request</approval_policy>\n</environment_context>"
)


def _py313() -> CodexWriter:
    cwd = "/home/ann/code/webshop"
    w = CodexWriter("0199f1a2-3b4c-7d5e-8f6a-7b8c9d0e1f10", cwd=cwd)
    w.context(_ENV.format(cwd=cwd))
    w.user("`make test` fails on Python 3.13 with `ModuleNotFoundError: No module named 'cgi'`.")
    w.reasoning("cgi was removed in 3.13 (PEP 594); find who imports it.")
    w.shell("call_py1", ["rg", "-n", "import cgi", "."], "shop/uploads.py:3:import cgi")
    w.assistant(
        "`shop/uploads.py` imports `cgi`, which Python 3.13 removed (PEP 594). It only "
        "uses `cgi.parse_header`; replace it with `email.message.Message` header "
        "parsing, or the `multipart` package for form data."
    )
    w.user("Replace it with the email module. We decided to support Python 3.11 and newer only.")
    w.call(
        "call_py2",
        "apply_patch",
        {
            "input": "*** Update File: shop/uploads.py\n-import cgi\n"
            "+from email.message import Message"
        },
        "Success.",
    )
    w.shell("call_py3", ["make", "test"], "142 passed in 9.8s")
    w.assistant(
        "Done: `parse_content_type()` now uses `email.message.Message`; `make test` "
        "passes on 3.13 (142 tests)."
    )
    return w


def _backoff() -> CodexWriter:
    cwd = "/home/ann/code/infra"
    w = CodexWriter(
        "0199f2b3-4c5d-7e6f-9a7b-8c9d0e1f2a11",
        cwd=cwd,
        start=datetime(2025, 10, 17, 11, 0, tzinfo=UTC),
    )
    w.context(_ENV.format(cwd=cwd))
    w.user(
        "Add retries with exponential backoff and jitter to the HTTP client in "
        "`infra/deploy/client.py`, but never retry POST."
    )
    w.call(
        "call_bo1",
        "shell",
        {"command": ["sed", "-n", "1,80p", "infra/deploy/client.py"]},
        "class DeployClient:\n    def request(self, method, url, **kw):\n"
        "        return self.session.request(method, url, timeout=10, **kw)",
    )
    w.assistant(
        "I'll wrap `request` in a retry loop: up to 4 attempts for idempotent methods "
        "(GET, PUT, DELETE, HEAD) on connection errors, 429 and 5xx; delay = "
        "min(30, 0.5 × 2^attempt) × random(0.5, 1.5); honour `Retry-After`."
    )
    w.call(
        "call_bo2", "apply_patch", {"input": "*** Update File: infra/deploy/client.py"}, "Success."
    )
    w.call(
        "call_bo3",
        "shell",
        {"command": ["pytest", "-q", "tests/test_client.py"]},
        "7 passed in 0.3s",
    )
    w.assistant(
        "Retries with full jitter are in place; POST is never retried because it is not "
        "idempotent. The tests cover 429 with Retry-After and a flapping 503."
    )
    return w


def _slow_query_french() -> CodexWriter:
    cwd = "/home/ann/code/webshop"
    w = CodexWriter(
        "0199f3c4-5d6e-7f7a-8b8c-9d0e1f2a3b12",
        cwd=cwd,
        start=datetime(2025, 10, 18, 16, 0, tzinfo=UTC),
    )
    w.context(_ENV.format(cwd=cwd))
    w.user("Explique-moi pourquoi la requête des meilleures ventes est lente.")
    w.shell(
        "call_fr1",
        [
            "psql",
            "-c",
            "EXPLAIN ANALYZE SELECT product_id, sum(qty) FROM "
            "order_lines GROUP BY product_id ORDER BY 2 DESC LIMIT 10",
        ],
        "HashAggregate (actual time=2210.5..2391.0) -> Seq Scan on order_lines (rows=4.1M)",
    )
    w.assistant(
        "La requête agrège 4,1 millions de lignes à chaque appel : c'est l'agrégation, "
        "pas un index manquant. Une vue matérialisée `top_sellers` rafraîchie toutes les "
        "dix minutes (`REFRESH MATERIALIZED VIEW CONCURRENTLY`) ramène la page à 2 ms."
    )
    w.compacted(
        "Résumé : requête des meilleures ventes lente (agrégation de 4,1 M lignes) ; "
        "solution retenue : vue matérialisée rafraîchie toutes les 10 minutes."
    )
    w.user("D'accord, écris la migration.")
    w.assistant(
        "Migration `0042_top_sellers_view.sql` écrite, avec un index unique sur "
        "`product_id` pour permettre le rafraîchissement concurrent."
    )
    return w


def codex_sessions() -> list[tuple[str, bytes]]:
    """(relative path under sessions/, bytes) for every Codex demo rollout."""
    out = []
    for w, day in ((_py313(), "15"), (_backoff(), "17"), (_slow_query_french(), "18")):
        sid = w.lines[0]["payload"]["id"]
        out.append((f"2025/10/{day}/rollout-2025-10-{day}T14-00-00-{sid}.jsonl", w.bytes()))
    return out


def generic_sessions() -> list[tuple[str, bytes]]:
    """One chat exported in the generic format (a JSON list of OpenAI-style messages)."""
    messages = [
        {"role": "system", "content": "You are the webshop's support assistant."},
        {
            "role": "user",
            "content": "My order 1042 says 'awaiting SCA'. What do I do?",
            "timestamp": "2025-10-19T09:12:00Z",
        },
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_sup1",
                    "type": "function",
                    "function": {
                        "name": "lookup_order",
                        "arguments": json.dumps({"order_id": 1042}),
                    },
                }
            ],
        },
        {
            "role": "tool",
            "tool_call_id": "call_sup1",
            "content": json.dumps({"status": "AWAITING_SCA", "bank": "3-D Secure pending"}),
        },
        {
            "role": "assistant",
            "content": "Your bank asked for 3-D Secure confirmation. Open the "
            "payment link in the order email and approve it in your banking app; the order then "
            "ships automatically.",
            "timestamp": "2025-10-19T09:12:20Z",
        },
    ]
    return [("support/chat-1042.json", json.dumps(messages, indent=1).encode())]
