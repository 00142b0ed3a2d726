"""A small cache that keeps the per-sync archive scan from re-reading summary files.

Per project folder it keeps the folder's mtime, the conversations that may need work
("watch" rows: state and all) and the settled ones (a current real summary or an empty
file) packed as ``session\tcovered`` lines. While a folder's mtime is unchanged no file was
added, removed or renamed in it — every summary write replaces its file by rename — so
the folder is not listed and no summary file is read.

Growth: Memoir's archive copy grows by in-place appends, which leave the folder's mtime
alone, so by default every settled transcript is still stat-ed and compared with its
coverage (one ``stat`` each). When the archive writer declares that it bumps the folder's
mtime on every write (``memoir.ingest.archive.BUMPS_FOLDER_MTIME``), settled transcripts
of unchanged folders are not even stat-ed.

Safety nets: a folder modified within the last few seconds is never trusted (mtime
granularity), and the whole archive is re-read when the cache is older than
``FULL_RESCAN_MS`` (another tool's in-place edit is noticed within the hour). The cache is
advisory: missing, unreadable or from another version, it is ignored.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memoir.home_files import private_dir, write_text_atomic
from memoir.summaries.state import Coverage, Failure, SummaryKind, SummaryState

__all__ = [
    "FULL_RESCAN_MS",
    "HOT_DIR_NS",
    "CachedDir",
    "Row",
    "ScanCache",
    "pack_settled",
    "row_of",
    "state_of",
    "unpack_settled",
]

FULL_RESCAN_MS = 3_600_000
HOT_DIR_NS = 3_000_000_000
_VERSION = 4  # 4: rows carry the summary format (issue 38); a v3 cache is read afresh


# [session_id, kind, covered | None, attempts | None, last_attempt_ms | None, format]
Row = list[Any]


def row_of(session_id: str, state: SummaryState) -> Row:
    cov = state.coverage.amount if state.coverage is not None else None
    failure = state.failure
    return [
        session_id,
        state.kind.value,
        cov,
        failure.attempts if failure else None,
        failure.last_attempt_ms if failure else None,
        state.format,
    ]


def state_of(row: Row) -> SummaryState:
    _, kind, cov, attempts, last, written = row
    return SummaryState(
        SummaryKind(kind),
        coverage=Coverage(int(cov)) if cov is not None else None,
        failure=Failure(int(attempts), int(last or 0)) if attempts is not None else None,
        written_format=int(written),
    )


@dataclass(slots=True)
class CachedDir:
    """One folder: its mtime (None when it was hot: never trusted), the rows that may need
    work, and the settled ones packed as ``sid\tcovered`` lines (``sid\t-`` for an empty
    summary) so that loading them costs one string."""

    mtime_ns: int | None
    watch: list[Row] = field(default_factory=list)
    settled: str = ""


def pack_settled(rows: list[tuple[str, int | None]]) -> str:
    return "\n".join(f"{sid}\t{'-' if cov is None else cov}" for sid, cov in rows)


def unpack_settled(packed: str) -> list[tuple[str, int | None]]:
    out: list[tuple[str, int | None]] = []
    for line in packed.split("\n") if packed else ():
        sid, _, cov = line.rpartition("\t")
        out.append((sid, None if cov == "-" else int(cov)))
    return out


@dataclass(slots=True)
class ScanCache:
    full_at_ms: int = 0
    dirs: dict[str, CachedDir] = field(default_factory=dict)

    @classmethod
    def load(cls, path: Path) -> ScanCache | None:
        try:
            data = json.loads(path.read_bytes())
            if data.get("v") != _VERSION:
                return None
            dirs = {name: CachedDir(m, w, st) for name, (m, w, st) in data["dirs"].items()}
            return cls(int(data["at"]), dirs)
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return None

    def save(self, path: Path) -> None:
        data = {
            "v": _VERSION,
            "at": self.full_at_ms,
            "dirs": {name: [d.mtime_ns, d.watch, d.settled] for name, d in self.dirs.items()},
        }
        try:
            private_dir(path.parent)
            write_text_atomic(path, json.dumps(data, separators=(",", ":")))
        except OSError:
            pass  # advisory: the next scan reads everything
