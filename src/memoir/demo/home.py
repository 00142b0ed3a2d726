"""The demo's home: one it makes itself, never a real one.

``memoir demo`` builds its home in a new temporary folder, or with ``--home DIR`` in a
folder that is new, empty, or a home an earlier demo made. A home the demo made holds
:data:`MARKER`; one that also holds anything else — a real home, or a demo home a
``memoir sync`` of real transcripts was run on since — is refused with one line
(:class:`memoir.errors.ConfigError`), so sample data is never merged into real
conversations (doubled sessions, ambiguous id prefixes).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

from memoir.errors import ConfigError
from memoir.home_files import private_dir, private_file
from memoir.store import Store

__all__ = ["MARKER", "check_only_demo", "claim_home"]

MARKER = "memoir-demo.txt"
_MARKER_TEXT = (
    "This home was made by `memoir demo` from its bundled sample corpus.\n"
    "It holds no real conversation; delete the folder when you are done with it.\n"
)


def _refuse(home: Path, what: str) -> ConfigError:
    return ConfigError(
        f"--home {home} {what} `memoir demo` did not make; the demo writes only into a "
        "home of its own: give --home a new or empty folder, or leave it out"
    )


def claim_home(home: Path | None) -> Path:
    """The folder the demo builds in, its marker written: a new temporary folder when
    ``home`` is None, else ``home`` when it is new, empty or marked as the demo's.
    ``ConfigError`` for anything else."""
    if home is None:
        home = Path(tempfile.mkdtemp(prefix="memoir-demo-"))
    elif home.exists() and not home.is_dir():
        raise ConfigError(f"--home {home} is not a folder; give it a new or empty folder")
    elif home.is_dir() and not (home / MARKER).is_file() and any(home.iterdir()):
        raise _refuse(home, "holds files")
    private_dir(home)  # owner-only, as every home (mkdtemp's folder is 0700 already)
    with private_file(home / MARKER) as marker:
        marker.write(_MARKER_TEXT.encode("utf-8"))
    return home


def check_only_demo(home: Path, store: Store, corpus_roots: Iterable[Path]) -> None:
    """``ConfigError`` when the store of a marked ``home`` holds a conversation the demo
    did not make: a transcript read from outside the bundled corpus, or a session fed
    another way (the HTTP API, ``Memoir.append_messages``)."""
    roots = {text for root in corpus_roots for text in (str(root), str(root.resolve()))}
    sources = store.ingest.sources()
    for path in sources:
        if not any(path == root or path.startswith(root + os.sep) for root in roots):
            raise _refuse(home, f"holds transcripts (such as {path})")
    read = {state.session_id for state in sources.values()}
    for info in store.sessions.recent():
        if info.session.id not in read:
            raise _refuse(home, f"holds conversations (such as {info.session.id})")
