"""The one secret detector (a value module: the model boundary, the memory validator and
every default view use it): :func:`find_secrets` returns :class:`Finding` values (a kind
label and the span in the text); :func:`has_secret` says whether there is any;
:func:`redact` replaces each secret by a stable placeholder named by its kind
(``[redacted: AWS access key]``) and counts them; :func:`mask` / :func:`mask_json` are what
is shown. Pure and deterministic: the same text always redacts to the same text.

Two rule sets run side by side over each line: detect-secrets' plugins
(:mod:`memoir.secrets.plugins`: keyword assignments, entropy, private-key blocks, the older
token formats) and gitleaks' default rules with Memoir's additions
(:mod:`memoir.secrets.rules`: today's token formats, a password told in prose). One
Aho-Corasick pass (:class:`memoir.secrets.screen.Needles`) says which lines each plugin regex
and each rule can match. Where two find the same span, the first of this order names it:
detect-secrets' specific detectors, the rules for one service, its keyword plugin, its
entropy plugins, then the rules on a keyword and any value. :func:`detector_id` names what
the detector finds (stored derived text is re-scanned when it changes).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

from memoir.secrets import screen
from memoir.secrets.rules import detector_id, rule_at, rule_hits, rule_keywords
from memoir.secrets.screen import Needles, fold

if TYPE_CHECKING:
    from memoir.secrets.plugins import Gated

__all__ = [
    "BASE64_LIMIT",
    "HEX_LIMIT",
    "Finding",
    "Redacted",
    "detector_id",
    "find_secrets",
    "has_secret",
    "kind_of",
    "mask",
    "mask_json",
    "placeholder",
    "redact",
]

# a span two detectors find is named by the first: detect-secrets' specific detectors (0),
# the gitleaks-format rules for one service (1), its keyword (2) and entropy (3) plugins,
# then the rules on a keyword and any value (4)
_RULE_RANK = 1
_GENERIC_RANK = 4
_GENERIC_RULES = frozenset({"generic-api-key", "password-in-prose"})
# what memoir.secrets.plugins holds, imported on first use (the tests read them here)
_LAZY = {
    "_GATED": "GATED",
    "_KEYWORD_PATTERNS": "KEYWORD_PATTERNS",
    "BASE64_LIMIT": "BASE64_LIMIT",
    "HEX_LIMIT": "HEX_LIMIT",
    "kind_of": "kind_of",
}
_PEM_END = re.compile(r"-----END [A-Z0-9 ]*-----|^[ \t]*$", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class Finding:
    """A secret at ``text[start:end]``; ``kind`` is a stable label (``aws_access_key``,
    ``private_key``, ``github_token``, ``secret_keyword``, ``hex_high_entropy_string`` …)."""

    kind: str
    start: int
    end: int


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from memoir.secrets import plugins

        return getattr(plugins, _LAZY[name])
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@cache
def _needles() -> Needles:
    """Every gate's strings in one automaton, from the plugins' table and the
    rules' keywords (neither detect-secrets nor a rule's regex is loaded for it): tag
    ``("g", i)`` for the ``i``-th specific regex's gate's first clause, ``("k", 0)`` for
    the keyword gate's, ``("r", n)`` for rule ``n``'s keywords."""
    needles: list[tuple[str, tuple[str, int]]] = []
    for i in range(len(screen.plugin_table()["SPECIFIC"])):
        if (gate := screen.gate(i)) is not None:
            needles += [(s, ("g", i)) for s in gate.clauses[0]]
    if (gate := screen.keyword_gate()) is not None:
        needles += [(s, ("k", 0)) for s in gate.clauses[0]]
    for n, keywords in enumerate(rule_keywords()):
        needles += [(k, ("r", n)) for k in keywords]
    return Needles(needles)


@cache
def _keywordless() -> tuple[int, ...]:
    return tuple(n for n, keywords in enumerate(rule_keywords()) if not keywords)


def _rule_findings(
    lines: list[tuple[int, str]], admitted: dict[int, set[int]]
) -> list[tuple[int, int, int, str]]:
    """The hits of the gitleaks-format rules as ``(start, -end, rank, kind)``: rule ``n``
    runs on the lines ``admitted[n]`` (those holding one of its keywords, as gitleaks
    reads a fragment), and the rules with no keyword on every line. A rule is compiled
    the first time it runs."""
    out: list[tuple[int, int, int, str]] = []
    todo: dict[int, Iterable[int]] = dict.fromkeys(_keywordless(), range(len(lines)))
    todo.update(admitted)
    for n in sorted(todo):
        rule = rule_at(n)
        kind = rule.id.replace("-", "_")
        rank = _GENERIC_RANK if rule.id in _GENERIC_RULES else _RULE_RANK
        for i in sorted(todo[n]):
            offset, line = lines[i]
            for start, end in rule_hits(rule, line):
                out.append((offset + start, -(offset + end), rank, kind))
    return out


def _key_start(line: str, start: int) -> int:
    """Where a private key's marker begins: the dashes before ``BEGIN …``, if any."""
    while start > 0 and line[start - 1] == "-":
        start -= 1
    return start


def _lines(text: str) -> list[tuple[int, str]]:
    out, offset = [], 0
    for line in text.splitlines(keepends=True):
        out.append((offset, line.rstrip("\r\n")))
        offset += len(line)
    return out


def _pem_block_end(text: str, start: int) -> int:
    """Where a private-key block opening at ``start`` ends: after its END line, else at
    the first blank line, else at the end of the text."""
    m = _PEM_END.search(text, start)
    return m.end() if m is not None else len(text)


def find_secrets(text: str) -> list[Finding]:
    """Every secret in ``text``, in order of position; a finding inside another one's span
    (an entropy hit on a token a specific detector named) is left out."""
    return _find(text, gates=True)


def _find(text: str, *, gates: bool) -> list[Finding]:
    """:func:`find_secrets`; without ``gates`` every regex runs on every line (the
    reference the gated scan is tested against). detect-secrets' plugins are loaded only
    when :func:`memoir.screen.may_find` says they may find something."""
    lines = _lines(text)
    rules_on: dict[int, set[int]] = {}  # rule index: the lines holding one of its keywords
    starts = [offset for offset, _ in lines]
    found = _needles().lines_of(text, fold(text), starts)
    for n, tags in found.items():
        for family, i in tags:
            if family == "r":
                rules_on.setdefault(i, set()).add(n)
    raw: list[tuple[int, int, int, str]] = []  # (start, -end, rank, kind)
    if not gates or screen.may_find([line for _, line in lines], found):
        raw += _plugin_findings(text, lines, found, gates=gates)
    raw += _rule_findings(lines, rules_on)
    findings: list[Finding] = []
    for start, neg_end, _rank, kind in sorted(raw):
        end = -neg_end
        if any(f.start <= start and end <= f.end for f in findings):
            continue
        findings.append(Finding(kind, start, end))
    return findings


def _plugin_findings(
    text: str, lines: list[tuple[int, str]], found: dict[int, set[Any]], *, gates: bool
) -> list[tuple[int, int, int, str]]:
    """detect-secrets' plugins' hits as ``(start, -end, rank, kind)``: the specific
    regexes on the lines their gates admit (``found``: each line's gate tags), the keyword
    plugin on the lines its gate admits, the entropy plugins on every line; without
    ``gates``, every regex on every line."""
    from memoir.secrets.plugins import GATED, KEYWORD_GATE, PRIVATE_KEY, kind_of, scan_line

    every: list[Gated] = [(plugin, regex, None) for plugin, regex, _ in GATED]
    per_line: list[list[Gated]] = [every] * len(lines)
    keyworded: set[int] | None = None  # None: every line
    if gates:
        ungated = [g for g in GATED if g[2] is None]
        per_line = [list(ungated) for _ in lines]
        keyworded = set()
        for n, tags in found.items():
            line = lines[n][1]
            for family, i in sorted(tags):
                if family == "k":
                    if KEYWORD_GATE is not None and KEYWORD_GATE.admits(line):
                        keyworded.add(n)
                elif family == "g" and (gate := GATED[i][2]) is not None and gate.admits(line):
                    per_line[n].append(GATED[i])
    raw: list[tuple[int, int, int, str]] = []
    for n, (offset, line) in enumerate(lines):
        keywords = keyworded is None or n in keyworded
        for rank, hits in scan_line(line, per_line[n], keywords, gates=gates):
            for plugin, start, end in hits:
                if plugin is PRIVATE_KEY:  # the key block only, not its line's text
                    start = offset + _key_start(line, start)
                    end = _pem_block_end(text, offset + end)
                else:
                    start, end = offset + start, offset + end
                raw.append((start, -end, rank if rank == 0 else rank + 1, kind_of(plugin)))
    return raw


def has_secret(text: str) -> bool:
    return bool(text) and bool(find_secrets(text))


_NAMES = {
    "aws_access_key": "AWS access key",
    "azure_storage_account_access_key": "Azure storage key",
    "artifactory_credentials": "Artifactory credentials",
    "basic_auth_credentials": "password in a URL",
    "cloudant_credentials": "Cloudant credentials",
    "discord_bot_token": "Discord bot token",
    "github_token": "GitHub token",
    "gitlab_token": "GitLab token",
    "ibm_cloud_iam_key": "IBM Cloud key",
    "ibm_cos_hmac_credentials": "IBM COS credentials",
    "json_web_token": "JSON web token",
    "mailchimp_access_key": "Mailchimp key",
    "npm_tokens": "npm token",
    "openai_token": "OpenAI key",
    "private_key": "private key",
    "pypi_token": "PyPI token",
    "sendgrid_api_key": "SendGrid key",
    "slack_token": "Slack token",
    "softlayer_credentials": "SoftLayer credentials",
    "square_oauth_secret": "Square OAuth secret",
    "stripe_access_key": "Stripe key",
    "telegram_bot_token": "Telegram bot token",
    "twilio_api_key": "Twilio key",
    "secret_keyword": "secret",
    # gitleaks-format rules (memoir.secrets.rules); any other is named by its id
    "anthropic_api_key": "Anthropic key",
    "anthropic_admin_api_key": "Anthropic key",
    "anthropic_key": "Anthropic key",
    "openai_api_key": "OpenAI key",
    "openai_key": "OpenAI key",
    "openai_legacy_key": "OpenAI key",
    "github_pat": "GitHub token",
    "github_fine_grained_pat": "GitHub token",
    "github_oauth": "GitHub token",
    "github_app_token": "GitHub token",
    "github_refresh_token": "GitHub token",
    "gitlab_pat": "GitLab token",
    "gcp_api_key": "Google API key",
    "google_oauth_client_secret": "Google OAuth secret",
    "huggingface_access_token": "Hugging Face token",
    "npm_access_token": "npm token",
    "pypi_upload_token": "PyPI token",
    "databricks_api_token": "Databricks token",
    "digitalocean_pat": "DigitalOcean token",
    "digitalocean_access_token": "DigitalOcean token",
    "shopify_access_token": "Shopify token",
    "shopify_shared_secret": "Shopify secret",
    "linear_api_key": "Linear key",
    "notion_api_token": "Notion token",
    "notion_secret_token": "Notion token",
    "slack_webhook_url": "Slack webhook",
    "stripe_access_token": "Stripe key",
    "sendgrid_api_token": "SendGrid key",
    "azure_storage_connection_string": "Azure storage key",
    "jwt": "JSON web token",
    "generic_api_key": "secret",
    "password_in_prose": "password",
    "base64_high_entropy_string": "random token",
    "hex_high_entropy_string": "random token",
}


def placeholder(kind: str) -> str:
    """The text a secret of ``kind`` is replaced by: ``[redacted: AWS access key]``."""
    return f"[redacted: {_NAMES.get(kind, kind.replace('_', ' '))}]"


@dataclass(frozen=True, slots=True)
class Redacted:
    """``text`` with every secret replaced; ``counts`` the secrets by kind."""

    text: str
    counts: dict[str, int]

    @property
    def total(self) -> int:
        return sum(self.counts.values())


def mask(text: str) -> str:
    """``text`` as it is shown: each secret replaced by its placeholder (:func:`redact`)."""
    return redact(text).text if text else text


def mask_json(value: Any) -> Any:
    """A JSON value (a tool call's input, an event's payload) with every string in it
    masked, keys kept; a value holding no secret comes back as the same object."""
    if isinstance(value, str):
        return mask(value)
    if isinstance(value, list):
        items = [mask_json(v) for v in value]
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    if isinstance(value, dict):
        pairs = {k: mask_json(v) for k, v in value.items()}
        return value if all(pairs[k] is v for k, v in value.items()) else pairs
    return value


def redact(text: str) -> Redacted:
    """``text`` with each secret :func:`find_secrets` finds replaced by its placeholder."""
    if not text:
        return Redacted(text, {})
    findings = find_secrets(text)
    if not findings:
        return Redacted(text, {})
    parts: list[str] = []
    counts: dict[str, int] = {}
    at = 0
    for f in findings:
        if f.start < at:  # overlaps one already replaced: its tail goes too
            at = max(at, f.end)
            continue
        parts.append(text[at : f.start])
        parts.append(placeholder(f.kind))
        counts[f.kind] = counts.get(f.kind, 0) + 1
        at = f.end
    parts.append(text[at:])
    return Redacted("".join(parts), counts)
