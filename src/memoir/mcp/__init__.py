"""The MCP server: Memoir's search, read, summaries and memories as tools an agent calls.

``memoir mcp`` serves them over stdio with the official ``mcp`` SDK (the ``mcp`` extra).
Importing this package does not import the SDK: :func:`serve` loads it when it starts, so
every other command stays as quick as it was.

Modules: ``tools`` (names, descriptions for a model, schemas), ``args`` (a call's arguments
checked, one sentence per mistake), ``bounds`` (the result bound and how texts and lists
are cut to it), ``dispatch`` → ``handlers`` (search, summary), ``reading`` (read, paged),
``memory_tools`` (remember, memories, forget), ``home`` (the Memoir opened on first use),
``server`` (the SDK wiring), ``codex`` (Codex CLI's ``config.toml`` entry).
"""

from __future__ import annotations

from pathlib import Path

from memoir.config import Settings
from memoir.mcp.reading import Home
from memoir.mcp.tools import MAX_RESULT_CHARS, TOOLS, ToolSpec
from memoir.model.event import LOCAL_USER

__all__ = ["MAX_RESULT_CHARS", "TOOLS", "Home", "ToolSpec", "serve"]


def serve(settings: Settings, workdir: Path | None = None, user: str = LOCAL_USER) -> None:
    """Serve Memoir's tools over stdio until the client closes stdin (needs the ``mcp``
    extra; ``workdir`` is where the agent works: ``remember``'s current conversation).
    Every tool acts for ``user`` only: it reads, lists, changes and forgets that user's
    conversations and memories, and no tool takes a user argument."""
    from memoir.mcp.server import serve as run

    run(settings, workdir, user)
