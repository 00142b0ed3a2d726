"""The rule data and its reading: gitleaks' default rules shipped as data with their
licence, RE2 syntax translated to Python's, and the one-pass keyword finder exact."""

from __future__ import annotations

import hashlib
import re
import tomllib
from importlib import resources

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memoir.secrets import detector_id
from memoir.secrets.rules import GITLEAKS_VERSION, RULE_FILES, load_rules, rule_hits, to_python
from memoir.secrets.screen import Needles, fold

DATA = resources.files("memoir") / "data"
# the sha256 of gitleaks 8.30.1's default config, as scripts/update_gitleaks_rules.py
# takes it from the release; a changed file must come with a changed version
GITLEAKS_SHA256 = "e163e53b9e7e8a8511e77271e2b323ed057759542a6d988258afe3a1fa329caf"


def test_gitleaks_rules_ship_unchanged_with_their_licence_and_version() -> None:
    raw = (DATA / "gitleaks.toml").read_bytes()
    assert hashlib.sha256(raw).hexdigest() == GITLEAKS_SHA256
    licence = (DATA / "LICENSE-gitleaks").read_text(encoding="utf-8")
    assert "MIT License" in licence and "Copyright (c) 2019 Zachary Rice" in licence
    assert f"gitleaks {GITLEAKS_VERSION}" in licence
    assert RULE_FILES == ("gitleaks.toml", "memoir_rules.toml")


def test_every_rule_is_read_and_compiles() -> None:
    ids = [r.id for r in load_rules()]
    gitleaks = tomllib.loads((DATA / "gitleaks.toml").read_text(encoding="utf-8"))["rules"]
    text_rules = [r["id"] for r in gitleaks if "regex" in r and not r.get("path")]
    assert len(text_rules) >= 200 and set(text_rules) <= set(ids)
    assert {"anthropic-key", "openai-key", "password-in-prose"} <= set(ids)
    assert len(ids) == len(set(ids))
    assert re.fullmatch(r"[0-9a-f]{16}", detector_id())


@pytest.mark.parametrize(
    ("re2", "python"),
    [
        (r"abc", r"abc"),
        (r"(?i)abc", r"(?i)abc"),  # a flag at the start is Python's too
        (r"\b(p8e-(?i)[a-z0-9]{32})", r"\b(p8e-(?i:[a-z0-9]{32}))"),
        (r"dp\.pt\.(?i)[a-z0-9]{43}", r"dp\.pt\.(?i:[a-z0-9]{43})"),
        (r"(a(?i)b|c)d", r"(a(?i:b)|(?i:c))d"),  # RE2's flag holds across "|" to the group's end
        (r"x(?-i:acc)y", r"x(?-i:acc)y"),
        (r"(?:[^\w-]|\z)", r"(?:[^\w-]|\Z)"),
        (r"\bpat[[:alnum:]]{14}\b", r"\bpat[a-zA-Z0-9]{14}\b"),
        (r"[\]\\z]", r"[\]\\z]"),  # inside a class nothing changes
    ],
)
def test_re2_patterns_become_python_ones(re2: str, python: str) -> None:
    assert to_python(re2) == python
    re.compile(python)


@pytest.mark.parametrize(
    ("case", "pattern", "text", "found"),
    [
        (
            "case-insensitive after a prefix",
            r"\b(LTAI(?i)[a-z0-9]{20})",
            "LTAIabcdEFGH1234ijklMNOP",
            True,
        ),
        (
            "the prefix stays case-sensitive",
            r"\b(LTAI(?i)[a-z0-9]{20})",
            "ltaiabcdEFGH1234ijklMNOP",
            False,
        ),
    ],
)
def test_translated_flags_keep_re2_meaning(case: str, pattern: str, text: str, found: bool) -> None:
    assert bool(re.search(to_python(pattern), text)) is found, case


def test_a_token_is_found_after_a_json_escape_and_before_a_query_separator() -> None:
    rule = next(r for r in load_rules() if r.id == "gcp-api-key")
    token = "AIza" + "Sy" + "Q9x7Vb2Kd4Lm8Np1Rt6Wz3Yc5Hf0Jg7Ks2A"[:33]
    for text in (f"$ env\\n{token}\\n", f"GET /v1?key={token}&page=2", f"the key is {token}."):
        (span,) = rule_hits(rule, text)
        assert text[span[0] : span[1]] == token, text


NEEDLES = ["key", "AKIA", "sk-ant-", "ghp_", "password", "ey"]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.sampled_from([*NEEDLES, "x", "K", " ", "\n", "é", "\u212a", "pass"]), max_size=40)
)
def test_needles_find_exactly_the_lines_holding_each_string(pieces: list[str]) -> None:
    text = "".join(pieces)
    finder = Needles([(n, n) for n in NEEDLES])
    starts, at = [], 0
    for line in text.splitlines(keepends=True) or [""]:
        starts.append(at)
        at += len(line)
    got = finder.lines_of(text, fold(text), starts)
    ends = [*starts[1:], len(text)]
    want = {
        i: {n for n in NEEDLES if fold(n) in fold(text[s:e])}
        for i, (s, e) in enumerate(zip(starts, ends, strict=True))
    }
    assert got == {i: tags for i, tags in want.items() if tags}
