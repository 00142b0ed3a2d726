"""Whether detect-secrets' plugins can find anything in a text, told without importing
them (pure, but for reading the shipped table). Importing the plugins costs more than
most searches (``requests`` alone, which their network checks use, is ~55 ms); most texts
hold nothing they could match.

Every plugin hit (:mod:`memoir.secrets.plugins`) starts as a match of one of their regexes,
filtered after: a specific detector's regex in a line its gate admits (or any line, for
the two with no gate), a keyword pattern in a line the keyword gate admits or in one
assignment of a joined line, an entropy plugin's quoted string (whose entropy can exceed
the limit only from the table's ``ENTROPY`` length on), or the value of an
``.env`` assignment in the plugin's charset and of that length. :func:`may_find` looks
for exactly those matches, with the same regexes, copied from the installed plugins into
memoir/data/secret_plugin_table.json (:func:`plugin_table`; ``python -m
memoir.secrets.plugins`` writes it, and a test regenerates it and compares); when there is none, the
plugins would find nothing, and are not loaded.

The line-splitting rules the plugins' scan uses (:func:`segments`) live here, so both
read a line alike.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any

from memoir.secrets.gates import Gate

__all__ = [
    "ENV_LINE",
    "PLUGIN_TABLE",
    "gate",
    "keyword_gate",
    "may_find",
    "plugin_table",
    "segments",
]

PLUGIN_TABLE = Path(__file__).resolve().parent.parent / "data" / "secret_plugin_table.json"

ENV_LINE = re.compile(
    r"^[ \t]*(?:export[ \t]+)?[A-Za-z_][A-Za-z0-9_.]*[ \t]*=[ \t]*"
    r"(?P<q>['\"]?)(?P<value>[^\s'\"#]+)(?P=q)[ \t]*(?:#.*)?$"
)
# where an assignment starts on a line: at its start or after white space or a shell
# separator (``;``, ``&&``, ``||``, ``|``); ``==`` is a comparison, not an assignment
_ASSIGNMENT = re.compile(
    r"(?:^|(?<=[\s;&|\"'`({\[,]))(?:export[ \t]+)?[A-Za-z_][A-Za-z0-9_.]*[ \t]*=(?![=>])"
)
_ASSIGNED = re.compile(
    r"(?:export[ \t]+)?[A-Za-z_][A-Za-z0-9_.]*[ \t]*=[ \t]*(?:\"[^\"]*\"|'[^']*'|\S*)"
)
_SEPARATORS = " \t;&|"


def segments(line: str) -> list[tuple[int, str]]:
    """The pieces of a line holding two or more assignments (``A=…; B=…``): each
    assignment (its name, ``=`` and its value: a quoted string, else up to white space)
    and the text between them, without the separators; a line with fewer is itself."""
    starts = [m.start() for m in _ASSIGNMENT.finditer(line)] if "=" in line else []
    if not starts:
        return [(0, line)]
    out: list[tuple[int, str]] = []

    def piece(at: int, end: int) -> None:
        text = line[at:end].rstrip(_SEPARATORS)
        if text.strip():
            out.append((at, text))

    piece(0, starts[0])
    for at, end in zip(starts, [*starts[1:], len(line)], strict=True):
        m = _ASSIGNED.match(line, at, end)
        cut = m.end() if m is not None else end
        piece(at, cut)
        piece(cut, end)
    return out


@cache
def plugin_table() -> dict[str, Any]:
    """What this screen needs of the plugins (memoir/data/secret_plugin_table.json):
    ``SPECIFIC``, each specific detector's regex in ``GATED``'s order (pattern, flags,
    its gate's clauses, whether the gate compares folded text); ``KEYWORD_GATE``, the
    keyword patterns' gate (clauses, folded); ``ANY_KEYWORD``, the denylist's words, one
    of which every keyword pattern holds (pattern, flags); ``KEYWORDS``, the keyword
    patterns (pattern, flags, the group holding the value); ``ENTROPY``, the entropy
    plugins (pattern, flags, charset, the shortest value whose entropy may pass the
    limit)."""
    data: dict[str, Any] = json.loads(PLUGIN_TABLE.read_text(encoding="utf-8"))
    return data


def _gate(clauses: list[list[str]], folded: bool) -> Gate | None:
    return Gate(tuple(tuple(c) for c in clauses), folded) if clauses else None


@cache
def gate(i: int) -> Gate | None:
    """The gate of the ``i``-th specific regex (the table's ``SPECIFIC``)."""
    clauses, folded = plugin_table()["SPECIFIC"][i][2:]
    return _gate(clauses, folded)


@cache
def keyword_gate() -> Gate | None:
    clauses, folded = plugin_table()["KEYWORD_GATE"]
    return _gate(clauses, folded)


@cache
def _specific_regex(i: int) -> re.Pattern[str]:
    pattern, flags = plugin_table()["SPECIFIC"][i][:2]
    return re.compile(pattern, flags)


@cache
def _keyword_regexes() -> tuple[re.Pattern[str], tuple[re.Pattern[str], ...]]:
    """The denylist's alternation and the keyword patterns."""
    table = plugin_table()
    pattern, flags = table["ANY_KEYWORD"]
    return re.compile(pattern, flags), tuple(re.compile(p, f) for p, f, _g in table["KEYWORDS"])


@cache
def _entropy_regexes() -> tuple[tuple[re.Pattern[str], frozenset[str], int], ...]:
    return tuple(
        (re.compile(p, f), frozenset(charset), length)
        for p, f, charset, length in plugin_table()["ENTROPY"]
    )


def _ungated() -> list[int]:
    return [i for i in range(len(plugin_table()["SPECIFIC"])) if gate(i) is None]


def _keyword_may_match(text: str) -> bool:
    """Whether a keyword pattern matches ``text`` (the plugin's first check included)."""
    any_keyword, patterns = _keyword_regexes()
    return any_keyword.search(text) is not None and any(p.search(text) for p in patterns)


def _entropy_value(value: str) -> bool:
    """Whether an entropy plugin could take ``value`` (in its charset, long enough)."""
    return any(
        len(value) >= length and all(ch in charset for ch in value)
        for _regex, charset, length in _entropy_regexes()
    )


def _env(text: str) -> bool:
    env = ENV_LINE.match(text) if "=" in text else None
    return env is not None and _entropy_value(env.group("value"))


def _quoted(line: str) -> bool:
    if "'" not in line and '"' not in line:
        return False
    return any(
        len(m.group(2)) >= length
        for regex, _c, length in _entropy_regexes()
        for m in regex.finditer(line)
    )


def may_find(lines: Sequence[str], tags: Mapping[int, Any]) -> bool:
    """Whether the plugins may find a secret in ``lines``; ``tags``: each line's gate tags
    as :func:`memoir.secrets._needles` finds them (``("g", i)`` for the ``i``-th specific
    regex's gate, ``("k", 0)`` for the keyword gate)."""
    ungated = _ungated()
    kw_gate = keyword_gate()
    for n, line in enumerate(lines):
        held = tags.get(n, ())
        for i in ungated:
            if _specific_regex(i).search(line) is not None:
                return True
        for family, i in held:
            g = gate(i) if family == "g" else None
            if g is not None and g.admits(line) and _specific_regex(i).search(line) is not None:
                return True
        keyworded = ("k", 0) in held and kw_gate is not None and kw_gate.admits(line)
        if _quoted(line) or _env(line):
            return True
        pieces = segments(line)
        if len(pieces) == 1:
            if keyworded and _keyword_may_match(line):
                return True
            continue
        for _at, piece in pieces:
            if keyworded and _keyword_may_match(piece):
                return True
            if _env(piece):
                return True
    return False
