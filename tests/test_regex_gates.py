"""Literal gates of regexes (memoir.secrets.screen): derived from the parse tree, sound —
a text a gate refuses never matches its pattern — and as selective as the rules allow."""

from __future__ import annotations

import re
import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memoir import secrets
from memoir.secrets.screen import admitted_lines, fold, gate_of, match_starts, prefixes_of


def test_fold_maps_every_character_re_matches_to_an_ascii_letter() -> None:
    """Under IGNORECASE ``re`` matches an ASCII letter to a few non-ASCII characters too
    (Kelvin sign, long s, dotless i, dotted I): fold must turn each of them into that
    letter, or a case-insensitive gate would refuse a text its pattern matches."""
    letters = re.compile("[a-z]", re.IGNORECASE)
    seen = set()
    for code in range(0x110000):
        ch = chr(code)
        if letters.fullmatch(ch):
            folded = fold(ch)
            assert len(folded) == 1 and folded in string.ascii_lowercase, hex(code)
            assert re.fullmatch(folded, ch, re.IGNORECASE), hex(code)
            if not ch.isascii():
                seen.add(ch)
    assert seen == {"\u212a", "\u017f", "\u0131", "\u0130"}


def test_fold_keeps_every_length() -> None:
    """Positions in a folded text are positions in the text."""
    text = "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF)
    assert len(fold(text)) == len(text)


@pytest.mark.parametrize(
    ("pattern", "flags", "clauses", "folded"),
    [
        ("AKIA[0-9A-Z]{16}", 0, (("AKIA",),), False),
        ("(?:ghp|gho)_[A-Za-z0-9]{36}", 0, (("gh",),), False),  # the parser factors 'gh' out
        ("sk-[a-z]*T3BlbkFJ[a-z]+", 0, (("T3BlbkFJ",), ("sk-",)), False),
        ("(key|pwd|token)=", re.IGNORECASE, (("key", "pwd", "token"),), True),
        ("(?i)SECRET", 0, (("secret",),), True),
        ("a?bc", 0, (("bc",),), False),  # an optional part is not required
        ("(?:ab)+cd", 0, (("ab",), ("cd",)), False),  # a repeat of at least one is
        ("(?:ab)*", 0, None, None),
        ("(?:abc|)d", 0, None, None),  # one branch requires nothing: no gate from it
        ("(?:abc|xyz)", 0, (("abc", "xyz"),), False),
        ("[MNO][a-z]{23}\\.[a-z]", 0, None, None),  # single characters gate nothing
        ("[MNO][a-z]{23}\\.x", 0, ((".x",),), False),
        ("ab(?i:cd)ef", 0, None, None),  # inline flags inside: not gated
        ("contraseña", re.IGNORECASE, (("contrase",),), True),  # its ASCII part
        ("(?<=\\W)key", 0, (("key",),), False),
    ],
)
def test_gate_of(pattern: str, flags: int, clauses: object, folded: object) -> None:
    gate = gate_of(re.compile(pattern, flags))
    if clauses is None:
        assert gate is None
    else:
        assert gate is not None
        assert (gate.clauses, gate.folded) == (clauses, folded)


@pytest.mark.parametrize(
    ("pattern", "flags", "prefixes"),
    [
        ("AKIA[0-9A-Z]{16}", 0, (("AKIA",), False)),
        ("(api_?key|secret)x", re.IGNORECASE, (("api", "secret"), True)),
        ("(?:\\s|^)AP", 0, None),
        ("x?abc", 0, None),
    ],
)
def test_prefixes_of(pattern: str, flags: int, prefixes: object) -> None:
    assert prefixes_of(re.compile(pattern, flags)) == prefixes


def test_admitted_lines_finds_each_line_holding_a_string_of_every_clause() -> None:
    gate = gate_of(re.compile("sk-[a-z]*T3BlbkFJ"))
    assert gate is not None
    lines = ["sk- only", "T3BlbkFJ only", "sk-abcT3BlbkFJ", "none", "T3BlbkFJ and sk-"]
    text = "\n".join(lines)
    starts = [text.index(line) for line in lines]
    assert admitted_lines(gate, text, fold(text), starts) == {2, 4}


def test_match_starts_are_every_position_of_every_prefix() -> None:
    line = "apiKEY api secret"
    assert match_starts(line, fold(line), ("api", "key"), True) == [0, 3, 7]


_PATTERNS = [regex for _plugin, regex, _gate in secrets._GATED] + [
    regex for regex, _group in secrets._KEYWORD_PATTERNS
]
_PIECES = sorted(
    {s for regex in _PATTERNS if (g := gate_of(regex)) for clause in g.clauses for s in clause}
    | {"AKIAIOSFODNN7EXAMPLE", "ghp_" + "a1" * 18, "password", "= '", '"', "'", ": ", "_"}
)
_noise = st.text(
    alphabet=string.ascii_letters + string.digits + " =:'\"_-./\u212a\u017f\u0131\u0130"
)


# each pattern's gate and prefixes, derived once (as the detector does at import): the
# derivation parses the pattern, which took half of this test's time when done per example
_DERIVED = [(regex, gate_of(regex), prefixes_of(regex)) for regex in _PATTERNS]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(_PIECES), _noise), max_size=12))
def test_a_text_a_gate_refuses_matches_none_of_its_patterns(parts: list[str]) -> None:
    text = "".join(parts)
    for regex, gate, found in _DERIVED:
        if gate is not None and regex.search(text) is not None:
            assert gate.admits(text), (regex.pattern, text)
        if found is not None:
            starts = set(match_starts(text, fold(text), *found))
            assert {m.start() for m in regex.finditer(text)} <= starts, (regex.pattern, text)
