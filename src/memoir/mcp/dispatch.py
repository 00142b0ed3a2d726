"""A tool call routed to what the tool does: synchronous and SDK-free.

The server runs :func:`call` on a worker thread and turns a
:class:`memoir.errors.MemoirError` into a tool error.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from memoir.errors import ConfigError
from memoir.mcp.args import Args
from memoir.mcp.handlers import search, summary
from memoir.mcp.home import Home
from memoir.mcp.memory_tools import forget, memories, remember
from memoir.mcp.reading import read
from memoir.mcp.tools import TOOLS, spec

__all__ = ["call"]

Handler = Callable[[Home, Args], dict[str, Any]]
_HANDLERS: dict[str, Handler] = {
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
