"""Rule sets in gitleaks' TOML format, read as data and matched in-process (pure).

Two files under ``memoir/data/`` are read, both in the format of gitleaks' default
configuration (``[[rules]]`` with ``id``, ``regex``, ``secretGroup``, ``entropy``,
``keywords`` and ``[[rules.allowlists]]``; a top ``[allowlist]``):

- ``gitleaks.toml`` — gitleaks' own default rule set, byte for byte (version in
  :data:`GITLEAKS_VERSION`; licence MIT, ``LICENSE-gitleaks`` beside it). It is the set the
  project maintains for the services that issue tokens today; upgrading it is replacing
  the file (``scripts/update_gitleaks_rules.py``) and running ``tests/secrets``.
- ``memoir_rules.toml`` — Memoir's few additions for what a conversation says and a
  repository rarely does: a password or token told in prose, OpenAI and Anthropic keys of
  any length, Google OAuth client secrets, Notion's older ``secret_`` tokens.

How a rule is applied, as gitleaks applies it: only to a line holding one of its keywords
(compared case-insensitively), the regex on that line, the secret being the rule's
``secretGroup`` (else the first group that matched, else the whole match); kept when its
Shannon entropy is above the rule's ``entropy`` and no allowlist of the rule or of the
file names it (a regex on the secret, the match or the line; a stopword inside the
secret). Allowlists on file paths do not apply to text and are skipped, as are rules that
only match file paths.

The regexes are RE2 (Go) syntax; :func:`to_python` rewrites the few differences
(``\\z``, POSIX classes, a ``(?i)`` that starts mid-pattern) and they are compiled with
``re.ASCII``: in RE2 ``\\w``, ``\\d``, ``\\s`` and ``\\b`` are ASCII.

A scan reads no TOML (~10 ms): :func:`read_rule_files`' result is shipped as
``memoir/data/secret_rule_table.json`` (:func:`rule_table`), written by ``python -m
memoir.secrets.rules``; tests/secrets/test_secret_table.py compares it with the files.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

__all__ = [
    "DETECTOR_REVISION",
    "GITLEAKS_VERSION",
    "Allow",
    "Rule",
    "detector_id",
    "load_rules",
    "read_rule_files",
    "rule_at",
    "rule_hits",
    "rule_keywords",
    "rule_table",
    "shannon_entropy",
    "to_python",
]

GITLEAKS_VERSION = "8.30.1"  # the gitleaks release whose default config data/gitleaks.toml is
RULE_FILES = ("gitleaks.toml", "memoir_rules.toml")
RULE_TABLE = Path(__file__).resolve().parent.parent / "data" / "secret_rule_table.json"

_POSIX = {
    "alnum": "a-zA-Z0-9",
    "alpha": "a-zA-Z",
    "digit": "0-9",
    "lower": "a-z",
    "upper": "A-Z",
    "space": r" \t\r\n\v\f",
    "xdigit": "0-9A-Fa-f",
    "word": r"\w",
    "punct": r"!-/:-@\[-`{-~",
}


def to_python(pattern: str) -> str:
    """An RE2 pattern in Python ``re`` syntax: ``\\z`` → ``\\Z``, ``[[:alnum:]]`` →
    ``[a-zA-Z0-9]``, and a flag group ``(?i)`` after the start → a scoped ``(?i:…)`` up to
    the end of the group it stands in (where RE2 ends its effect)."""
    out: list[str] = []
    scoped: list[list[str]] = [[]]  # per open group (the pattern first): flags opened in it
    i, n, in_class = 0, len(pattern), False
    while i < n:
        ch = pattern[i]
        if ch == "\\" and i + 1 < n:
            nxt = pattern[i + 1]
            out.append(r"\Z" if nxt == "z" and not in_class else ch + nxt)
            i += 2
            continue
        if in_class:
            m = re.match(r"\[:(\w+):\]", pattern[i:])
            if m and m.group(1) in _POSIX:
                out.append(_POSIX[m.group(1)])
                i += m.end()
                continue
            if ch == "]":
                in_class = False
            out.append(ch)
            i += 1
            continue
        if ch == "[":
            in_class = True
            out.append(ch)
            i += 1
            if i < n and pattern[i] == "^":
                out.append("^")
                i += 1
            if i < n and pattern[i] == "]":  # a leading ] is a literal
                out.append("]")
                i += 1
            continue
        flags = re.match(r"\(\?([a-zA-Z]+)\)", pattern[i:])
        if flags and i > 0:
            out.append(f"(?{flags.group(1)}:")
            scoped[-1].append(flags.group(1))
            i += flags.end()
            continue
        if ch == "(":
            scoped.append([])
        elif ch == ")" and len(scoped) > 1:
            out.append(")" * len(scoped.pop()))
        elif ch == "|" and scoped[-1]:
            # RE2's flags hold to the group's end, across "|": closed before it, reopened
            out.append(")" * len(scoped[-1]) + "|" + "".join(f"(?{f}:" for f in scoped[-1]))
            i += 1
            continue
        out.append(ch)
        i += 1
    out.append(")" * len(scoped[0]))
    return "".join(out)


def shannon_entropy(text: str) -> float:
    """Bits per character of ``text`` (gitleaks' and detect-secrets' measure)."""
    if not text:
        return 0.0
    size = len(text)
    return -sum(c / size * math.log2(c / size) for c in Counter(text).values())


@dataclass(frozen=True, slots=True)
class Allow:
    """An allowlist: a hit is allowed when one regex finds ``target`` (the ``secret``, the
    ``match`` or the ``line``) or a stopword is inside the secret."""

    regexes: tuple[re.Pattern[str], ...] = ()
    target: str = "secret"
    stopwords: tuple[str, ...] = ()

    def allows(self, secret: str, match: str, line: str) -> bool:
        text = {"secret": secret, "match": match, "line": line}[self.target]
        if any(r.search(text) for r in self.regexes):
            return True
        low = secret.lower()
        return any(word in low for word in self.stopwords)


@dataclass(frozen=True, slots=True)
class Rule:
    """One rule: ``keywords`` lower-cased (a line must hold one; none: every line)."""

    id: str
    regex: re.Pattern[str]
    keywords: tuple[str, ...]
    entropy: float | None = None
    secret_group: int = 0
    allows: tuple[Allow, ...] = ()


# gitleaks ends most token rules with this, made for code; a token in a URL's query, at the
# end of a sentence or inside JSON-escaped tool output ends on other characters too
_GITLEAKS_TAIL = "(?:[\\x60'\"\\s;]|\\\\[nr]|$)"
_TAIL = "(?:[\\x60'\"\\s;.,:!?&)\\]}<>|]|\\\\[nrt]|$)"
# a word boundary also holds right after a JSON escape (``\n``, ``\t``, ``\r``): in
# escaped tool output a token starts right after one
_BOUNDARY = r"(?:\b|(?<=\\[nrt]))"


def _compile(pattern: str) -> re.Pattern[str]:
    """A rule's regex for text: in Python syntax (:func:`to_python`), its token tail and
    word boundaries widened for URLs, prose and JSON-escaped text."""
    python = to_python(pattern.replace(_GITLEAKS_TAIL, _TAIL))
    return re.compile(_widen_boundaries(python), re.ASCII)


def _widen_boundaries(pattern: str) -> str:
    """``pattern`` with each ``\\b`` outside a class replaced by :data:`_BOUNDARY`."""
    out: list[str] = []
    i, in_class = 0, False
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\" and i + 1 < len(pattern):
            pair = pattern[i : i + 2]
            out.append(_BOUNDARY if pair == r"\b" and not in_class else pair)
            i += 2
            continue
        if ch == "[" and not in_class:
            in_class = True
        elif ch == "]" and in_class:
            in_class = False
        out.append(ch)
        i += 1
    return "".join(out)


def _allows(raw: list[dict[str, Any]]) -> tuple[Allow, ...]:
    out: list[Allow] = []
    for a in raw:
        if a.get("paths") or a.get("commits"):
            continue  # about files or commits, not text (an AND with them never holds here)
        regexes = tuple(_compile(r) for r in a.get("regexes", ()))
        stopwords = tuple(str(w).lower() for w in a.get("stopwords", ()))
        if regexes or stopwords:
            out.append(Allow(regexes, str(a.get("regexTarget", "secret")), stopwords))
    return tuple(out)


def _rule(raw: dict[str, Any], top: tuple[Allow, ...]) -> Rule:
    """A rule of the data, its regex compiled, ``top`` (its file's allowlists) added."""
    return Rule(
        id=str(raw["id"]),
        regex=_compile(raw["regex"]),
        keywords=_keywords_of(raw),
        entropy=float(raw["entropy"]) if "entropy" in raw else None,
        secret_group=int(raw.get("secretGroup", 0)),
        allows=_allows(raw.get("allowlists", [])) + top,
    )


def _keywords_of(raw: dict[str, Any]) -> tuple[str, ...]:
    return tuple(sorted({str(k).lower() for k in raw.get("keywords", ())}))


_USED = ("id", "regex", "keywords", "entropy", "secretGroup", "allowlists")


def read_rule_files() -> tuple[tuple[tuple[dict[str, Any], int], ...], tuple[Any, ...]]:
    """Every text rule of :data:`RULE_FILES` (the keys a rule is read by, and the index of
    its file), in :func:`load_rules`' order: a rule id in a later file replaces the earlier
    one in its place; and each file's top allowlist (a table, a list of them, or None).
    What :func:`rule_table` reads (as lists where this gives tuples)."""
    import tomllib
    from importlib import resources

    by_id: dict[str, tuple[dict[str, Any], int]] = {}
    tops: list[Any] = []
    folder = resources.files("memoir") / "data"
    for n, name in enumerate(RULE_FILES):
        data = tomllib.loads((folder / name).read_text(encoding="utf-8"))
        for raw in data.get("rules", ()):
            if "regex" not in raw or raw.get("path"):
                continue  # a rule on file names, or one bound to a file type
            by_id[str(raw["id"])] = ({k: raw[k] for k in _USED if k in raw}, n)
        top = data.get("allowlist")
        tops.append(top if isinstance(top, dict) else data.get("allowlists", []))
    return tuple(by_id.values()), tuple(tops)


@cache
def rule_table() -> tuple[list[list[Any]], list[Any]]:
    """:func:`read_rule_files`' rules and top allowlists, from the shipped JSON copy."""
    data = json.loads(RULE_TABLE.read_text(encoding="utf-8"))
    return data["rules"], data["tops"]


def _specs() -> list[list[Any]]:
    return rule_table()[0]


@cache
def _top_allows(n: int) -> tuple[Allow, ...]:
    """The top allowlist of the ``n``-th file of :data:`RULE_FILES`, compiled."""
    top = rule_table()[1][n]
    return _allows([top] if isinstance(top, dict) else top)


@cache
def rule_keywords() -> tuple[tuple[str, ...], ...]:
    """Each rule's keywords, lower-cased, in :func:`load_rules`' order (none compiled)."""
    return tuple(_keywords_of(raw) for raw, _file in _specs())


@cache
def rule_at(n: int) -> Rule:
    """:func:`load_rules`' ``n``-th rule, compiled on first use."""
    raw, file = _specs()[n]
    return _rule(raw, _top_allows(file))


def load_rules() -> tuple[Rule, ...]:
    """Every rule of :data:`RULE_FILES`, each file's top allowlist added to its rules';
    a rule id in a later file replaces the earlier one."""
    return tuple(rule_at(n) for n in range(len(_specs())))


# raised when the detector's own logic (memoir.secrets) changes what it finds; the rule
# files and detect-secrets' version are in detector_id already
DETECTOR_REVISION = 2


@cache
def detector_id() -> str:
    """A short id of what :mod:`memoir.secrets` finds: its rule files, detect-secrets'
    version and :data:`DETECTOR_REVISION`. Stored derived text scanned with another id is
    re-scanned (:mod:`memoir.ingest.verify`). Cheap: it imports no detector."""
    import hashlib
    from importlib import metadata, resources

    seed = f"{DETECTOR_REVISION}:{metadata.version('detect-secrets')}"
    digest = hashlib.sha256(seed.encode())
    folder = resources.files("memoir") / "data"
    for name in RULE_FILES:
        digest.update((folder / name).read_bytes())
    return digest.hexdigest()[:16]


def _secret_span(rule: Rule, m: re.Match[str]) -> tuple[int, int]:
    if rule.secret_group and m.group(rule.secret_group) is not None:
        return m.span(rule.secret_group)
    for g in range(1, (m.re.groups or 0) + 1):
        if m.group(g):
            return m.span(g)
    return m.span()


def rule_hits(rule: Rule, line: str) -> list[tuple[int, int]]:
    """The spans of ``rule``'s secrets in ``line`` (its keywords are not checked here)."""
    found: list[tuple[int, int]] = []
    for m in rule.regex.finditer(line):
        start, end = _secret_span(rule, m)
        secret = line[start:end]
        if not secret:
            continue
        if rule.entropy is not None and shannon_entropy(secret) <= rule.entropy:
            continue
        if any(a.allows(secret, m.group(0), line) for a in rule.allows):
            continue
        found.append((start, end))
    return found


if __name__ == "__main__":  # regenerate memoir/data/secret_rule_table.json
    rules, tops = read_rule_files()
    text = json.dumps({"rules": rules, "tops": tops}, indent=1, ensure_ascii=False)
    RULE_TABLE.write_text(text + "\n", encoding="utf-8")
