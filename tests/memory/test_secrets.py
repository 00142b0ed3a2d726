"""The secret detector, both directions, with spans."""

from __future__ import annotations

import pytest

from memoir.secrets import find_secrets, has_secret

PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\n"
    "MIIEowIBAAKCAQEAv8Zp2Jx1q3Jm0q0u9s4nGf1QeXbHk3n0dJ5Lw3q\n"
    "-----END RSA PRIVATE KEY-----"
)


@pytest.mark.parametrize(
    ("text", "kind", "secret"),
    [
        ("my key is AKIAIOSFODNN7EXAMPLE ok", "aws_access_key", "AKIAIOSFODNN7EXAMPLE"),
        (
            "use ghp_abcdefghijklmnopqrstuvwxyz0123456789 for CI",
            "github_token",
            "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
        ),
        ("postgres://bob:hunter2pass@db.example.com/app", "basic_auth_credentials", "hunter2pass"),
        ("DB_PASSWORD=s3cr3tV4lue", "secret_keyword", "s3cr3tV4lue"),
        ('api_key: "abc123xyz789"', "secret_keyword", "abc123xyz789"),
        ("AUTH_TOKEN=9f8e7d6c5b4a39281706aa", "hex_high_entropy_string", "9f8e7d6c5b4a39281706aa"),
        (
            "export SESSION_KEY='q8Zr2LmX0vT7bN4kP1sW9yD3'",
            "base64_high_entropy_string",
            "q8Zr2LmX0vT7bN4kP1sW9yD3",
        ),
        (
            "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
            "slack_token",
            "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
        ),
    ],
)
def test_catches(text: str, kind: str, secret: str) -> None:
    found = find_secrets(text)
    assert [(f.kind, text[f.start : f.end]) for f in found] == [(kind, secret)]
    assert has_secret(text)


def test_private_key_block_spans_the_whole_block() -> None:
    text = f"here it is:\n{PEM}\nthanks"
    (finding,) = find_secrets(text)
    assert finding.kind == "private_key"
    assert text[finding.start : finding.end] == PEM


def test_unterminated_private_key_runs_to_the_end() -> None:
    text = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmU"
    (finding,) = find_secrets(text)
    assert (finding.start, finding.end) == (0, len(text))


def test_positions_are_in_the_whole_text() -> None:
    text = "line one\nline two\nDB_PASSWORD=s3cr3tV4lue\n"
    (finding,) = find_secrets(text)
    assert text[finding.start : finding.end] == "s3cr3tV4lue"
    assert finding.start == text.index("s3cr3t")


@pytest.mark.parametrize(
    "text",
    [
        "I prefer tabs over spaces and I live in Lisbon with my two cats.",
        "I fixed it in commit 3f2a9c1b4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f90 yesterday.",
        "The fix landed in 3f2a9c1 and then in a1b2c3d4e5.",
        "The secret: keep it simple.",
        "Our secret sauce is good tests.",
        "The password reset flow sends an email.",
        "uuid 123e4567-e89b-12d3-a456-426614174000 is the request id",
        "DEBUG=true",
        "PORT=8080",
        "NODE_ENV=production",
        "password = os.environ['DB_PASSWORD']",
        "See https://example.com/docs?id=123 for details.",
        "We decided to use PostgreSQL 16 on port 5432.",
        "",
    ],
)
def test_does_not_flag(text: str) -> None:
    assert find_secrets(text) == []
    assert not has_secret(text)


def test_several_findings_in_order() -> None:
    text = "AKIAIOSFODNN7EXAMPLE and ghp_abcdefghijklmnopqrstuvwxyz0123456789"
    assert [f.kind for f in find_secrets(text)] == ["aws_access_key", "github_token"]


def test_an_item_is_shown_with_its_secrets_masked() -> None:
    """The validator keeps secrets out of memory; what is shown masks any that got in
    (an item of an older version, an import) — content and quotes alike."""
    from datetime import UTC, datetime

    from memoir.memory.item_rows import MemoryItemRow, MemorySourceRow
    from memoir.memory.recall import item_json

    item = MemoryItemRow(
        id="m1",
        session_id="s",
        project="p",
        scope="project",
        kind="fact",
        content="The deploy key is AKIAQYLPMN5HHHFPZAM2.",
        normalized="the deploy key",
        keys=("deploy",),
        operation_id="op",
        created_at=datetime(2025, 1, 1, tzinfo=UTC),
        sources=(MemorySourceRow("s", 3, "use AKIAQYLPMN5HHHFPZAM2 for deploys"),),
    )
    data = item_json(item, lambda _sid, _n: "s:1")
    assert data["content"] == "The deploy key is [redacted: AWS access key]."
    assert data["sources"][0]["quote"] == "use [redacted: AWS access key] for deploys"
    assert item.content == "The deploy key is AKIAQYLPMN5HHHFPZAM2."  # the row is unchanged
