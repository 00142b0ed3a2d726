"""How a folder name or a working directory becomes a project name (pure).

A project name is kept as written — Unicode letters, digits, spaces, emoji — and is also
one path component under the archive (``<archive>/<project>/``), so only what a path
cannot hold is made safe: path separators, control characters (and line or paragraph
separators), leading dots (no hidden or ``..`` folder), and a length past
:data:`MAX_NAME_BYTES` of UTF-8. A name that had to be changed gets ``-`` and a short hash
of the name as written (:data:`HASH_CHARS` hex digits), so two different names never end
as one project: ``a/b`` and ``a\\b`` are ``a_b-…`` with two different hashes, and neither
is the folder ``a_b``. The suffix depends on the name alone, so a name never changes when
another project appears. Names are read in Unicode's composed form (NFC): macOS writes
``é`` decomposed in file names, a user types it composed, and both are one project.

A working directory (Codex keeps its rollouts in date folders; Claude Code names its
project folders from it) becomes a project spelled the way Claude Code names its folders,
``/home/ann/app`` → ``-home-ann-app`` (every ASCII character but a letter, a digit or ``-``
becomes ``-``), except that non-ASCII letters, digits and symbols are kept:
``/home/ann/проект`` → ``-home-ann-проект``, where Claude Code's own folder reads
``-home-ann-------`` for every six-letter Cyrillic name.
"""

from __future__ import annotations

import hashlib
import unicodedata

__all__ = ["HASH_CHARS", "MAX_NAME_BYTES", "claude_folder", "cwd_project", "project_name"]

MAX_NAME_BYTES = 200
HASH_CHARS = 6
_SEPARATORS = frozenset("/\\")
_LINE_BREAKS = frozenset({"Zl", "Zp"})


def _unsafe(ch: str) -> bool:
    if ch in _SEPARATORS:
        return True
    category = unicodedata.category(ch)
    return category == "Cc" or category in _LINE_BREAKS


def _cut(text: str, limit: int) -> str:
    """The longest start of ``text`` of at most ``limit`` UTF-8 bytes."""
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    return data[:limit].decode("utf-8", "ignore")


def _suffix(name: str) -> str:
    digest = hashlib.blake2b(name.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()
    return "-" + digest[:HASH_CHARS]


def project_name(name: str) -> str:
    """``name`` (a folder's name) as a project name: as written, but safe as one path
    component, with a hash suffix when anything had to change (see the module)."""
    written = unicodedata.normalize("NFC", name)
    cleaned = "".join("_" if _unsafe(ch) else ch for ch in written).lstrip(".")
    try:
        cleaned.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates (file-system bytes that are not UTF-8)
        cleaned = cleaned.encode("utf-8", "replace").decode("utf-8").replace("?", "_")
    if cleaned == written and cleaned and len(cleaned.encode("utf-8")) <= MAX_NAME_BYTES:
        return cleaned
    head = _cut(cleaned, MAX_NAME_BYTES - 1 - HASH_CHARS) or "_"
    return head + _suffix(written)


def _cwd_char(ch: str) -> str:
    if ch.isascii():
        return ch if ch.isalnum() or ch == "-" else "-"
    category = unicodedata.category(ch)
    return "-" if category[0] in "ZC" and category != "Cf" else ch


def cwd_project(cwd: str | None, default: str = "codex") -> str:
    """A working directory as a project name (``default`` when there is none)."""
    if not cwd:
        return default
    text = unicodedata.normalize("NFC", cwd.rstrip("/\\"))
    return project_name("".join(_cwd_char(ch) for ch in text)) if text else default


def claude_folder(cwd: str) -> str:
    """The folder Claude Code names a project by: every character of the working directory
    that is not an ASCII letter or digit written ``-`` (lossy: ``проект`` and ``данные``
    are one folder there)."""
    return "".join(ch if ch.isascii() and ch.isalnum() else "-" for ch in cwd.rstrip("/\\"))
