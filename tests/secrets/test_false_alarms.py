"""No false alarms on ordinary text (issue 41, point 2).

Every span the detector flags on the project's own corpora is listed, and the list must
be exactly the expected one: today none (the demo corpus, ``shared/fixtures``, LoCoMo dev
hold no credential). Then a table of what looks random but is no secret.
"""

from __future__ import annotations

import base64
import hashlib
import json
import random
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memoir.secrets import find_secrets, mask

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "src" / "memoir" / "demo" / "corpus"
SHARED = ROOT.parent / "shared"
FIXTURES = SHARED / "fixtures"
LOCOMO = SHARED / "bench" / "locomo"
if not FIXTURES.is_dir():  # a worktree: shared/ is beside the main checkout
    SHARED = Path("/work/shared")
    FIXTURES, LOCOMO = SHARED / "fixtures", SHARED / "bench" / "locomo"


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)


def transcript_texts(folder: Path) -> list[tuple[str, str]]:
    """(where, text) of every string of every JSON line under ``folder`` (messages, tool
    calls, tool output), and every other line of its text files."""
    out: list[tuple[str, str]] = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        for n, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines()):
            where = f"{path.relative_to(folder)}:{n + 1}"
            try:
                out += [(where, s) for s in _strings(json.loads(line)) if s.strip()]
            except ValueError:
                if line.strip():
                    out.append((where, line))
    return out


def locomo_texts(folder: Path) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for path in sorted(folder.glob("*.json")):
        conv = json.loads(path.read_text(encoding="utf-8"))
        conv = conv.get("conversation", conv)
        for key, turns in conv.items():
            if key.startswith("session_") and isinstance(turns, list):
                out += [
                    (f"{path.name}:{t.get('dia_id')}", t["text"])
                    for t in turns
                    if isinstance(t, dict) and t.get("text")
                ]
    return out


def flagged(texts: list[tuple[str, str]]) -> list[tuple[str, str, str]]:
    return [
        (where, f.kind, text[f.start : f.end]) for where, text in texts for f in find_secrets(text)
    ]


# (corpus, what is flagged in it): the exact list; each entry would be a real credential
EXPECTED: dict[str, list[tuple[str, str, str]]] = {"demo": [], "fixtures": [], "locomo": []}


@pytest.mark.parametrize("corpus", list(EXPECTED))
def test_the_project_corpora_raise_no_false_alarm(corpus: str) -> None:
    if corpus == "demo":
        texts = transcript_texts(DEMO)
    elif corpus == "fixtures":
        if not FIXTURES.is_dir():
            pytest.skip("shared/fixtures not present")
        texts = transcript_texts(FIXTURES)
    else:
        if not LOCOMO.is_dir():
            pytest.skip("shared/bench/locomo not present")
        texts = locomo_texts(LOCOMO)
    assert len(texts) > 500  # the corpus was read
    assert flagged(texts) == EXPECTED[corpus]


_RNG = random.Random(7)
_SHA1 = hashlib.sha1(b"memoir").hexdigest()
_SHA256 = hashlib.sha256(b"memoir").hexdigest()
_B64 = base64.b64encode(_RNG.randbytes(300)).decode()

ORDINARY = [
    f"fixed in {_SHA1}, see the log",
    f"commit {_SHA1}\nAuthor: Ann <ann@example.com>",
    f"git checkout {_SHA1[:12]} && git cherry-pick {_SHA1[:7]}",
    f"request id {uuid.UUID(int=_RNG.getrandbits(128), version=4)} failed",
    f'{{"id": "{uuid.UUID(int=_RNG.getrandbits(128), version=4)}", "ok": true}}',
    f"{_SHA256}  dist/memoir-0.1.tar.gz",
    f"sha256:{_SHA256}",
    f"integrity sha512-{base64.b64encode(hashlib.sha512(b'x').digest()).decode()}",
    f"docker pull python@sha256:{_SHA256}",
    f'{{"type": "tool_result", "content": "$ base64 logo.png\\n{_B64}"}}',
    f"data:image/png;base64,{_B64}",
    "the password policy needs 12 characters",
    "The password is required and must be rotated every 90 days.",
    "Reset the password for the staging database in the console.",
    "the token expired; run `gh auth login` again",
    "the token is stored in the keychain, not in the repo",
    "Use an API key from the dashboard; never commit it.",
    "password: ${DB_PASSWORD}",
    'token = os.environ["GITHUB_TOKEN"]',
    "api_key = settings.openai_api_key",
    "export GITHUB_TOKEN=$(gh auth token)",
    "my pwd is /home/ann/src/memoir",
    "the key is in ~/.ssh/id_ed25519",
    "the token: see https://example.com/docs/tokens",
    "secret_key = get_secret('deploy')",
    "sk-learn and sk-image are the sklearn and skimage names",
    "The monkey keyboard has a pass key",
    "version 1.5.0 of detect-secrets, pip install -U memoir",
    "the API returned 401 Unauthorized, the token was 3 days old",
    # ids in JSON or code: a memory item's id shown to the extraction model, a session id
    '{"id": "3089bc67dcd27469", "kind": "fact", "keys": ["home"], "content": "I live here."}',
    "{'item_id': '9f8e7d6c5b4a3928', 'n': 1}",
    'sessionId="5ec7e7a1d0c4b3a2f1e0"',
]


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_text_stays_as_it_is(text: str) -> None:
    assert find_secrets(text) == []
    assert mask(text) == text


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("my password is hunter2", "hunter2"),
        ("the token: ab-1", None),  # too short to be one
        ("the token: kebab-case-name7", "kebab-case-name7"),
        ("my password is required", None),
        ("the password is 12 characters long", None),
        ("the staging API key is in 1Password", None),
        ("pwd: /home/ann/src", None),
        ("my password for the staging database is Tr0ub4dor&3.", "Tr0ub4dor&3"),
    ],
)
def test_a_password_told_in_prose(text: str, secret: str | None) -> None:
    spans = [text[f.start : f.end] for f in find_secrets(text)]
    assert spans == ([secret] if secret else [])
