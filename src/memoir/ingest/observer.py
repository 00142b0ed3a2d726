"""What a sync tells whoever keeps something derived from a conversation.

Ingest knows nothing of what that is; the composition root (``memoir.app``) hands in the
summaries' upkeep. Each call is made at the moment of the change, inside the sync (under
its lock), right after what it reports is committed — so no crash can fall between the
change and the caller's reaction that a later sync would not repair: a rewritten file is
told once its new rows are in; a removed conversation (the do-not-index marker, a purge)
before the file is remembered as ignored, so a sync that stops in between removes it, and
tells, again.
"""

from __future__ import annotations

from typing import Protocol

__all__ = ["SyncObserver"]


class SyncObserver(Protocol):
    def rewritten(self, session_id: str) -> None:
        """The session's transcript was rewritten and is indexed anew from its start:
        what was derived from the old content may tell of what is gone."""
        ...

    def removed(self, session_id: str, project: str) -> None:
        """The session's rows and archived copies were removed (it carries the
        do-not-index marker, or its project was purged): nothing derived may stay."""
        ...
