"""Files in the home: owner-only modes, and whole-file writes a crash cannot leave half
done (pure file-system helpers).

Everything Memoir keeps under its home is readable by its owner alone. The home holds
transcript text (the archive copies, the database, its ``-wal``), so every folder Memoir
creates is ``0700`` and every file ``0600``, whatever the process umask: a mode is passed
on each create and set again after it (the umask can only take bits away, and a umask of
``0o200`` would take the owner's own). The process umask is never changed: a library must
not surprise the application it runs in.

A home made by an older Memoir (or under a loose umask) is tightened by :func:`tighten_home`
when it is opened for writing: its files and folders are walked once, symlinks never
followed, and the home folder itself is tightened last — an owner-only home is the sign
that the walk is done (nobody else can reach anything inside it), so the next open looks
only at the home's own entries. :func:`loose_modes` lists what is still too open, for
``memoir verify``.

A whole file is written to ``.<name>.<pid>.tmp`` beside it and renamed over it
(:func:`write_atomic`). A process killed between the two leaves its temp file behind; the
next write of the same file sweeps such leftovers first. Callers write a given file from
one process at a time (the sync lock, a session's summary claim), so a temp file not their
own is a leftover. A file that other programs write too (Claude Code's settings) is written
with a ``tag``: its temp files are ``.<name>.<tag>.<pid>.tmp``, and only those are swept. A
new file is owner-only (``0600``), whatever the umask; ``keep_mode`` gives the new content
the permissions of the file it replaces instead.
"""

from __future__ import annotations

import glob
import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO, cast

__all__ = [
    "DIR_MODE",
    "FILE_MODE",
    "loose_modes",
    "make_private",
    "open_private",
    "private_dir",
    "private_file",
    "sweep_temps",
    "temp_for",
    "tighten_home",
    "write_atomic",
    "write_text_atomic",
]

DIR_MODE = 0o700
FILE_MODE = 0o600
_OPEN = {"wb": os.O_WRONLY | os.O_CREAT | os.O_TRUNC, "ab": os.O_WRONLY | os.O_CREAT | os.O_APPEND}


def private_dir(path: Path) -> Path:
    """Create ``path`` and any missing parents as ``0700`` folders (an existing folder is
    left as it is); returns ``path``. Raises what ``mkdir`` raises."""
    missing: list[Path] = []
    probe = path
    while not probe.exists():
        missing.append(probe)
        if probe.parent == probe:
            break
        probe = probe.parent
    for folder in reversed(missing):
        try:
            folder.mkdir(DIR_MODE)
        except FileExistsError:
            continue  # another process made it meanwhile
        os.chmod(folder, DIR_MODE)
    if not path.is_dir():
        raise FileExistsError(f"{path} exists and is not a folder")
    return path


def open_private(path: Path | str, flags: int) -> int:
    """``os.open(path, flags)`` creating the file ``0600``; a file of this owner found with a
    looser mode is tightened through the descriptor."""
    fd = os.open(path, flags, FILE_MODE)
    try:
        _tighten_fd(fd)
    except BaseException:
        os.close(fd)
        raise
    return fd


def private_file(path: Path | str, mode: str = "wb") -> BinaryIO:
    """A binary file object for ``path`` opened ``"wb"``, ``"ab"`` or ``"r+b"`` (an existing
    file), created ``0600``."""
    flags = _OPEN.get(mode, os.O_RDWR)
    return cast(BinaryIO, os.fdopen(open_private(path, flags), mode))


def make_private(path: Path) -> bool:
    """Set a folder to ``0700``, a file to ``0600`` when it is looser (a symlink, a path that
    is gone or another user's is left alone); True when its mode changed."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return False
    want = _wanted(info)
    if want is None or stat.S_IMODE(info.st_mode) & ~want == 0:
        return False
    try:
        os.chmod(path, want)  # not a symlink (lstat above): nothing outside is followed
    except PermissionError:
        return False
    return True


def loose_modes(home: Path) -> list[tuple[Path, int]]:
    """Every folder and file under ``home`` (the home included) whose mode gives anyone but
    its owner access (or is looser than owner read/write for a file), with that mode."""
    return [(p, stat.S_IMODE(info.st_mode)) for p, info in _walk(home) if _too_open(info)]


def tighten_home(home: Path) -> int:
    """Tighten the home (see the module docstring); how many paths changed. Failures to
    change a mode (a read-only mount) are left to ``memoir verify`` to report."""
    try:
        info = os.lstat(home)
    except OSError:
        return 0
    if not stat.S_ISDIR(info.st_mode):
        return 0
    changed = 0
    if _too_open(info):  # an upgraded home: everything in it, then the home last
        entries = [p for p, _ in _walk(home) if p != home]
    else:  # already owner-only: a look at its own entries (cheap on every open)
        try:
            entries = list(home.iterdir())
        except OSError:
            return 0
    for path in entries:
        try:
            changed += make_private(path)
        except OSError:
            continue
    try:
        changed += make_private(home)
    except OSError:
        pass
    return changed


def _wanted(info: os.stat_result) -> int | None:
    if info.st_uid != os.geteuid():
        return None
    if stat.S_ISDIR(info.st_mode):
        return DIR_MODE
    if stat.S_ISREG(info.st_mode):
        return FILE_MODE
    return None  # symlinks, sockets, fifos: not Memoir's to change


def _too_open(info: os.stat_result) -> bool:
    want = _wanted(info)
    return want is not None and stat.S_IMODE(info.st_mode) & ~want != 0


def _tighten_fd(fd: int) -> None:
    info = os.fstat(fd)
    if _too_open(info) or (stat.S_ISREG(info.st_mode) and _owner_lacks(info)):
        os.fchmod(fd, FILE_MODE)


def _owner_lacks(info: os.stat_result) -> bool:
    """A file of ours created under a umask that took the owner's own bits."""
    return info.st_uid == os.geteuid() and stat.S_IMODE(info.st_mode) & FILE_MODE != FILE_MODE


def _walk(home: Path) -> Iterator[tuple[Path, os.stat_result]]:
    """``home`` and everything under it, never through a symlink; unreadable folders are
    passed over."""
    try:
        info = os.lstat(home)
    except OSError:
        return
    yield home, info
    if not stat.S_ISDIR(info.st_mode):
        return
    stack = [home]
    while stack:
        folder = stack.pop()
        try:
            with os.scandir(folder) as entries:
                found = list(entries)
        except OSError:
            continue
        for entry in found:
            try:
                entry_info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            path = Path(entry.path)
            yield path, entry_info
            if stat.S_ISDIR(entry_info.st_mode):
                stack.append(path)


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
