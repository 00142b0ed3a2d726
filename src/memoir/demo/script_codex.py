"""The Codex CLI and generic half of the demo corpus. Written for Memoir's demo."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from memoir.demo.builders import CodexWriter

__all__ = ["codex_sessions", "generic_sessions"]

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
