"""Files sync looked at and deliberately left out of the index.

A binary file, a file in no known format, a file in an excluded project, a conversation
carrying the do-not-index marker and one of Memoir's own model calls through the user's
agent CLI (``memoir_agent``) are remembered in ``<home>/state/ingest-ignored.json``
with the size and mtime seen, so the next sync skips them on ``stat`` alone (no session
rows exist for them, hence no source state in the store). ``verify`` lists them.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

from memoir.home_files import private_dir, write_text_atomic

__all__ = ["IgnoredFile", "IgnoredFiles"]


@dataclass(frozen=True, slots=True)
class IgnoredFile:
    path: str
    size: int
    mtime_ns: int
    # "binary" | "unknown_format" | "excluded" | "no_index" | "unreadable" | "too_large"
    # | "memoir_agent"
    reason: str
    session_id: str | None = None
    project: str | None = None


class IgnoredFiles:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.items: dict[str, IgnoredFile] = {}
        self.dirty = False
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
        except (FileNotFoundError, ValueError, OSError):
            raw = {}
        if isinstance(raw, dict):
            for key, value in raw.items():
                try:
                    self.items[key] = IgnoredFile(**value)
                except TypeError:
                    continue

    def unchanged(self, path: str, size: int, mtime_ns: int) -> IgnoredFile | None:
        item = self.items.get(path)
        if item is not None and item.size == size and item.mtime_ns == mtime_ns:
            return item
        return None

    def get(self, path: str) -> IgnoredFile | None:
        return self.items.get(path)

    def add(self, item: IgnoredFile) -> None:
        if self.items.get(item.path) != item:
            self.items[item.path] = item
            self.dirty = True

    def discard(self, path: str) -> None:
        if self.items.pop(path, None) is not None:
            self.dirty = True

    def save(self) -> None:
        if not self.dirty:
            return
        private_dir(self.path.parent)
        data = {k: asdict(v) for k, v in sorted(self.items.items())}
        write_text_atomic(self.path, json.dumps(data, indent=1))
        self.dirty = False
