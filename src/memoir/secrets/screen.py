"""Whether detect-secrets' plugins can find anything in a text, told without importing
them: literal gates for their regexes and the screen built on them (pure, but for reading
the shipped table). Importing the plugins costs more than most searches (``requests``
alone, which their network checks use, is ~55 ms); most texts hold nothing they could
match.

The gates. Python's ``re`` tries a big alternation branch by branch at every position of
the text, and a pattern that starts with a lookbehind or a class gets none of its fast
scans. The secret detector runs some fifty such patterns over every line it reads, so most
of its time went to lines that could never match. A :class:`Gate` says which lines can:
derived from the pattern's parse tree, it names strings of which any match holds at least
one (``AKIA…`` → ``{"AKIA", "ABIA", …}``; ``(?i)…(key|pwd|pass)…`` → ``{"key", "pwd",
"pass"}``, compared case-insensitively), and a ``str`` containment test — a fast scan —
tells whether a line holds one. A pattern the rules below cannot bound has no gate and
always runs.

The derivation is sound by construction, never a guess: a run of literal characters in a
sequence is required; a group, or a repeat of at least one, requires what its body
requires; an alternation requires one of what its branches require, and has no gate when
one branch has none; anything else (classes, optional parts, lookarounds, anchors) ends a
run and requires nothing. Of the runs a sequence requires, the gate keeps the most
selective (the longest shortest string). A case-insensitive pattern is gated on
:func:`fold` of the text: lower case, and the few non-ASCII letters that ``re`` matches
to an ASCII one under IGNORECASE (``K`` Kelvin sign, ``ſ``, ``ı``, ``İ``) mapped to it;
a run holding any other non-ASCII character is not used as a gate. A pattern with inline
flags inside it (``(?i:…)``) is not gated.

The screen. Every plugin hit (:mod:`memoir.secrets.plugins`) starts as a match of one of
their regexes, filtered after: a specific detector's regex in a line its gate admits (or
any line, for the two with no gate), a keyword pattern in a line the keyword gate admits
or in one assignment of a joined line, an entropy plugin's quoted string (whose entropy
can exceed the limit only from the table's ``ENTROPY`` length on), or the value of an
``.env`` assignment in the plugin's charset and of that length. :func:`may_find` looks
for exactly those matches, with the same regexes, copied from the installed plugins into
memoir/data/secret_plugin_table.json (:func:`plugin_table`; ``python -m
memoir.secrets.plugins`` writes it, and a test regenerates it and compares); when there
is none, the plugins would find nothing, and are not loaded. The line-splitting rules the
plugins' scan uses (:func:`segments`) live here, so both read a line alike.
"""

from __future__ import annotations

import json
import re
from bisect import bisect_right
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from re import _constants as c  # type: ignore[attr-defined]
from re import _parser as parser  # type: ignore[attr-defined]
from typing import Any

__all__ = [
    "ENV_LINE",
    "PLUGIN_TABLE",
    "Gate",
    "Needles",
    "admitted_lines",
    "fold",
    "gate",
    "gate_of",
    "keyword_gate",
    "match_starts",
    "may_find",
    "plugin_table",
    "prefixes_of",
    "segments",
]

# the characters re's IGNORECASE matches to an ASCII letter besides its two cases (checked
# against every code point by tests/test_regex_gates.py)
_TO_ASCII = str.maketrans({"\u212a": "k", "\u017f": "s", "\u0131": "i", "\u0130": "i"})

_MIN_RUN = 2  # a one-character run is in nearly every line: no use as a gate


@dataclass(frozen=True, slots=True)
class Gate:
    """Any match of the pattern contains, for each clause, one of its strings — in
    :func:`fold` of the text when ``folded``."""

    clauses: tuple[tuple[str, ...], ...]
    folded: bool

    def admits(self, text: str, folded_text: str | None = None) -> bool:
        """Whether ``text`` may hold a match (``folded_text``: ``fold(text)``, when the
        caller has it)."""
        if self.folded:
            text = fold(text) if folded_text is None else folded_text
        return all(any(s in text for s in clause) for clause in self.clauses)


def admitted_lines(gate: Gate, text: str, folded: str, starts: Sequence[int]) -> set[int]:
    """The indexes of the lines (``starts``: each line's offset in ``text``, ascending)
    that ``gate`` admits; ``folded`` is :func:`fold` of ``text``, of the same length. The
    first clause's strings are found by substring search over the whole text (one find per
    line that holds one, at most); a line so found must pass the other clauses too."""
    hay = folded if gate.folded else text
    ends = [*starts[1:], len(text)]
    found: set[int] = set()
    for needle in gate.clauses[0]:
        at = hay.find(needle)
        while at >= 0:
            n = bisect_right(starts, at) - 1
            found.add(n)
            at = hay.find(needle, ends[n])
    if len(gate.clauses) == 1:
        return found
    return {
        n
        for n in found
        if all(any(s in hay[starts[n] : ends[n]] for s in clause) for clause in gate.clauses[1:])
    }


def fold(text: str) -> str:
    """``text`` as a case-insensitive gate compares it (of the same length)."""
    return text.lower() if text.isascii() else text.translate(_TO_ASCII).lower()


def gate_of(pattern: re.Pattern[str]) -> Gate | None:
    """The gate of ``pattern``, or None when its matches need no literal the rules find."""
    try:
        tree = parser.parse(pattern.pattern, pattern.flags)
    except (re.error, RecursionError, TypeError):  # pragma: no cover - compiled already
        return None
    folded = bool(tree.state.flags & re.IGNORECASE)
    clauses = {
        tuple(sorted({s.lower() if folded else s for s in clause}))
        for clause in _required(list(tree), folded)
        if min(len(s) for s in clause) >= _MIN_RUN
    }
    if not clauses:
        return None
    return Gate(tuple(sorted(clauses, key=lambda k: (_selectivity(k), k))), folded)


Clause = frozenset[str]


def _selectivity(clause: Any) -> tuple[int, int]:
    """Most selective first: the longest shortest string, then the fewest strings."""
    return (-min(len(s) for s in clause), len(clause))


def _required(nodes: list[tuple[Any, Any]], folded: bool) -> list[Clause]:
    """Clauses every match of the sequence ``nodes`` satisfies (each: one of its strings
    is in the match); an empty list when none is known. None of a sub-pattern with inline
    flags is trusted: the sequence holding it gets none."""
    clauses: list[Clause] = []
    run: list[str] = []

    def close() -> None:
        if run:
            text = "".join(run)
            if folded:  # the longest ASCII piece: it is in the match too
                text = max(re.split(r"[^\x00-\x7f]+", text), key=len)
            if text:
                clauses.append(frozenset([text]))
            run.clear()

    for op, arg in nodes:
        if op is c.LITERAL:
            run.append(chr(arg))
            continue
        close()
        if op is c.SUBPATTERN:
            _group, add_flags, del_flags, body = arg
            if add_flags or del_flags:
                return []  # inline flags: the rules above do not hold inside
            clauses += _required(list(body), folded)
        elif op in (c.MAX_REPEAT, c.MIN_REPEAT, c.POSSESSIVE_REPEAT):
            low, _high, body = arg
            if low >= 1:
                clauses += _required(list(body), folded)
        elif op is c.ATOMIC_GROUP:
            clauses += _required(list(arg), folded)
        elif op is c.BRANCH:
            one = _branches(arg[1], folded)
            if one is not None:
                clauses.append(one)
    close()
    return clauses


def _branches(branches: list[Any], folded: bool) -> Clause | None:
    """One clause an alternation satisfies: the union of each branch's most selective
    clause; None when a branch has none."""
    out: set[str] = set()
    for branch in branches:
        got = _required(list(branch), folded)
        if not got:
            return None
        out |= min(got, key=_selectivity)
    return frozenset(out)


def prefixes_of(pattern: re.Pattern[str]) -> tuple[tuple[str, ...], bool] | None:
    """Strings one of which every match of ``pattern`` starts with (compared on
    :func:`fold` of the text when the second value is True), or None when the pattern
    does not begin with literals on every branch."""
    try:
        tree = parser.parse(pattern.pattern, pattern.flags)
    except (re.error, RecursionError, TypeError):  # pragma: no cover - compiled already
        return None
    folded = bool(tree.state.flags & re.IGNORECASE)
    found = _prefixes(list(tree), folded)
    if not found or min(len(s) for s in found) < _MIN_RUN:
        return None
    return tuple(sorted({s.lower() if folded else s for s in found})), folded


def _prefixes(nodes: list[tuple[Any, Any]], folded: bool) -> set[str] | None:
    run: list[str] = []
    for op, arg in nodes:
        if op is c.LITERAL:
            run.append(chr(arg))
            continue
        if run:
            break
        if op is c.SUBPATTERN:
            _group, add_flags, del_flags, body = arg
            if add_flags or del_flags:
                return None
            return _prefixes(list(body), folded)
        if op is c.BRANCH:
            out: set[str] = set()
            for branch in arg[1]:
                got = _prefixes(list(branch), folded)
                if not got:
                    return None
                out |= got
            return out
        return None
    text = "".join(run)
    if folded:  # its ASCII beginning is a prefix of the match too
        text = re.split(r"[^\x00-\x7f]", text, maxsplit=1)[0]
    return {text} if text else None


def match_starts(
    line: str, folded_line: str, prefixes: tuple[str, ...], fold_it: bool
) -> list[int]:
    """Every position of ``line`` where one of ``prefixes`` begins, ascending."""
    hay = folded_line if fold_it else line
    out: set[int] = set()
    for p in prefixes:
        at = hay.find(p)
        while at >= 0:
            out.add(at)
            at = hay.find(p, at + 1)
    return sorted(out)


class Needles:
    """Many gates' strings found in one pass: an Aho-Corasick automaton over lower-cased
    needles, each carrying tags. :meth:`lines_of` says, per line of a text, which tags'
    needles it holds; a case-sensitive gate's needle is looked for lower-cased in the
    folded text (a superset of the lines holding it), so its caller checks the gate
    itself on those lines (:meth:`Gate.admits`)."""

    def __init__(self, needles: Sequence[tuple[str, Any]]) -> None:
        import ahocorasick

        by_needle: dict[str, list[Any]] = {}
        for needle, tag in needles:
            by_needle.setdefault(fold(needle), []).append(tag)
        self._automaton = ahocorasick.Automaton()
        for needle, tags in by_needle.items():
            self._automaton.add_word(needle, tuple(tags))
        if by_needle:
            self._automaton.make_automaton()
        self._empty = not by_needle

    def lines_of(self, text: str, folded: str, starts: Sequence[int]) -> dict[int, set[Any]]:
        """``{line index: tags}`` of the lines (``starts``: each line's offset in
        ``text``, ascending) holding a needle; ``folded`` is :func:`fold` of ``text`` (when
        its length differs, each line is folded and searched on its own)."""
        out: dict[int, set[Any]] = {}
        if self._empty:
            return out
        if len(folded) != len(text):
            ends = [*starts[1:], len(text)]
            for n, (start, end) in enumerate(zip(starts, ends, strict=True)):
                for _end, tags in self._automaton.iter(fold(text[start:end])):
                    out.setdefault(n, set()).update(tags)
            return out
        line, line_end = 0, (starts[1] if len(starts) > 1 else len(text))
        for end, tags in self._automaton.iter(folded):
            if end >= line_end:
                line = bisect_right(starts, end) - 1
                line_end = starts[line + 1] if line + 1 < len(starts) else len(text)
            out.setdefault(line, set()).update(tags)
        return out


# the screen ---------------------------------------------------------------------------


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
