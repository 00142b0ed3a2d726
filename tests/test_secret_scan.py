"""The gated scan of memoir.secrets finds exactly what running every detector regex on
every line finds (the gates only skip lines that cannot match)."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from memoir import secrets

FIXTURES = Path(__file__).resolve().parents[2] / "shared" / "fixtures" / "claude-code"
PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\n"
    "MIIEowIBAAKCAQEAv8Zp2Jx1q3Jm0q0u9s4nGf1Qe\n"
    "-----END RSA PRIVATE KEY-----"
)
LINES = [
    "aws_access_key_id = AKIAQYLPMN5HHHFPZAM2",
    "gh auth login --with-token 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",
    "DATABASE_URL=postgres://bob:Zq8hunter2pass@db.example.com/app",
    "DB_PASSWORD=s3cr3tV4lue",
    "AUTH_TOKEN=9f8e7d6c5b4a39281706aa",
    "export SESSION_KEY='q8Zr2LmX0vT7bN4kP1sW9yD3'",
    "SLACK=xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
    "stripe key sk_live_4eC39HqLyjWDarjtT1zdp7dc",
    "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N",
    "//registry.npmjs.org/:_authToken=npm_abcdefghijklmnopqrstuvwxyz0123456789",
    'config = {"api_key": "abc123xyz789", "user": "ann"}',
    "A=1; PASSWORD=hunter2hunter2 && export TOKEN='Zx81kQ9mW2pL7vB4nC6tR3yU'",
    "ſecret = 'abcdefgh12345678'; \u212aEY: q8Zr2LmX0vT7bN4k",
    PEM,
]


def _texts() -> list[str]:
    """Real text: the Claude Code fixtures' messages, Memoir's own secret tests (full of
    planted credentials and near misses) and a sample of its source (code is where the
    keyword patterns and their false positives live)."""
    root = Path(__file__).resolve().parents[1]
    out = [p.read_text(encoding="utf-8") for p in sorted(FIXTURES.rglob("*.jsonl"))]
    out += [p.read_text(encoding="utf-8") for p in sorted(root.glob("tests/**/test_*secret*.py"))]
    out += [p.read_text(encoding="utf-8") for p in sorted(root.glob("tests/**/test_*mask*.py"))]
    out += [p.read_text(encoding="utf-8") for p in sorted(root.glob("src/memoir/**/*.py"))[::6]]
    return out


def test_real_texts_with_secrets_planted_scan_as_the_reference_does() -> None:
    texts = _texts()
    assert sum(map(len, texts)) > 300_000
    total = 0
    for n, text in enumerate(texts):
        planted = f"{text}\n{LINES[n % len(LINES)]}"
        gated = secrets._find(planted, gates=True)
        assert gated == secrets._find(planted, gates=False), n
        total += len(gated)
    assert total >= len(texts)  # the planted secrets, at least, were found


def test_one_long_line_scans_as_the_reference_does() -> None:
    text = " ".join(t.replace("\n", " ") for t in _texts()[:40]) + " " + " ".join(LINES)
    gated = secrets._find(text, gates=True)
    assert gated == secrets._find(text, gates=False)
    assert len(gated) >= 10


_noise = st.text(
    alphabet="abcdefghijklmnopqrstuvwxyz ABCDEFKSTY0123456789=:'\"_-./;&\n", max_size=40
)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.one_of(st.sampled_from(LINES), _noise), max_size=10),
    st.sampled_from(["\n", " ", "; "]),
)
def test_mixed_texts_scan_as_the_reference_does(parts: list[str], glue: str) -> None:
    text = glue.join(parts)
    assert secrets._find(text, gates=True) == secrets._find(text, gates=False)
