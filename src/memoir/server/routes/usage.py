"""Model usage of the caller: calls, failures and tokens by day and model."""

from __future__ import annotations

from dataclasses import asdict
from datetime import UTC, datetime, timedelta
from typing import Any

from fastapi import APIRouter, Depends, Query

from memoir.app import Memoir
from memoir.llm.port import usage_totals
from memoir.server.auth import current_user, memoir_of
from memoir.server.routing import JsonRoute

__all__ = ["router"]

router = APIRouter(prefix="/api", tags=["usage"], route_class=JsonRoute)


@router.get("/usage")
def usage(
    days: int = Query(0, ge=0, le=3650, description="Only the last N days (0: all)."),
    user: str = Depends(current_user),
    memoir: Memoir = Depends(memoir_of),
) -> dict[str, Any]:
    """Calls made for the caller (recorded with its name) or for its sessions."""
    since = datetime.now(UTC) - timedelta(days=days) if days else None
    totals = usage_totals(memoir.store.usage.records(since=since, owner=user))
    return {
        "data": {
            "totals": [asdict(t) for t in totals],
            "calls": sum(t.calls for t in totals),
            "failed": sum(t.failed for t in totals),
            "input_tokens": sum(t.input_tokens for t in totals),
            "output_tokens": sum(t.output_tokens for t in totals),
        }
    }
