"""Find transcript files under the sources (one stat each), and decide each one's format and
whose session it is (pure).

Find transcript files under the sources, with one ``stat`` each (the fast path).

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

Which format a transcript is in, and whose session it is (pure).

The format is decided from the first lines: a ``{type, payload}`` record with a Codex type
means Codex; a record with a Claude Code type or a ``sessionId`` means Claude Code; a
record with a ``role`` means generic JSONL; a file whose first byte is ``[`` is a generic
JSON list. A file none of this recognises is ``binary`` when it holds NUL bytes, else of
unknown format; either way it is ignored and counted, never indexed.

Identity: the session id is the transcript's own (Claude Code: the file stem when it is a
UUID, as Claude Code names its files, else the first ``sessionId``; a subagent file gets
``<parent session>-<file stem>`` so it never collides with its parent; Codex:
``session_meta.payload.id``; generic: the file stem). The project is the first folder
under the source (the source folder's own name for files directly inside it), kept as
written (:func:`memoir.model.harness.project_name`: only separators, control characters and
leading dots made safe, with a hash suffix then). Codex keeps its rollouts in date folders,
so a Codex session's project is its cwd spelled the way Claude Code names project folders
(``/home/ann/app`` → ``-home-ann-app``) but with non-ASCII letters kept
(:func:`memoir.model.harness.cwd_project`). A Claude Code folder that is its session's cwd
in Claude Code's lossy spelling (``-home-ann-------`` for ``/home/ann/проект``) is named
from the cwd the same way, so two Cyrillic projects stay two. Session ids keep the older,
ASCII-only :func:`safe_name` (they are stored everywhere and never re-derived).
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from memoir.ingest.claude_codex import CLAUDE_TYPES, CODEX_TYPES
from memoir.ingest.gemini_aider import AIDER_HISTORY, is_gemini_record
from memoir.ingest.opencode import is_opencode_record
from memoir.ingest.records import GENERIC_ROLES, loads_lenient, split_complete_lines
from memoir.model.harness import claude_folder, cwd_project, project_name

__all__ = [
    "WHOLE_FORMATS",
    "Format",
    "FoundFile",
    "Identity",
    "chats_only",
    "detect_format",
    "discover",
    "head_records",
    "identify",
    "project_from_cwd",
    "project_name",
    "safe_name",
    "scan",
    "source_key",
    "transcript_name",
]

_SUFFIXES = (".jsonl", ".json")


@dataclass(frozen=True, slots=True)
class FoundFile:
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


def discover(sources: Iterable[Path], *, skip: Iterable[Path] = ()) -> Iterator[FoundFile]:
    """Transcript files under ``sources`` (each once, in a stable order per folder)."""
    for path, root, size, mtime in scan(sources, skip=skip):
        yield FoundFile(Path(path), Path(root), size, mtime)


HEAD_LINES = 64
_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", re.I)
_UNSAFE = re.compile(r"[^A-Za-z0-9._@+=-]")


class Format(StrEnum):
    CLAUDE = "claude-code"
    CODEX = "codex"
    GEMINI = "gemini-cli"
    GEMINI_JSON = "gemini-cli-json"  # a chat as one JSON document (Gemini CLI before JSONL)
    OPENCODE = "opencode"
    AIDER = "aider"
    GENERIC_JSONL = "generic"
    GENERIC_LIST = "generic-list"
    BINARY = "binary"
    UNKNOWN = "unknown"


# formats read whole (a JSON document cannot be read on from an offset)
WHOLE_FORMATS = frozenset({Format.GENERIC_LIST, Format.GEMINI_JSON})


@dataclass(frozen=True, slots=True)
class Identity:
    session_id: str
    project: str
    subagent: bool = False
    cwd: str | None = None


def head_records(head: bytes, limit: int = HEAD_LINES) -> list[dict[str, Any]]:
    """The JSON objects among the first ``limit`` lines of ``head`` (bad lines dropped). An
    unterminated last line counts when it parses (a finished file without a newline)."""
    lines, used = split_complete_lines(head)
    pieces = [piece for _, piece in lines[:limit]]
    if len(pieces) < limit and used < len(head):
        pieces.append(head[used:])
    out: list[dict[str, Any]] = []
    for piece in pieces:
        if not piece.strip():
            continue
        try:
            obj = loads_lenient(piece)
        except ValueError:
            continue
        if isinstance(obj, dict):
            out.append(obj)
    return out


def _record_format(obj: dict[str, Any]) -> Format | None:
    """The format one record speaks for (None: it says nothing, e.g. a type that is a list)."""
    kind, role = obj.get("type"), obj.get("role")
    kind = kind if isinstance(kind, str) else None
    if isinstance(obj.get("payload"), dict) and kind in CODEX_TYPES:
        return Format.CODEX
    if is_gemini_record(obj):  # before Claude Code: its metadata line has a sessionId too
        return Format.GEMINI
    if is_opencode_record(obj):
        return Format.OPENCODE
    if kind in CLAUDE_TYPES or "sessionId" in obj:
        return Format.CLAUDE
    if isinstance(role, str) and role in GENERIC_ROLES:
        return Format.GENERIC_JSONL
    return None


def detect_format(head: bytes, name: str = "") -> Format:
    """The format of a transcript whose first bytes are ``head`` (and whose file name is
    ``name``: an Aider history is told by its name, its lines being Markdown)."""
    if name.endswith(AIDER_HISTORY):
        return Format.AIDER if b"\x00" not in head[:8192] else Format.BINARY
    stripped = head.lstrip()
    if stripped.startswith(b"\xef\xbb\xbf"):
        stripped = stripped[3:].lstrip()
    if stripped.startswith(b"["):
        return Format.GENERIC_LIST
    records = head_records(head)
    if stripped.startswith(b"{") and not records and b'"projectHash"' in head[:4096]:
        return Format.GEMINI_JSON
    for obj in records:
        found = _record_format(obj)
        if found is not None:
            return found
    if b"\x00" in head[:8192]:
        return Format.BINARY
    return Format.UNKNOWN


def safe_name(name: str) -> str:
    """``name`` made safe as one path component (no separators, no dot-only names): what a
    session id is made of (project names: :func:`project_name`)."""
    cleaned = _UNSAFE.sub("_", name).strip(".") or "_"
    return cleaned[:200]


def project_from_cwd(cwd: str | None) -> str:
    """A Codex session's project: its cwd (``codex`` when it has none)."""
    return cwd_project(cwd, "codex")


def _agent_identity(
    fmt: Format, records: list[dict[str, Any]], path: Path, root: Path, project_root: str | None
) -> Identity:
    """Gemini CLI: the metadata line's ``sessionId``, the project its ``.project_root``
    (else its folder under ``tmp``); OpenCode: the session line's id and ``directory``;
    Aider: the folder holding the history, and an id made of its name and path."""
    if fmt is Format.AIDER:
        cwd = str(path.parent)
        digest = hashlib.blake2b(str(path).encode(), digest_size=4).hexdigest()
        return Identity(
            safe_name(f"aider-{path.parent.name}-{digest}"), cwd_project(cwd), False, cwd
        )
    if fmt is Format.OPENCODE:
        info: dict[str, Any] = next(
            (
                r["info"]
                for r in records
                if isinstance(r.get("info"), dict) and "directory" in r["info"]
            ),
            {},
        )
        sid = str(info["id"]) if isinstance(info.get("id"), str) else path.stem
        where = str(info["directory"]) if isinstance(info.get("directory"), str) else None
        return Identity(
            safe_name(sid), cwd_project(where, "opencode"), bool(info.get("parentID")), where
        )
    meta: dict[str, Any] = next(
        (r for r in records if is_gemini_record(r) and "sessionId" in r), {}
    )
    gid = str(meta["sessionId"]) if isinstance(meta.get("sessionId"), str) else path.stem
    try:
        parts = path.relative_to(root).parts
    except ValueError:
        parts = path.parts
    folder = (
        parts[parts.index("chats") - 1] if "chats" in parts[1:] else _folder_project(path, root)
    )
    subagent = meta.get("kind") == "subagent" or path.parent.name != "chats"
    project = (
        cwd_project(project_root, project_name(folder)) if project_root else project_name(folder)
    )
    return Identity(safe_name(gid), project, subagent, project_root)


def _folder_project(path: Path, root: Path) -> str:
    try:
        parts = path.relative_to(root).parts
    except ValueError:
        parts = ()
    return parts[0] if len(parts) > 1 else (root.name or "default")


def identify(
    fmt: Format,
    records: list[dict[str, Any]],
    path: Path,
    root: Path,
    project_root: str | None = None,
) -> Identity:
    """Session id and project of a transcript from its first records (pure);
    ``project_root``: the folder a Gemini CLI chat's project is (its ``.project_root``)."""
    stem = path.name.split(".", 1)[0] if path.name.startswith("rollout-") else path.stem
    if fmt in (Format.GEMINI, Format.GEMINI_JSON, Format.OPENCODE, Format.AIDER):
        return _agent_identity(fmt, records, path, root, project_root)
    if fmt is Format.CODEX:
        meta: dict[str, Any] = next(
            (
                r["payload"]
                for r in records
                if r.get("type") == "session_meta" and isinstance(r.get("payload"), dict)
            ),
            {},
        )
        sid = meta.get("id") if isinstance(meta.get("id"), str) else None
        cwd = meta.get("cwd") if isinstance(meta.get("cwd"), str) else None
        return Identity(safe_name(sid or stem), project_from_cwd(cwd), False, cwd)
    folder = _folder_project(path, root)
    project = project_name(folder)
    if fmt is not Format.CLAUDE:
        return Identity(safe_name(stem), project)
    first = next((r for r in records if isinstance(r.get("sessionId"), str)), None)
    parent = first.get("sessionId") if first else None
    cwd = first.get("cwd") if first and isinstance(first.get("cwd"), str) else None
    if cwd and folder == claude_folder(cwd):  # Claude Code's lossy spelling of the cwd
        project = cwd_project(cwd, project)
    in_subfolder = len(path.relative_to(root).parts) > 2 if path.is_relative_to(root) else False
    subagent = (
        bool(first and first.get("isSidechain"))
        or stem.startswith("agent-")
        or (in_subfolder and "subagents" in path.parts)
    )
    if subagent:
        fresh = isinstance(parent, str) and not stem.startswith(parent)
        sid = f"{parent}-{stem}" if fresh else stem
    elif _UUID.match(stem):
        sid = stem
    else:
        sid = parent if isinstance(parent, str) else stem
    return Identity(safe_name(str(sid)), project, subagent, cwd)
