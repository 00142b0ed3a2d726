"""Decide what one changed transcript needs (pure but for reading a few head bytes).

Given the file, what the index remembers about it (its :class:`SourceState`) and the
sessions already owned by other files, :func:`plan_file` says: resume at the indexed
offset, re-index from scratch (the file shrank or its indexed bytes changed), or leave the
file out (binary, unknown format, excluded project).
"""

from __future__ import annotations

import fnmatch
import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memoir.ingest.archive import archive_path, in_archive, span_hashes
from memoir.ingest.detect import Format, Identity, detect_format, head_records, identify
from memoir.ingest.discover import Candidate
from memoir.model import Harness
from memoir.store.port import SourceState

__all__ = ["HEAD_BYTES", "Plan", "Skip", "excluded", "is_rewritten", "plan_file"]

HEAD_BYTES = 256 * 1024


@dataclass(frozen=True, slots=True)
class Skip:
    reason: str  # "binary" | "unknown_format" | "excluded" | "empty"
    session_id: str | None = None
    project: str | None = None


@dataclass(frozen=True, slots=True)
class Plan:
    path: str
    fmt: Format
    identity: Identity
    archive: Path
    start: int  # byte offset to read from
    line: int  # lines before ``start``
    keep: int | None  # archive bytes already right (None: write a fresh copy)
    reset: bool
    state: dict[str, Any] = field(default_factory=dict)
    rewritten: bool = False  # the index had this file, but its indexed bytes changed

    @property
    def harness(self) -> Harness:
        if self.fmt is Format.CLAUDE:
            return Harness.CLAUDE_CODE
        if self.fmt is Format.CODEX:
            return Harness.CODEX
        return Harness.GENERIC


def excluded(project: str, patterns: tuple[str, ...]) -> bool:
    """A project is excluded when its folder name matches a pattern (fnmatch, or the
    pattern appears in it as a path ending, e.g. ``app`` excludes ``-home-ann-app``)."""
    for pattern in patterns:
        if fnmatch.fnmatchcase(project, pattern) or project.endswith("-" + pattern.strip("/")):
            return True
    return False


def is_rewritten(fd: int, size: int, state: SourceState) -> bool:
    """The file shrank, or the bytes the index covers are not the ones it saw."""
    if size < state.size or size < state.offset:
        return True
    if state.offset == 0:
        return False
    return span_hashes(fd, state.offset) != (state.prefix_hash, state.tail_hash)


def _unique(identity: Identity, path: str, owners: dict[str, str]) -> Identity:
    owner = owners.get(identity.session_id)
    if owner is None or owner == path:
        return identity
    suffix = hashlib.blake2b(path.encode(), digest_size=4).hexdigest()
    return Identity(
        f"{identity.session_id}-{suffix}", identity.project, identity.subagent, identity.cwd
    )


def plan_file(
    fd: int,
    cand: Candidate,
    state: SourceState | None,
    *,
    archive_dir: Path,
    exclude: tuple[str, ...],
    owners: dict[str, str],
    key: str | None = None,
) -> Plan | Skip:
    """``key`` is the path the index knows the transcript by (default: the file read)."""
    path = key or str(cand.path)
    if state is not None and not is_rewritten(fd, cand.size, state):
        ps = dict(state.parser_state)
        fmt = Format(ps.get("format", Format.CLAUDE.value))
        identity = Identity(
            state.session_id, str(ps.get("project", "default")), bool(ps.get("subagent")), None
        )
        if excluded(identity.project, exclude):
            return Skip("excluded", state.session_id, identity.project)
        target = (
            in_archive(archive_dir, state.archive_path)
            if state.archive_path
            else archive_path(archive_dir, identity.project, identity.session_id)
        )
        if fmt is Format.GENERIC_LIST:  # a JSON array is re-read whole
            keys = ("format", "project", "subagent")
            return Plan(
                path, fmt, identity, target, 0, 0, None, True, {k: ps[k] for k in keys if k in ps}
            )
        return Plan(
            path, fmt, identity, target, state.offset, state.line_count, state.size, False, ps
        )
    head = os.pread(fd, HEAD_BYTES, 0)
    if not head.strip():
        return Skip("empty")
    fmt = detect_format(head)
    if fmt in (Format.BINARY, Format.UNKNOWN):
        return Skip(fmt.value if fmt is Format.BINARY else "unknown_format")
    identity = identify(fmt, head_records(head), cand.path, cand.root)
    if state is not None:  # rewritten: keep the session id the index knows it by
        identity = Identity(state.session_id, identity.project, identity.subagent, identity.cwd)
    else:
        identity = _unique(identity, path, owners)
    if excluded(identity.project, exclude):
        return Skip("excluded", identity.session_id, identity.project)
    target = archive_path(archive_dir, identity.project, identity.session_id)
    fresh: dict[str, Any] = {
        "format": fmt.value,
        "project": identity.project,
        "subagent": identity.subagent,
    }
    return Plan(path, fmt, identity, target, 0, 0, None, True, fresh, rewritten=state is not None)
