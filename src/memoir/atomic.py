"""Whole-file writes that a crash cannot leave half done (pure file-system helpers).

A file is written to ``.<name>.<pid>.tmp`` beside it and renamed over it. A process killed
between the two leaves its temp file behind; the next write of the same file sweeps such
leftovers first. Callers write a given file from one process at a time (the sync lock, a
session's summary claim), so a temp file not their own is a leftover.

A file that other programs write too (Claude Code's settings) is written with a ``tag``:
its temp files are ``.<name>.<tag>.<pid>.tmp``, and only those are swept. A new file is
owner-only (``0600``, :mod:`memoir.private`), whatever the umask; ``keep_mode`` gives the
new content the permissions of the file it replaces instead.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from memoir.private import private_file

__all__ = ["sweep_temps", "temp_for", "write_atomic", "write_text_atomic"]


def _prefix(target: Path, tag: str) -> str:
    return f".{target.name}.{tag}." if tag else f".{target.name}."


def temp_for(target: Path, tag: str = "") -> Path:
    return target.with_name(f"{_prefix(target, tag)}{os.getpid()}.tmp")


def sweep_temps(target: Path, tag: str = "") -> None:
    """Remove the temp copies of ``target`` killed writers left (never this process's)."""
    mine = temp_for(target, tag)
    for stale in target.parent.glob(f"{glob.escape(_prefix(target, tag))}*.tmp"):
        if stale != mine:
            stale.unlink(missing_ok=True)


def write_atomic(
    target: Path,
    write: Callable[[BinaryIO], object],
    *,
    tag: str = "",
    keep_mode: bool = False,
) -> None:
    """Replace ``target``'s content with what ``write`` writes into the (binary) file it is
    handed, in one rename; a failed write leaves ``target`` as it was and no temp file."""
    sweep_temps(target, tag)
    tmp = temp_for(target, tag)
    try:
        with private_file(tmp, "wb") as out:
            write(out)
        if keep_mode:
            try:
                tmp.chmod(target.stat().st_mode & 0o7777)
            except FileNotFoundError:
                pass  # a new file: owner-only
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_text_atomic(target: Path, text: str, *, tag: str = "", keep_mode: bool = False) -> None:
    """Replace ``target``'s content with ``text`` (UTF-8) in one rename."""
    data = text.encode("utf-8")
    write_atomic(target, lambda out: out.write(data), tag=tag, keep_mode=keep_mode)
