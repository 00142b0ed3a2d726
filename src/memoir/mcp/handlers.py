"""The ``search`` and ``summary`` tools: arguments read, the library called, a bounded
JSON payload (``read`` is in :mod:`memoir.mcp.reading`, the memory tools in
:mod:`memoir.mcp.memory_tools`; :mod:`memoir.mcp.dispatch` routes a call to one)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from memoir.mcp.args import Args
from memoir.mcp.bounds import (
    HIT_SUMMARY_CHARS,
    MAX_QUERY_CHARS,
    MAX_RESULT_CHARS,
    fit_items,
    json_len,
    shorten,
)
from memoir.mcp.home import Home
from memoir.mcp.refs import PROJECT_BLANK, SESSION_BLANK, known_project, session_id

if TYPE_CHECKING:
    from memoir.search.hits import SearchMode

__all__ = ["search", "summary"]


def search(home: Home, args: Args) -> dict[str, Any]:
    from memoir import SearchFilters, service
    from memoir.search.masking import mask_hits
    from memoir.search.request import parse_when

    query = args.text("query", required=True, max_chars=MAX_QUERY_CHARS, strip=False)
    assert query is not None
    mode = args.choice("mode", ("text", "vector", "hybrid"), default=None)
    limit = args.integer("limit", default=10, low=1, high=50)
    # a filter given empty is refused, never dropped (that would search everything)
    project = args.text("project", max_chars=300, blank=PROJECT_BLANK)
    session = args.text("session", max_chars=300, blank=SESSION_BLANK)
    after = args.text("after", max_chars=40, blank="give a date such as 2026-03-05")
    before = args.text("before", max_chars=40, blank="give a date such as 2026-03-05")
    harnesses = ("claude-code", "codex", "gemini-cli", "opencode", "aider", "generic", "api")
    filters = SearchFilters(
        project=known_project(home, project) if project else None,
        session_id=session_id(home, session) if session else None,
        harness=args.choice("harness", harnesses, default=None, blank_ok=False),
        role=args.choice("role", ("user", "assistant", "tool"), default=None, blank_ok=False),
        after=parse_when(after, option="after") if after else None,
        before=parse_when(before, end_of_day=True, option="before") if before else None,
        include_subagents=args.flag("include_subagents", default=False),
        user=home.user,  # the server's user's conversations only, in the query
    )
    chosen = cast("SearchMode | None", mode)
    memoir = home.memoir()
    hits = memoir.search(query, filters=filters, mode=chosen, limit=limit or 10)
    if hits:  # always masked: the result goes to a model (no reveal here)
        hits = mask_hits(hits, service.exchanges_by_id(memoir, [h.exchange_id for h in hits]))
    found = [_hit(h.to_json()) for h in hits]
    note = None
    if not found:
        note = (
            "the query has no words to search for"
            if not service.has_words(query)
            else "no matches: try fewer or other words, a word* prefix, or drop a filter"
        )

    def build(kept: list[Any], dropped: int) -> dict[str, Any]:
        out: dict[str, Any] = {"hits": kept, "dropped": dropped}
        if note:
            out["note"] = note
        return out

    return fit_items(build, found)


def _hit(data: dict[str, Any]) -> dict[str, Any]:
    summary = data.get("summary")
    return {
        "session_id": data["session_id"],
        "exchange_id": data["exchange_id"],
        "timestamp": data["timestamp"],
        "project": data["project"],
        "snippet": shorten(data["snippet"], 1_000)[0],
        "summary": shorten(summary, HIT_SUMMARY_CHARS)[0] if summary else None,
    }


def summary(home: Home, args: Args) -> dict[str, Any]:
    from memoir import service
    from memoir.secrets import mask

    ref = args.text("session", required=True, max_chars=300)
    assert ref is not None
    sid = session_id(home, ref)
    memoir = home.memoir()
    info = service.find_session(memoir, sid)
    store = service.summary_store(memoir)
    state = service.summary_state(memoir, sid)
    updated = service.summary_updated_at(memoir, sid)
    coverage: dict[str, Any] | None = None
    if state.coverage is not None:
        found = store.find(sid)
        current = found.current if found is not None else None
        coverage = {
            "unit": store.unit,
            "covered": state.coverage.amount,
            "current": current,
            "complete": None if current is None else state.coverage.amount >= current,
            "last_exchange": state.coverage.last_exchange,
        }
    out: dict[str, Any] = {
        "session_id": sid,
        "project": info.project if info is not None else None,
        "state": state.kind.value,
        "summary": None,
        "left_out": 0,
        "updated_at": updated.isoformat() if updated is not None else None,
        "model": state.model,
        "coverage": coverage,
    }
    if state.has_body:
        whole = mask(state.body.strip())  # masked before it is cut, as everything shown
        room = MAX_RESULT_CHARS - json_len(out) - 200  # escapes in the body may grow it
        body, left_out = shorten(whole, room)
        out["summary"], out["left_out"] = body, left_out
        while json_len(out) > MAX_RESULT_CHARS:  # a body full of characters JSON escapes
            room = room * 3 // 4
            out["summary"], out["left_out"] = shorten(whole, room)
    else:
        out["note"] = (
            "no summary yet: `memoir sync` summarizes conversations once they have been idle"
            if state.kind.value in ("missing", "empty")
            else (state.message or "the last summary attempt failed")
        )
    return out
