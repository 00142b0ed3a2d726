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

__all__ = ["Candidate", "discover", "scan", "source_key", "transcript_name"]

_SUFFIXES = (".jsonl", ".json")


@dataclass(frozen=True, slots=True)
class Candidate:
    path: Path
    root: Path
    size: int
    mtime_ns: int


def source_key(path: str | Path) -> str:
    """The name the index knows a transcript by: its path, with bytes that are not UTF-8
    (which the file system allows and no database column takes) written as ``\\xNN``."""
    text = str(path)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return os.fsencode(text).decode("utf-8", "backslashreplace")
    return text


def transcript_name(name: str) -> bool:
    return name.endswith(_SUFFIXES) and not name.startswith(".")


def _walk(folder: str, skip: set[str], errors: list[str]) -> Iterator[tuple[str, int, int]]:
    try:
        entries = list(os.scandir(folder))
    except FileNotFoundError:
        return  # removed while we walked: nothing to read, nothing lost
    except OSError as exc:
        errors.append(f"{source_key(folder)}: folder not readable: {exc.strerror or exc}")
        return
    for entry in entries:
        try:
            if entry.is_dir(follow_symlinks=False):
                if not entry.name.startswith(".") and entry.path not in skip:
                    yield from _walk(entry.path, skip, errors)
            elif transcript_name(entry.name) and entry.is_file():
                st = entry.stat()
                yield entry.path, st.st_size, st.st_mtime_ns
        except OSError:
            continue


def scan(
    sources: Iterable[Path], *, skip: Iterable[Path] = (), errors: list[str] | None = None
) -> Iterator[tuple[str, str, int, int]]:
    """(path, source root, size, mtime_ns) of every transcript file under ``sources`` (each
    once). Plain strings: the nothing-to-do sync builds no Path objects. A folder that
    cannot be listed, or a source that does not exist, is noted in ``errors`` (when given)
    and passed over."""
    errors = [] if errors is None else errors
    skip_set = {str(p) for p in skip}
    seen: set[str] = set()
    for source in sources:
        root = os.path.abspath(source)
        if os.path.isfile(root):
            st = os.stat(root)
            found: Iterable[tuple[str, int, int]] = [(root, st.st_size, st.st_mtime_ns)]
            base = os.path.dirname(root)
        elif os.path.isdir(root):
            found, base = _walk(root, skip_set, errors), root
        else:  # a source named in MEMOIR_SOURCES with a typo would otherwise pass unseen
            errors.append(f"{root}: source not found (no such file or folder)")
            continue
        for path, size, mtime in found:
            if path not in seen:
                seen.add(path)
                yield path, base, size, mtime


def discover(sources: Iterable[Path], *, skip: Iterable[Path] = ()) -> Iterator[Candidate]:
    """Transcript files under ``sources`` (each once, in a stable order per folder)."""
    for path, root, size, mtime in scan(sources, skip=skip):
        yield Candidate(Path(path), Path(root), size, mtime)
