"""The memory tools: ``remember`` (extract now), ``memories`` (recall, list) and ``forget``.

``recall_items`` is the one place the ``memories`` tool's query path lives: ranked recall
(``Memoir.recall``: full text over content and keys, fused with meaning when an embedder
is installed).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

from memoir import service
from memoir.errors import Busy, ConfigError, MemoirError, NotFound
from memoir.mcp.args import Args
from memoir.mcp.bounds import MAX_QUERY_CHARS, fit_items, shorten
from memoir.mcp.home import Home
from memoir.mcp.refs import PROJECT_BLANK, SESSION_BLANK, known_project, session_id
from memoir.mcp.tools import KINDS
from memoir.model.event import LOCAL_USER

if TYPE_CHECKING:
    from memoir.app import Memoir
    from memoir.service import MemoryItem

__all__ = ["forget", "memories", "recall_items", "remember"]


def recall_items(
    memoir: Memoir,
    *,
    query: str | None,
    keys: Sequence[str],
    project: str | None,
    session_id: str | None,
    kind: str | None,
    limit: int,
) -> list[MemoryItem]:
    """Live items passing the filters, ranked by ``Memoir.recall`` over the query and the
    keys (when given; full text fused with meaning), else the newest. ``session_id``
    keeps the items with evidence in that session."""
    wanted = " ".join([query or "", *keys]).strip()
    kinds = (kind,) if kind else ()
    pool = limit if session_id is None else max(limit * 10, 200)
    hits = memoir.recall(wanted, project=project, kinds=kinds, limit=pool, user=memoir.user)
    items = [h.item for h in hits]
    if session_id is not None:
        items = [i for i in items if any(s.session_id == session_id for s in i.sources)]
    return items[:limit]


def _items_json(memoir: Memoir, items: list[MemoryItem]) -> list[dict[str, Any]]:
    from memoir.memory.recall import exchange_finder, item_json

    find = exchange_finder(partial(service.exchanges_of, memoir))
    shown = []
    for item in items:
        data = item_json(item, find)
        for unwanted in ("operation_id", "observed_at"):  # bookkeeping, not for the agent
            data.pop(unwanted, None)
        shown.append(data)
    return shown


def memories(home: Home, args: Args) -> dict[str, Any]:
    query = args.text("query", max_chars=MAX_QUERY_CHARS)
    keys = args.words("keys")
    project = args.text("project", max_chars=300, blank=PROJECT_BLANK)
    session = args.text("session", max_chars=300, blank=SESSION_BLANK)
    kind = args.choice("kind", KINDS, default=None, blank_ok=False)
    limit = args.integer("limit", default=20, low=1, high=100) or 20
    memoir = home.memoir()
    found = recall_items(
        memoir,
        query=query,
        keys=keys,
        project=known_project(home, project) if project else None,
        session_id=session_id(home, session) if session else None,
        kind=kind,
        limit=limit,
    )
    data = _items_json(memoir, found)
    note = None
    if not data:
        note = (
            "no memory item matches; try other words or fewer filters"
            if query or keys
            else "no memories yet: they are saved by `remember` and by compaction"
        )

    def build(kept: list[Any], dropped: int) -> dict[str, Any]:
        out: dict[str, Any] = {"items": kept, "dropped": dropped}
        if note:
            out["note"] = note
        return out

    return fit_items(build, data)


def remember(home: Home, args: Args) -> dict[str, Any]:
    ref = args.text("session", max_chars=300, blank=SESSION_BLANK)  # not "this session"
    turn = args.integer("turn", default=None, low=1, high=2**53)
    memoir = home.memoir()
    # sessions synced from this machine's transcripts are the local user's: another
    # user's server does not sync them (its conversations come from the API)
    if not service.read_only(memoir) and home.user == LOCAL_USER:
        try:  # what the user said a moment ago is in the transcript, not yet in the index
            memoir.sync()
        except Busy:
            pass  # a sync is running (the session-start hook's): it indexes the same files
    sid = session_id(home, ref) if ref else _current_session(home, memoir)
    outcome = memoir.remember(sid, turn)
    receipt = outcome.receipt
    if receipt is None:
        why = outcome.error or outcome.waiting or "unknown"
        raise MemoirError(
            f"not remembered yet: {why} (it is retried by the next extraction or "
            "`memoir memories recover`)"
        )
    items = _items_json(memoir, list(outcome.items))

    def build(kept: list[Any], dropped: int) -> dict[str, Any]:
        return {
            "session_id": sid,
            "outcome": receipt.outcome,
            "reason": receipt.reason or None,
            "items": kept,
            "dropped": dropped,
        }

    return fit_items(build, items)


def _current_session(home: Home, memoir: Memoir) -> str:
    """The most recently active main conversation started in the agent's directory."""
    if home.workdir is None:
        raise ConfigError("remember needs `session` here (a session_id from `search`)")
    here = os.path.realpath(home.workdir)
    for found in service.recent_sessions(memoir, 500):
        if found.cwd and not found.flags.subagent and os.path.realpath(found.cwd) == here:
            return found.id
    raise NotFound(
        f"no archived conversation was started in {here}; pass `session` "
        "(a session_id from `search`)"
    )


def forget(home: Home, args: Args) -> dict[str, Any]:
    ref = args.text("id", required=True, max_chars=200)
    assert ref is not None
    memoir = home.memoir()
    item = service.memory_item(memoir, ref)  # another user's: as none at all
    if item is None:
        raise NotFound(f"no memory item {ref!r} (the `memories` tool lists their ids)")
    service.forget_item(memoir, item.id)
    return {"forgotten": item.id, "content": shorten(item.content, 4_000)[0]}
