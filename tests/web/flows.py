"""Small helpers the browser tests share: conversations to load, the panel's parts, and
waiting on the page from Python."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

__all__ = ["Panel", "conversation", "realistic", "wait_until"]

WORDS = " ".join(f"word{i}" for i in range(60))


def conversation(
    turns: int = 4, *, marker: str | None = None, at: int | None = None
) -> list[dict[str, Any]]:
    """``turns`` user/assistant pairs of ~60 words (one episode each at 300 tokens); the
    user message of turn ``at`` (0-based) also says ``marker``."""
    out: list[dict[str, Any]] = []
    for k in range(turns):
        extra = f" The {marker} is the key point here." if marker and k == at else ""
        out.append(
            {"id": f"u{k}", "role": "user", "content": f"Step {k} of the migration?{extra} {WORDS}"}
        )
        out.append(
            {
                "id": f"a{k}",
                "role": "assistant",
                "content": f"Step {k}: dump, restore, verify. {WORDS}",
            }
        )
    return out


def realistic() -> list[dict[str, Any]]:
    """A short conversation as people have them (the screenshots'): prose, a code block, a
    tool call with a long output (folded on the page), a preference worth remembering."""
    log = "\n".join(
        f"invoices_{y}_{m:02d}  copied  {40_000 + 911 * m} rows"
        for y in (2024, 2025)
        for m in range(1, 13)
    )
    command = {"cmd": 'psql -h new-db -c "SELECT subname, received_lsn FROM pg_stat_subscription"'}
    return [
        {
            "id": "r1",
            "role": "user",
            "content": "We need to move the invoices tables to the new Postgres 16 cluster this "
            "week. What is the safest order of operations? The lighthouse customers cannot see "
            "any downtime.",
        },
        {
            "id": "r2",
            "role": "assistant",
            "content": "Use logical replication so writes keep flowing:\n\n"
            "1. Create a publication on the old primary.\n"
            "2. Subscribe from the new cluster and let the initial copy finish.\n"
            "3. Compare row counts, then switch over during a short read-only window.\n\n"
            "```sql\nCREATE PUBLICATION invoices_pub FOR TABLE invoices, invoice_lines;\n```",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "bash", "arguments": json.dumps(command)},
                }
            ],
        },
        {"id": "r3", "role": "tool", "tool_call_id": "c1", "content": log},
        {
            "id": "r4",
            "role": "assistant",
            "content": "The initial copy is done for all 24 monthly partitions; replication "
            "lag is under a second.",
        },
        {
            "id": "r5",
            "role": "user",
            "content": "Good. I prefer blue-green deploys for billing, so let's cut over behind "
            "the load balancer rather than editing the DSN in place.",
        },
        {
            "id": "r6",
            "role": "assistant",
            "content": "Then: bring up the green app pool pointed at the new cluster, run the "
            "smoke tests against it, and flip the load balancer. The old primary stays "
            "subscribed in reverse for a day so we can roll back.",
        },
    ]


def wait_until(predicate: Callable[[], Any], timeout: float = 30.0, step: float = 0.05) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting")
        time.sleep(step)


class Panel:
    """The Session Memory panel of a page, by role and label (as a reader finds it)."""

    def __init__(self, page: Any) -> None:
        self.page = page
        self.root = page.get_by_role("complementary", name="Session Memory")
        self.regenerate = self.root.get_by_role("button", name="Regenerate")
        self.retry = self.root.get_by_role("button", name="Retry")
        self.status = self.root.get_by_role("status")
        self.alert = self.root.get_by_role("alert")
        self.summary = self.root.get_by_label("Summary")

    def status_text(self) -> str:
        return str(self.status.inner_text())

    def snapshot(self) -> dict[str, Any]:
        """What a reader sees now, read in one go in the page."""
        value: dict[str, Any] = self.page.evaluate(
            """() => {
                const root = document.querySelector('.panel');
                const [regen, retry] = root.querySelectorAll('.panel-actions button');
                return {
                    status: root.querySelector('.status-text').textContent,
                    note: root.querySelector('.note').textContent,
                    regenerate_disabled: regen.disabled,
                    retry_shown: !retry.hidden,
                    retry_disabled: retry.disabled,
                    busy: root.getAttribute('aria-busy'),
                    summary: root.querySelector('.panel-summary').textContent,
                    t: performance.now(),
                };
            }"""
        )
        return value
