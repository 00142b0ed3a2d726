"""The MCP server: Memoir's tools over stdio, on the official ``mcp`` SDK's low-level server.

The SDK is imported here only (``memoir[mcp]``), so no other command pays for it. Each
call runs on a worker thread (the library is synchronous; the event loop keeps answering
pings and cancellations meanwhile) and always ends in a result: the tool's JSON text, or a
tool error (``isError``) with one sentence — a bad argument, an unknown session, a home with
no archive — never a traceback; anything unexpected is logged to stderr (the client's log)
and the server goes on serving.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from memoir import __version__
from memoir.config import Settings
from memoir.errors import MemoirError
from memoir.mcp.bounds import MAX_RESULT_CHARS, to_text
from memoir.mcp.dispatch import call
from memoir.mcp.home import Home
from memoir.mcp.tools import INSTRUCTIONS, TOOLS, ToolSpec
from memoir.model.event import LOCAL_USER

__all__ = ["answer", "build_server", "serve"]

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

    # arguments are checked by memoir.mcp.args (one clear sentence per mistake)
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
