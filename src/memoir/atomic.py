"""Whole-file writes that a crash cannot leave half done (pure file-system helpers).

A file is written to ``.<name>.<pid>.tmp`` beside it and renamed over it. A process killed
between the two leaves its temp file behind; the next write of the same file sweeps such
leftovers first. Callers write a given file from one process at a time (the sync lock, a
session's summary claim), so a temp file not their own is a leftover.
"""

from __future__ import annotations

import glob
import os
from pathlib import Path

__all__ = ["sweep_temps", "temp_for", "write_text_atomic"]


def temp_for(target: Path) -> Path:
    return target.with_name(f".{target.name}.{os.getpid()}.tmp")


def sweep_temps(target: Path) -> None:
    """Remove the temp copies of ``target`` killed writers left (never this process's)."""
    mine = temp_for(target)
    for stale in target.parent.glob(f".{glob.escape(target.name)}.*.tmp"):
        if stale != mine:
            stale.unlink(missing_ok=True)


def write_text_atomic(target: Path, text: str) -> None:
    """Replace ``target``'s content with ``text`` (UTF-8) in one rename."""
    sweep_temps(target)
    tmp = temp_for(target)
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, target)
