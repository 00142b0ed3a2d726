"""A home where a session's id reads as another session's exchange id: session ``many``
(300 events, exchanges ``many:1``, ``many:3`` …) and ``many:3``, ``solo:7`` — ids holding
``:`` as an older API admitted them. Sessions are stored as a version before v21 stored
them, under the id the client gave (now a client's id is a name, stored under a digest);
messages are then appended as today, by that id. ``many`` and ``solo:7`` are alice's,
``many:3`` bob's: read them as alice."""

from __future__ import annotations

from pathlib import Path

from memoir.app import Memoir
from memoir.config import Settings
from memoir.model import Harness, Session

__all__ = ["SQUATTER_TEXT", "build_ambiguous_home"]

SQUATTER_TEXT = "a squatter's session named like an exchange"


def build_ambiguous_home(home: Path) -> Path:
    settings = Settings.from_env({"MEMOIR_HOME": str(home)}, sources=())
    memoir = Memoir.open(settings)
    try:
        messages = []
        for n in range(150):
            messages.append({"role": "user", "content": f"question number {n}"})
            messages.append({"role": "assistant", "content": f"answer number {n}"})
        for sid, user in (("many", "alice"), ("many:3", "bob"), ("solo:7", "alice")):
            memoir.store.api.create(Session(id=sid, project="api", harness=Harness.API, user=user))
        memoir.append("many", messages, user="alice")
        memoir.append("many:3", [{"role": "user", "content": SQUATTER_TEXT}], user="bob")
        memoir.append("solo:7", [{"role": "user", "content": "a session of its own"}], user="alice")
    finally:
        memoir.close()
    return home
