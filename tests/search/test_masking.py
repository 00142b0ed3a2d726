"""Masking secrets in search snippets (pure): whole secrets, a secret a snippet's cut split,
and highlight marks moved with the text."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memoir.model import Exchange
from memoir.search.hits import MARK_END as E
from memoir.search.hits import MARK_START as S
from memoir.search.hits import SearchHit, exchange_secrets, mask_hits, mask_snippet, split_marks

AWS = "AKIAQYLPMN5HHHFPZAM2"
SHOWN = "[redacted: AWS access key]"
KNOWN = [("aws_access_key", AWS)]
PEM_BODY = "MIIEowIBAAKCAQEAv8Zp2Jx1q3Jm0q0u9s4nGf1QeXbHk3n0dJ5Lw3q"
PEM = f"-----BEGIN RSA PRIVATE KEY-----\n{PEM_BODY}\n-----END RSA PRIVATE KEY-----"


def _shown(snippet: str) -> tuple[str, list[str]]:
    plain, spans = split_marks(snippet)
    return plain, [plain[a:b] for a, b in spans]


@pytest.mark.parametrize(
    ("snippet", "plain", "highlighted"),
    [
        (  # whole, between two highlights: the second one moves
            f"my {S}key{E} is {AWS} and {S}deploy{E} now",
            f"my key is {SHOWN} and deploy now",
            ["key", "deploy"],
        ),
        (  # the window starts inside the secret: its end is masked
            f"… HHFPZAM2 is the {S}key{E}",
            f"… {SHOWN} is the key",
            ["key"],
        ),
        (  # FTS5's ellipsis has no space
            f"…PMN5HHHFPZAM2 is the {S}key{E}",
            f"…{SHOWN} is the key",
            ["key"],
        ),
        (  # the window ends inside it: its start is masked
            f"the {S}key{E} is AKIAQYLP …",
            f"the key is {SHOWN} …",
            ["key"],
        ),
        ("… LPMN5HHHFP …", f"… {SHOWN} …", []),  # the window inside the secret
        (  # a highlight on the secret covers its placeholder
            f"{S}{AWS}{E} was the {S}key{E}",
            f"{SHOWN} was the key",
            [SHOWN, "key"],
        ),
        (  # a highlight reaching into it grows over the placeholder
            f"a {S}key{E}={AWS[:4]}{S}{AWS[4:8]}{E}{AWS[8:]} b",
            f"a key={SHOWN} b",
            ["key", SHOWN],
        ),
    ],
)
def test_mask_snippet(snippet: str, plain: str, highlighted: list[str]) -> None:
    assert _shown(mask_snippet(snippet, KNOWN)) == (plain, highlighted)


@pytest.mark.parametrize(
    "snippet",
    [
        f"nothing {S}secret{E} here",
        "ZAM2 is a word like any other where no cut is",  # a piece only counts at a cut
        f"the {S}key{E} is AKI …",  # three characters of a secret tell nothing
        "",
    ],
)
def test_snippets_without_a_secret_or_its_piece_are_kept(snippet: str) -> None:
    assert mask_snippet(snippet, KNOWN) == snippet


def test_a_secret_the_snippet_alone_shows_is_masked_without_knowing_it() -> None:
    assert _shown(mask_snippet(f"the {S}token{E} {AWS}")) == (f"the token {SHOWN}", ["token"])


def test_exchange_secrets_flatten_a_key_block_as_snippets_do() -> None:
    x = Exchange(
        id="s:1",
        session_id="s",
        first_ordinal=1,
        last_ordinal=2,
        user_text=f"the host key is {PEM} ok",
        assistant_text="noted",
        tool_names=(),
        started_at=None,
        ended_at=None,
    )
    known = exchange_secrets(x)
    assert ("private_key", PEM) in known
    flat = " ".join(PEM.split())
    assert ("private_key", flat) in known
    # a flattened window (make_snippet's) cut inside the block
    window = f"… {PEM_BODY} -----END RSA PRIVATE KEY----- {S}ok{E}"
    assert _shown(mask_snippet(window, known)) == ("… [redacted: private key] ok", ["ok"])


def test_mask_hits_masks_snippet_and_summary_and_keeps_clean_hits() -> None:
    when = datetime(2025, 1, 1, tzinfo=UTC)
    dirty = SearchHit("s", "s:1", when, "p", 1.0, f"use {AWS} {S}now{E}", f"key {AWS}")
    clean = SearchHit("s", "s:3", when, "p", 0.5, f"{S}now{E} or never", "fine")
    masked, kept = mask_hits([dirty, clean], {})
    assert kept is clean
    assert masked.snippet == f"use {SHOWN} {S}now{E}"
    assert masked.summary == f"key {SHOWN}"
    data = masked.to_json()
    assert [data["snippet"][a:b] for a, b in data["highlights"]] == ["now"]
