"""The remember path, followed call by call (issue 36, point 3): how many memoir modules
``Memoir.remember`` enters on its way to the store and back.

    PYTHONPATH=src .venv/bin/python bench/remember_path.py [--json] [--modules]
        [--database-url postgresql://…/an_empty_database]

A throwaway home on SQLite, or on an empty PostgreSQL database with ``--database-url``
(``MEMOIR_LLM=offline``, no embedder), one session whose user asks
to remember something; then ``m.remember(session)`` runs under ``sys.setprofile`` (and
``threading.setprofile``, as the memory lane may hand work to a thread). Every call and
return event of a ``memoir.*`` frame is recorded with its module. Printed:

- ``modules`` — the distinct memoir modules entered;
- ``transitions`` — calls whose caller is a memoir frame of another module (the path
  "enters … N times back and forth");
- ``crossing returns`` — returns into a memoir frame of another module;
- ``to the store`` — the same counts for the spine alone: the memoir frames that were on
  the stack when the database was called (an ``execute``, ``executemany`` or ``commit``
  of a driver connection or cursor: sqlite3's C functions, psycopg's own Python ones),
  i.e. the path from ``Memoir`` to the store and back,
  without the helpers that compute along the way and return (the extractor's reading of
  the words, the secret screen, the codecs).

Lazy imports done during the call are not counted (one warm-up ``remember`` runs first on
another session, so the measured call imports nothing).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
from collections import Counter
from pathlib import Path
from types import FrameType
from typing import Any

from memoir import Memoir
from memoir.config import Settings


def _module(frame: FrameType | None) -> str | None:
    if frame is None:
        return None
    name = frame.f_globals.get("__name__", "")
    return name if isinstance(name, str) and name.startswith("memoir") else None


_DB_CALLS = frozenset({"execute", "executemany", "executescript", "commit"})


def _is_db_call(fn: Any) -> bool:
    owner = getattr(fn, "__self__", None)
    if owner is None or getattr(fn, "__name__", "") not in _DB_CALLS:
        return False
    kind = type(owner)
    return kind.__module__.split(".")[0] in ("sqlite3", "psycopg")


class Trace:
    """Call/return events of memoir frames, counted by module; and the frames that were
    on the stack when the database was called (the spine to the store)."""

    def __init__(self) -> None:
        self.entered: Counter[str] = Counter()
        self.transitions = 0
        self.crossing_returns = 0
        self.live: dict[int, list[Any]] = {}  # frame id -> [module, caller module, reaches]
        self.spine: Counter[str] = Counter()
        self.spine_transitions = 0
        self.lock = threading.Lock()

    def __call__(self, frame: FrameType, event: str, arg: Any) -> None:
        if event == "c_call":
            if _is_db_call(arg):
                self._reaches(frame)
            return
        if event == "call" and _enters_psycopg(frame):
            self._reaches(frame.f_back)
        if event not in ("call", "return"):
            return
        here = _module(frame)
        if here is None:
            return
        other = _module(frame.f_back)
        with self.lock:
            if event == "call":
                self.entered[here] += 1
                self.live[id(frame)] = [here, other, False]
                if other is not None and other != here:
                    self.transitions += 1
                return
            if other is not None and other != here:
                self.crossing_returns += 1
            rec = self.live.pop(id(frame), None)
            if rec is not None and rec[2]:
                self.spine[here] += 1
                if other is not None and other != here:
                    self.spine_transitions += 1

    def _reaches(self, frame: FrameType | None) -> None:
        """Every memoir frame on the stack from ``frame`` down reached the database."""
        with self.lock:
            while frame is not None:
                rec = self.live.get(id(frame))
                if rec is not None:
                    rec[2] = True
                frame = frame.f_back


def _enters_psycopg(frame: FrameType) -> bool:
    """A call of psycopg's own (Python) ``execute``, ``executemany`` or ``commit`` from
    outside psycopg: sqlite3's are C functions (``c_call``), psycopg's are not."""
    if frame.f_code.co_name not in _DB_CALLS or frame.f_back is None:
        return False
    inside = str(frame.f_globals.get("__name__", "")).startswith("psycopg")
    return inside and not str(frame.f_back.f_globals.get("__name__", "")).startswith("psycopg")


def _chat(text: str) -> list[dict[str, Any]]:
    return [
        {"id": "u1", "role": "user", "content": text},
        {"id": "a1", "role": "assistant", "content": "Noted."},
    ]


def measure(database_url: str | None = None) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        env = {
            "MEMOIR_HOME": str(Path(tmp) / "home"),
            "MEMOIR_LLM": "offline",
            "MEMOIR_EMBEDDER": "none",
        }
        if database_url:  # an empty database of its own: the sessions' names are fixed
            env["MEMOIR_DATABASE_URL"] = database_url
        settings = Settings.from_env(env, sources=())
        with Memoir.open(settings) as m:
            m.append("warm", _chat("Remember that I prefer tea over coffee."), project="p")
            m.remember("warm")  # lazy imports and first-use set-up happen here
            m.append("s1", _chat("Remember that we deploy on Fridays."), project="p")
            trace = Trace()
            threading.setprofile(trace)
            sys.setprofile(trace)
            try:
                kept = m.remember("s1")
            finally:
                sys.setprofile(None)
                threading.setprofile(None)  # type: ignore[arg-type]
            assert kept.receipt is not None and kept.items, kept
    return {
        "outcome": kept.receipt.outcome,
        "items": len(kept.items),
        "modules": len(trace.entered),
        "transitions": trace.transitions,
        "crossing_returns": trace.crossing_returns,
        "entered": dict(sorted(trace.entered.items())),
        "to_store": {
            "modules": len(trace.spine),
            "transitions": trace.spine_transitions,
            "entered": dict(sorted(trace.spine.items())),
        },
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--modules", action="store_true", help="list the modules entered")
    parser.add_argument(
        "--database-url", help="an empty PostgreSQL database to run on (default: SQLite)"
    )
    args = parser.parse_args(argv)
    out = measure(args.database_url)
    if args.json:
        print(json.dumps(out, indent=2))
        return
    print(f"remember -> {out['outcome']} ({out['items']} item(s))")
    print(f"memoir modules entered: {out['modules']}")
    print(f"enters them {out['transitions']} times back and forth")
    print(f"returns crossing modules: {out['crossing_returns']}")
    if args.modules:
        for name, calls in out["entered"].items():
            print(f"  {calls:6d}  {name}")
    spine = out["to_store"]
    print(
        f"to the store and back: {spine['modules']} modules, "
        f"{spine['transitions']} calls across them"
    )
    if args.modules:
        for name, calls in spine["entered"].items():
            print(f"  {calls:6d}  {name}")


if __name__ == "__main__":
    main()
