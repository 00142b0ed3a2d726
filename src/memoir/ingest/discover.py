"""Find transcript files under the sources, with one ``stat`` each (the fast path).

Every ``*.jsonl`` and ``*.json`` file below a source counts; hidden folders (``.git``,
the archive's ``.replaced``) and the Memoir home itself are not entered. A source that is
a file is taken as is. Symlinked folders are not followed (no loops).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Candidate", "discover", "transcript_name"]

_SUFFIXES = (".jsonl", ".json")


@dataclass(frozen=True, slots=True)
class Candidate:
    path: Path
    root: Path
    size: int
    mtime_ns: int


def transcript_name(name: str) -> bool:
    return name.endswith(_SUFFIXES) and not name.startswith(".")


def _walk(root: Path, folder: str, skip: set[str]) -> Iterator[Candidate]:
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    for entry in entries:
        try:
            if entry.is_dir(follow_symlinks=False):
                if not entry.name.startswith(".") and entry.path not in skip:
                    yield from _walk(root, entry.path, skip)
            elif transcript_name(entry.name) and entry.is_file():
                st = entry.stat()
                yield Candidate(Path(entry.path), root, st.st_size, st.st_mtime_ns)
        except OSError:
            continue


def discover(sources: Iterable[Path], *, skip: Iterable[Path] = ()) -> Iterator[Candidate]:
    """Transcript files under ``sources`` (each once, in a stable order per folder)."""
    skip_set = {str(p) for p in skip}
    seen: set[str] = set()
    for source in sources:
        root = Path(os.path.abspath(source))
        if root.is_file():
            st = root.stat()
            found: Iterable[Candidate] = [Candidate(root, root.parent, st.st_size, st.st_mtime_ns)]
        elif root.is_dir():
            found = _walk(root, str(root), skip_set)
        else:
            continue
        for cand in found:
            key = str(cand.path)
            if key not in seen:
                seen.add(key)
                yield cand
