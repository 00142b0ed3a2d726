"""The MCP server: Memoir's tools over stdio, on the official ``mcp`` SDK's low-level server,
and the handlers its calls are routed to.

The SDK is imported here only (``memoir[mcp]``), so no other command pays for it. Each
call runs on a worker thread (the library is synchronous; the event loop keeps answering
pings and cancellations meanwhile) and always ends in a result: the tool's JSON text, or a
tool error (``isError``) with one sentence — a bad argument, an unknown session, a home with
no archive — never a traceback; anything unexpected is logged to stderr (the client's log)
and the server goes on serving.

:func:`call` routes a tool call to what the tool does (synchronous and SDK-free): the
``search`` and ``summary`` tools, the memory tools ``remember`` (extract now),
``memories`` (recall, list) and ``forget``, and ``read`` (:mod:`memoir.mcp.reading`). Each
reads its arguments, calls the library and returns a bounded JSON payload.
``recall_items`` is the one place the ``memories`` tool's query path lives: ranked recall
(``Memoir.recall``: full text over content and keys, fused with meaning when an embedder
is installed).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import anyio
import mcp.types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from memoir import __version__, service
from memoir.config import Settings
from memoir.errors import Busy, ConfigError, MemoirError, NotFound
from memoir.mcp.reading import PROJECT_BLANK, SESSION_BLANK, Home, known_project, read, session_id
from memoir.mcp.tools import (
    HIT_SUMMARY_CHARS,
    INSTRUCTIONS,
    KINDS,
    MAX_QUERY_CHARS,
    MAX_RESULT_CHARS,
    TOOLS,
    Args,
    ToolSpec,
    fit_items,
    json_len,
    shorten,
    spec,
    to_text,
)
from memoir.model.event import LOCAL_USER

if TYPE_CHECKING:
    from memoir.app import Memoir
    from memoir.search.hits import SearchMode
    from memoir.service import MemoryItem

__all__ = [
    "answer",
    "build_server",
    "call",
    "forget",
    "memories",
    "recall_items",
    "remember",
    "search",
    "serve",
    "summary",
]


def search(home: Home, args: Args) -> dict[str, Any]:
    from memoir import SearchFilters, service
    from memoir.search.hits import mask_hits
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
    shown = []
    for data in service.memories_json(memoir, items):
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


ToolHandler = Callable[[Home, Args], dict[str, Any]]
_HANDLERS: dict[str, ToolHandler] = {
    "search": search,
    "read": read,
    "summary": summary,
    "remember": remember,
    "memories": memories,
    "forget": forget,
}


def call(home: Home, name: str, raw: Mapping[str, Any] | None) -> dict[str, Any]:
    """Run tool ``name`` with the arguments a client sent; the payload to return."""
    tool = spec(name)
    if tool is None or name not in _HANDLERS:
        names = ", ".join(t.name for t in TOOLS)
        raise ConfigError(f"there is no tool {name!r}; the tools are: {names}")
    return _HANDLERS[name](home, Args(name, raw, tool.arguments))


log = logging.getLogger(__name__)


def _tool(spec: ToolSpec) -> types.Tool:
    return types.Tool(
        name=spec.name,
        title=spec.title,
        description=spec.description,
        inputSchema=spec.input_schema(),
        annotations=types.ToolAnnotations(
            title=spec.title,
            readOnlyHint=spec.read_only,
            destructiveHint=spec.destructive,
            idempotentHint=spec.idempotent,
            openWorldHint=False,
        ),
    )


def _error(message: str) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=message)], isError=True
    )


def _sentence(message: str) -> str:
    """An error's message on one line (a model reads it; a traceback never reaches it)."""
    return " ".join(message.split()) or "the call failed"


def answer(home: Home, name: str, arguments: dict[str, Any] | None) -> types.CallToolResult:
    """One tool call, to its result or a tool error (synchronous: run on a worker thread)."""
    try:
        text = to_text(call(home, name, arguments))
    except MemoirError as exc:
        return _error(_sentence(str(exc)))
    except Exception as exc:  # a bug, or a driver error nobody translated: log it, go on
        log.exception("tool %s failed", name)
        detail = _sentence(f"{type(exc).__name__}: {exc}")[:300]
        return _error(f"{name} failed unexpectedly ({detail}); the server's log has the details")
    if len(text) > MAX_RESULT_CHARS:  # the tools fit their results; this is a last guard
        log.error("tool %s built a %d-character result", name, len(text))
        return _error(f"{name} built a result over the {MAX_RESULT_CHARS:,}-character bound")
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


def build_server(home: Home) -> Server[Any, Any]:
    server: Server[Any, Any] = Server("memoir", version=__version__, instructions=INSTRUCTIONS)
    tools = [_tool(t) for t in TOOLS]

    @server.list_tools()
    async def list_tools() -> list[types.Tool]:
        return tools

    # arguments are checked by memoir.mcp.tools (one clear sentence per mistake)
    @server.call_tool(validate_input=False)
    async def call_tool(name: str, arguments: dict[str, Any] | None) -> types.CallToolResult:
        result: types.CallToolResult = await anyio.to_thread.run_sync(answer, home, name, arguments)
        return result

    return server


def serve(settings: Settings, workdir: Path | None = None, user: str = LOCAL_USER) -> None:
    """Answer MCP requests on stdin/stdout, for ``user``, until the client closes stdin."""
    home = Home(settings, workdir, user)
    server = build_server(home)

    async def run() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    try:
        anyio.run(run)
    finally:
        home.close()
