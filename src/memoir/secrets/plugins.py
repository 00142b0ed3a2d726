"""detect-secrets' plugins (Yelp), used in-process, line by line, for :mod:`memoir.secrets`.

How ``detect-secrets`` is used: its plugin classes are instantiated once and only their
pure matching is called (their regexes, ``KeywordDetector``'s patterns, the entropy
plugins' charsets and Shannon entropy) — never ``analyze_line``/``scan_line``, which read
the library's global settings and may *verify* a candidate over the network. Its heuristic
filters (sequential strings, UUIDs, ``*_id`` values, templates, ``$VARS``, indirect
references, non-alphanumeric values) drop the usual false positives.

- Specific detectors: AWS, Azure storage, Artifactory, basic-auth URLs
  (``postgres://u:pw@host``), Cloudant, Discord, GitHub, GitLab, IBM, JWT, Mailchimp, npm,
  OpenAI, private-key blocks (the span runs from the ``-----BEGIN`` marker, wherever on
  its line it is, to the END marker — on a later line or the same one, as a transcript
  flattened to one line has it), PyPI, SendGrid, Slack, SoftLayer, Square, Stripe,
  Telegram, Twilio.
- ``KeywordDetector`` with its config-file patterns (``DB_PASSWORD=…``, ``api_key: …``,
  ``secret = "…"``); a value holding whitespace is prose ("the secret: keep it simple"),
  not a credential, and is dropped.
- High-entropy strings at the library's documented default limits (base64 4.5, hex 3.0),
  in the library's default *quoted* mode: a quoted string in code or config. In prose an
  unquoted hash (a git sha "fixed in 3f2a9c1…") is not flagged; the eager unquoted mode
  the library offers for ad-hoc scans would flag every commit id. The one unquoted place
  scanned for entropy is the value of an ``.env``-style assignment line
  (``AUTH_TOKEN=9f8e…``), where a random value is a credential whatever its name.
- Assignments joined on one line (``A=…; B=…``, ``export A=… && B=…``, ``A=… B=…``) are
  scanned one by one, as if each had its line: a keyword value runs to the end of its
  line, so the joined line read whole is one value holding white space (dropped as
  prose) or one span over both.
- Left out: ``IPPublicDetector`` (an address is not a credential). A password told in
  prose ("my password is hunter2") is :mod:`memoir.secrets.rules`' (``password-in-prose``).

Thread-safe: the plugin instances are never mutated.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from typing import Any

from detect_secrets.filters import heuristic
from detect_secrets.plugins.artifactory import ArtifactoryDetector
from detect_secrets.plugins.aws import AWSKeyDetector
from detect_secrets.plugins.azure_storage_key import AzureStorageKeyDetector
from detect_secrets.plugins.base import BasePlugin, RegexBasedDetector
from detect_secrets.plugins.basic_auth import BasicAuthDetector
from detect_secrets.plugins.cloudant import CloudantDetector
from detect_secrets.plugins.discord import DiscordBotTokenDetector
from detect_secrets.plugins.github_token import GitHubTokenDetector
from detect_secrets.plugins.gitlab_token import GitLabTokenDetector
from detect_secrets.plugins.high_entropy_strings import (
    Base64HighEntropyString,
    HexHighEntropyString,
    HighEntropyStringsPlugin,
)
from detect_secrets.plugins.ibm_cloud_iam import IbmCloudIamDetector
from detect_secrets.plugins.ibm_cos_hmac import IbmCosHmacDetector
from detect_secrets.plugins.jwt import JwtTokenDetector
from detect_secrets.plugins.keyword import (
    CONFIG_DENYLIST_REGEX_TO_GROUP,
    DENYLIST,
    QUOTES_REQUIRED_DENYLIST_REGEX_TO_GROUP,
    KeywordDetector,
)
from detect_secrets.plugins.mailchimp import MailchimpDetector
from detect_secrets.plugins.npm import NpmDetector
from detect_secrets.plugins.openai import OpenAIDetector
from detect_secrets.plugins.private_key import PrivateKeyDetector
from detect_secrets.plugins.pypi_token import PypiTokenDetector
from detect_secrets.plugins.sendgrid import SendGridDetector
from detect_secrets.plugins.slack import SlackDetector
from detect_secrets.plugins.softlayer import SoftlayerDetector
from detect_secrets.plugins.square_oauth import SquareOAuthDetector
from detect_secrets.plugins.stripe import StripeDetector
from detect_secrets.plugins.telegram_token import TelegramBotTokenDetector
from detect_secrets.plugins.twilio import TwilioKeyDetector

from memoir.secrets.screen import ENV_LINE, Gate, fold, gate_of, match_starts, prefixes_of, segments

__all__ = [
    "BASE64_LIMIT",
    "DOTTED",
    "GATED",
    "HEX_LIMIT",
    "KEYWORD_GATE",
    "KEYWORD_PATTERNS",
    "PRIVATE_KEY",
    "Gated",
    "kind_of",
    "scan_line",
    "table_values",
]

BASE64_LIMIT = 4.5  # detect-secrets' documented defaults
HEX_LIMIT = 3.0
_MIN_GROUP = 8  # a captured group shorter than this is a prefix ("ghp"), not the secret

_SPECIFIC: tuple[RegexBasedDetector, ...] = tuple(
    cls()
    for cls in (
        AWSKeyDetector,
        ArtifactoryDetector,
        AzureStorageKeyDetector,
        BasicAuthDetector,
        CloudantDetector,
        DiscordBotTokenDetector,
        GitHubTokenDetector,
        GitLabTokenDetector,
        IbmCloudIamDetector,
        IbmCosHmacDetector,
        JwtTokenDetector,
        MailchimpDetector,
        NpmDetector,
        OpenAIDetector,
        PrivateKeyDetector,
        PypiTokenDetector,
        SendGridDetector,
        SlackDetector,
        SoftlayerDetector,
        SquareOAuthDetector,
        StripeDetector,
        TelegramBotTokenDetector,
        TwilioKeyDetector,
    )
)
_SPECIFIC_PRIVATE = next(p for p in _SPECIFIC if isinstance(p, PrivateKeyDetector))
_SPECIFIC_JWT = next(p for p in _SPECIFIC if isinstance(p, JwtTokenDetector))
_KEYWORD = KeywordDetector()
_KEYWORD_PATTERNS = (
    *CONFIG_DENYLIST_REGEX_TO_GROUP.items(),
    *QUOTES_REQUIRED_DENYLIST_REGEX_TO_GROUP.items(),
)
_ENTROPY: tuple[HighEntropyStringsPlugin, ...] = (
    Base64HighEntropyString(limit=BASE64_LIMIT),
    HexHighEntropyString(limit=HEX_LIMIT),
)
_ENV_LINE = ENV_LINE
_CODE_VALUE = re.compile(r"[()\[\]{}<>,]")
_DOTTED = re.compile(r"^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+$")
# a key naming an id, right before a quoted value: "id": / 'item_id': / sessionId=
_ID_KEY = re.compile(
    r"""(?:^|[^A-Za-z0-9])(?:(?:[A-Za-z0-9]*_)?(?:id|Id|ID)|[a-z][A-Za-z0-9]*(?:Id|ID))"""
    r"""["']?[ \t]*[:=][ \t]*$"""
)
# how far back from a value the key is looked for: the whole line made a long line's scan
# quadratic (41 s for one line of 485 kB); a key name this long is not an id's
_ID_KEY_SPAN = 256
_JWT_TAIL = re.compile(r"[A-Za-z0-9_\-+/=.]*")


def kind_of(plugin: BasePlugin) -> str:
    """The label of a detect-secrets plugin: its ``secret_type`` in snake case."""
    return re.sub(r"[^a-z0-9]+", "_", str(plugin.secret_type).lower()).strip("_")


def _kept(secret: str, line: str, plugin: BasePlugin) -> bool:
    """detect-secrets' heuristic filters, applied as its scans do."""
    return not (
        heuristic.is_sequential_string(secret)
        or heuristic.is_potential_uuid(secret)
        or heuristic.is_likely_id_string(secret, line, plugin)
        or heuristic.is_templated_secret(secret)
        or heuristic.is_prefixed_with_dollar_sign(secret)
        or heuristic.is_not_alphanumeric_string(secret)
    )


def _group_span(match: re.Match[str]) -> tuple[int, int]:
    """The secret's span in a match: its longest captured group when that is long enough
    to be the secret itself, else the whole match."""
    best = (match.start(), match.end())
    longest = 0
    for g in range(1, (match.re.groups or 0) + 1):
        value = match.group(g)
        if value and len(value) > longest:
            longest = len(value)
            if len(value) >= _MIN_GROUP:
                best = match.span(g)
    return best


# each specific detector's regex with its literal gate (memoir.secrets.screen): a line with
# none of a gate's strings cannot match that regex, so a text's lines are looked up by
# substring search (a fast scan of the whole text) and each regex runs only on the lines
# its gate admits — instead of ~50 regex searches on every line (an alternation of them
# all was slower still: it loses each regex's own fast scan)
_GATED: tuple[tuple[RegexBasedDetector, re.Pattern[str], Gate | None], ...] = tuple(
    (plugin, regex, gate_of(regex)) for plugin in _SPECIFIC for regex in plugin.denylist
)
_Gated = tuple[RegexBasedDetector, re.Pattern[str], "Gate | None"]


def _specific(line: str, gated: Sequence[_Gated]) -> list[tuple[BasePlugin, int, int]]:
    """The hits in ``line`` of the specific detectors' regexes ``gated`` (those its gates
    admit)."""
    found: list[tuple[BasePlugin, int, int]] = []
    for plugin, regex, _gate in gated:
        for m in regex.finditer(line):
            # a JWT's groups are its parts: the whole token is the secret
            # (its regex's last part is lazy: the signature is taken on here)
            if plugin is _SPECIFIC_JWT:
                start, end = m.start(), _JWT_TAIL.match(line, m.end()).end()  # type: ignore[union-attr]
            else:
                start, end = _group_span(m)
            if plugin is _SPECIFIC_PRIVATE or _kept(line[start:end], line, plugin):
                found.append((plugin, start, end))
    return found


# every keyword pattern holds one of these words (case-insensitive): a line with none of
# them cannot match, so the gate and one search skip the dozen patterns and the
# indirect-reference check (the redaction's main cost, docs/benchmarks.md)
_ANY_KEYWORD = re.compile("|".join(DENYLIST), re.IGNORECASE)
_KEYWORD_GATE = gate_of(_ANY_KEYWORD)


# most keyword patterns begin with a denylist word: such a pattern is tried only where one
# of its first words begins (the same matches as finditer, without a scan of its big
# case-insensitive alternation at every position of a long line)
_KEYWORD_STARTS = tuple((regex, group, prefixes_of(regex)) for regex, group in _KEYWORD_PATTERNS)


def _keyword(
    line: str, possible: bool = True, *, gates: bool = True
) -> list[tuple[BasePlugin, int, int]]:
    """Keyword hits in ``line`` (none when not ``possible``: its gate said so); without
    ``gates`` each pattern scans the whole line (the reference)."""
    if not possible:
        return []
    folded = fold(line)
    if gates and _KEYWORD_GATE is not None and not _KEYWORD_GATE.admits(line, folded):
        return []
    if _ANY_KEYWORD.search(line) is None or heuristic.is_indirect_reference(line):
        return []
    found: list[tuple[BasePlugin, int, int]] = []
    for regex, group, prefixes in _KEYWORD_STARTS:
        matches = (
            regex.finditer(line)
            if not gates or prefixes is None or len(folded) != len(line)
            else _matches_from(regex, line, match_starts(line, folded, *prefixes))
        )
        for m in matches:
            start, end = m.span(group)
            value = line[start:end].strip()
            if (
                value
                and not any(ch.isspace() for ch in value)
                and not _DOTTED.match(value.strip("'\"`"))  # settings.api_key: code
                and _kept(value, line, _KEYWORD)
            ):
                found.append((_KEYWORD, start, end))
    return found


def _matches_from(regex: re.Pattern[str], line: str, starts: list[int]) -> list[re.Match[str]]:
    """What ``regex.finditer(line)`` yields when every match begins at one of ``starts``
    (ascending): the leftmost match at or after the end of the previous one."""
    out: list[re.Match[str]] = []
    end = 0
    for at in starts:
        if at < end:
            continue
        m = regex.match(line, at)
        if m is not None:
            out.append(m)
            end = max(m.end(), at + 1)
    return out


def _high_entropy(plugin: HighEntropyStringsPlugin, value: str) -> bool:
    return bool(value) and plugin.calculate_shannon_entropy(value) > plugin.entropy_limit


def _entropy(line: str, *, quoted: bool = True) -> list[tuple[BasePlugin, int, int]]:
    """High-entropy quoted strings (unless not ``quoted``) and the value of an ``.env``
    assignment that is the whole line."""
    found: list[tuple[BasePlugin, int, int]] = []
    env = _ENV_LINE.match(line) if "=" in line else None
    quoted = quoted and ("'" in line or '"' in line)  # the plugins' regexes need a quote
    for plugin in _ENTROPY:
        for m in plugin.regex.finditer(line) if quoted else ():  # (quote)(value)(quote)
            value = m.group(2)
            if _ID_KEY.search(line, max(0, m.start(1) - _ID_KEY_SPAN), m.start(1)):
                continue  # the value of an id key ({"id": "3089bc67…"}): a name, not a secret
            if _high_entropy(plugin, value) and _kept(value, line, plugin):
                found.append((plugin, m.start(2), m.end(2)))
        if env is not None and not _ID_KEY.search(line[: env.start("value")].rstrip("'\"")):
            value = env.group("value")
            charset: Any = plugin.charset
            in_charset = all(ch in charset for ch in value)
            if in_charset and _high_entropy(plugin, value) and _kept(value, line, plugin):
                found.append((plugin, env.start("value"), env.end("value")))
    return found


_segments = segments


def _scan(
    line: str, gated: Sequence[_Gated], keywords: bool, *, gates: bool = True
) -> list[tuple[int, list[tuple[BasePlugin, int, int]]]]:
    """Each detector family's hits in one line, by rank (specific, keyword, entropy),
    spans in the line; ``gated``: the specific regexes to run on it, ``keywords``: whether
    the keyword gate admits it. Joined assignments are read piece by piece
    (:func:`_segments`); the line whole is still read for quoted strings a split would cut."""
    pieces = _segments(line)
    if len(pieces) == 1:
        return [
            (0, _specific(line, gated)),
            (1, _keyword(line, keywords, gates=gates)),
            (2, _entropy(line)),
        ]
    out = [(0, _specific(line, gated)), (2, _entropy(line))]
    keywords = keywords and _ANY_KEYWORD.search(line) is not None
    for at, piece in pieces:
        if keywords:
            words = [
                (p, s, e)
                for p, s, e in _keyword(piece, gates=gates)
                if _credential_like(piece[s:e])
            ]
            out.append((1, [(p, at + s, at + e) for p, s, e in words]))
        if "=" in piece:  # the quoted strings were read in the whole line
            env = _entropy(piece, quoted=False)
            out.append((2, [(p, at + s, at + e) for p, s, e in env]))
    return out


def _credential_like(value: str) -> bool:
    """Whether a keyword value cut out of a joined line reads as a credential, not code: a
    call, an index or a tuple (``None)``, ``tuple[str``, ``date(2022``), or a dotted name
    (``settings.db_password``) is code the cut split."""
    value = value.strip().strip("'\"`")
    return bool(value) and _CODE_VALUE.search(value) is None and not _DOTTED.match(value)


# the names memoir.secrets reads
GATED = _GATED
Gated = _Gated
KEYWORD_GATE = _KEYWORD_GATE
KEYWORD_PATTERNS = _KEYWORD_PATTERNS
PRIVATE_KEY = _SPECIFIC_PRIVATE
DOTTED = _DOTTED
scan_line = _scan


def _min_length(limit: float) -> int:
    """The shortest string whose Shannon entropy may exceed ``limit``: a string of n
    characters has at most log2(n) bits each (a margin for rounding)."""
    n = 1
    while math.log2(n) <= limit - 1e-9:
        n += 1
    return n


def table_values() -> dict[str, Any]:
    """What :func:`memoir.secrets.screen.plugin_table` reads, from the installed
    detect-secrets (tuples where the file has lists)."""

    def gate(g: Gate | None) -> tuple[Any, bool]:
        return ((), False) if g is None else (g.clauses, g.folded)

    return {
        "SPECIFIC": tuple((r.pattern, int(r.flags), *gate(g)) for _p, r, g in _GATED),
        "KEYWORD_GATE": gate(_KEYWORD_GATE),
        "ANY_KEYWORD": (_ANY_KEYWORD.pattern, int(_ANY_KEYWORD.flags)),
        "KEYWORDS": tuple((r.pattern, int(r.flags), group) for r, group in _KEYWORD_PATTERNS),
        "ENTROPY": tuple(
            (p.regex.pattern, int(p.regex.flags), p.charset, _min_length(p.entropy_limit))
            for p in _ENTROPY
        ),
    }


if __name__ == "__main__":  # regenerate memoir/data/secret_plugin_table.json
    from memoir.secrets.screen import PLUGIN_TABLE

    PLUGIN_TABLE.write_text(json.dumps(table_values(), indent=1) + "\n", encoding="utf-8")
