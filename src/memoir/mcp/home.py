"""The Memoir home a server answers from, opened on the first tool call, acting for the one
user the server was started for (``memoir mcp --user NAME``; no tool takes a user).

Opening the store is left until a tool needs it, so the ``initialize`` round trip pays only
for the SDK's import. A home with no archive yet is not created: each call answers "run
`memoir sync`" until one exists (a mistyped ``MEMOIR_HOME`` must not become an empty home).
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING

from memoir.config import Settings
from memoir.errors import NotFound
from memoir.model.event import LOCAL_USER

if TYPE_CHECKING:
    from memoir.app import Memoir

__all__ = ["Home"]


class Home:
    """``settings``: read once at the edge (``memoir mcp``). ``workdir``: the directory the
    agent works in (Claude Code's project directory, else the server's working
    directory), where ``remember`` looks for the current conversation. ``user``: whose
    conversations and memories every tool reads and changes (default ``local``, the owner
    of the sessions synced from this machine)."""

    def __init__(
        self, settings: Settings, workdir: Path | None = None, user: str = LOCAL_USER
    ) -> None:
        self.settings = settings
        self.workdir = workdir
        self.user = user
        self._memoir: Memoir | None = None
        self._lock = threading.Lock()

    def memoir(self) -> Memoir:
        """The open Memoir; ``NotFound`` while the home has no archive (tool calls run on
        worker threads: the first one opens it, the others wait for it)."""
        with self._lock:
            if self._memoir is None:
                from memoir.app import Memoir
                from memoir.service import database_file

                path = database_file(self.settings)
                if path is not None and not path.exists():
                    raise NotFound(
                        f"no Memoir archive at {self.settings.home} yet; run `memoir sync` "
                        "to make one (or set MEMOIR_HOME to the home you use)"
                    )
                self._memoir = Memoir.open(self.settings, user=self.user)
            return self._memoir

    def close(self) -> None:
        with self._lock:
            if self._memoir is not None:
                self._memoir.close()
                self._memoir = None
