"""Find transcript files under the sources, with one ``stat`` each (the fast path).

Every ``*.jsonl`` and ``*.json`` file below a source counts, and every Aider history
(``.aider.chat.history.md``); hidden folders (``.git``, the archive's ``.replaced``) and
the Memoir home itself are not entered. Under a Gemini CLI folder (``~/.gemini`` or its
``tmp``) only the chats count (files in a ``chats`` folder): the logs, checkpoints and
settings beside them are no transcripts. A source that is
a file is taken as is. Symlinked folders are not followed (no loops). A symlinked
transcript is followed only when it points inside its source folder or with
``follow_symlinks`` (links are taken after the walk, and one that is a second name for a
transcript the walk found is passed over: it is read once, under its own name); one
pointing elsewhere is left out and named in ``left_out`` —
anything under a source that links to ``~/.ssh/…`` or another user's files must not end up
archived because it is called ``*.json``.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from memoir.ingest.aider import AIDER_HISTORY

__all__ = ["Candidate", "chats_only", "discover", "scan", "source_key", "transcript_name"]

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
    return (name.endswith(_SUFFIXES) and not name.startswith(".")) or name == AIDER_HISTORY


def chats_only(root: str) -> bool:
    """``root`` is Gemini CLI's folder (``.gemini``) or its ``tmp``: only files in a
    ``chats`` folder under it are transcripts (pure)."""
    parts = Path(root).parts
    return parts[-1:] == (".gemini",) or parts[-2:] == (".gemini", "tmp")


@dataclass(frozen=True, slots=True)
class _Links:
    """How a walk treats symlinked transcripts (see the module)."""

    root: str  # the source folder, symlinks resolved
    follow: bool
    left_out: list[str]
    deferred: list[tuple[str, int, int]] = field(default_factory=list)

    def second_name(self, path: str, source: str, seen: set[str]) -> bool:
        """``path`` links to a transcript under ``source`` that the walk already found."""
        target = os.path.realpath(path)
        if os.path.commonpath([target, self.root]) != self.root:
            return False
        return os.path.join(source, os.path.relpath(target, self.root)) in seen

    def broken(self, path: str) -> bool:
        """``path`` is a symlink whose target cannot be read as a file (it does not exist,
        or the links loop): named in ``left_out``, as a link left out is."""
        why = broken_link(path)
        if why is not None:
            self.left_out.append(f"{source_key(path)}: {why}")
        return why is not None

    def allows(self, path: str) -> bool:
        if self.follow:
            return True
        target = os.path.realpath(path)
        try:
            inside = os.path.commonpath([target, self.root]) == self.root
        except ValueError:  # different drives
            inside = False
        if not inside:
            self.left_out.append(
                f"{source_key(path)} -> {source_key(target)}: a symlink out of its source "
                "folder (--follow-symlinks reads it)"
            )
        return inside


def broken_link(path: str) -> str | None:
    """Why the symlink ``path`` leads to no file: a dangling link (its target does not
    exist) or a loop of links; None when it leads somewhere."""
    try:
        os.stat(path)
    except FileNotFoundError:
        try:
            target = os.readlink(path)
        except OSError:
            target = "?"
        return f"a dangling symlink (its target {source_key(target)} does not exist)"
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "a symlink loop (it leads back to itself)"
        return None  # not readable: read (and reported) as any other file
    return None


def _walk(
    folder: str,
    skip: set[str],
    errors: list[str],
    links: _Links,
    unread: list[str],
    chats: bool = False,
) -> Iterator[tuple[str, int, int]]:
    """``chats``: only files in a ``chats`` folder (or below one) are taken."""
    try:
        entries = list(os.scandir(folder))
    except FileNotFoundError:
        return  # removed while we walked: nothing to read, nothing lost
    except OSError as exc:
        errors.append(f"{source_key(folder)}: folder not readable: {exc.strerror or exc}")
        unread.append(folder)
        return
    for entry in entries:
        try:
            if entry.is_dir(follow_symlinks=False):
                if not entry.name.startswith(".") and entry.path not in skip:
                    inner = chats and entry.name != "chats"
                    yield from _walk(entry.path, skip, errors, links, unread, inner)
            elif chats or (
                transcript_name(entry.name) and entry.is_symlink() and links.broken(entry.path)
            ):
                continue
            elif transcript_name(entry.name) and entry.is_file():
                st = entry.stat()
                if entry.is_symlink():
                    if links.allows(entry.path):
                        links.deferred.append((entry.path, st.st_size, st.st_mtime_ns))
                    continue
                yield entry.path, st.st_size, st.st_mtime_ns
        except OSError:
            continue


def scan(
    sources: Iterable[Path],
    *,
    skip: Iterable[Path] = (),
    errors: list[str] | None = None,
    follow_symlinks: bool = False,
    left_out: list[str] | None = None,
    unreadable: list[str] | None = None,
) -> Iterator[tuple[str, str, int, int]]:
    """(path, source root, size, mtime_ns) of every transcript file under ``sources`` (each
    once). Plain strings: the nothing-to-do sync builds no Path objects. A folder that
    cannot be listed, or a source that does not exist, is noted in ``errors`` (when given)
    and passed over; a symlinked transcript pointing out of its source, unless
    ``follow_symlinks``, in ``left_out`` (so is a dangling symlink or a symlink loop);
    folders that could not be listed, in ``unreadable`` too (``verify`` lists them)."""
    errors = [] if errors is None else errors
    left_out = [] if left_out is None else left_out
    unreadable = [] if unreadable is None else unreadable
    skip_set = {str(p) for p in skip}
    seen: set[str] = set()
    for source in sources:
        root = os.path.abspath(source)
        links: _Links | None = None
        if os.path.isfile(root):
            st = os.stat(root)
            found: Iterable[tuple[str, int, int]] = [(root, st.st_size, st.st_mtime_ns)]
            base = os.path.dirname(root)
        elif os.path.isdir(root):
            links = _Links(os.path.realpath(root), follow_symlinks, left_out)
            walk = _walk(root, skip_set, errors, links, unreadable, chats_only(root))
            found, base = walk, root
        elif os.path.exists(root):  # a device, a pipe, a socket: nothing to walk or read
            errors.append(f"{root}: source is not a folder (nor a transcript file)")
            continue
        else:  # a source named in MEMOIR_SOURCES with a typo would otherwise pass unseen
            errors.append(f"{root}: source not found (no such file or folder)")
            continue
        for path, size, mtime in found:
            if path not in seen:
                seen.add(path)
                yield path, base, size, mtime
        if links is None:
            continue
        for path, size, mtime in links.deferred:  # after the walk: see the module
            if path not in seen and not links.second_name(path, root, seen):
                seen.add(path)
                yield path, base, size, mtime


def discover(sources: Iterable[Path], *, skip: Iterable[Path] = ()) -> Iterator[Candidate]:
    """Transcript files under ``sources`` (each once, in a stable order per folder)."""
    for path, root, size, mtime in scan(sources, skip=skip):
        yield Candidate(Path(path), Path(root), size, mtime)
