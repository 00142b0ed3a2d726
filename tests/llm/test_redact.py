"""redact(): each secret replaced by its kind's placeholder; look-alikes left alone."""

from __future__ import annotations

import pytest

from memoir.secrets import placeholder, redact

from .test_redaction_wire import SECRETS


@pytest.mark.parametrize(("kind", "secret", "context"), SECRETS, ids=[s[0] for s in SECRETS])
def test_each_kind_is_replaced_by_its_placeholder(kind: str, secret: str, context: str) -> None:
    text = context.format(secret=secret)
    done = redact(text)
    assert secret not in done.text
    assert placeholder(kind) in done.text
    assert done.counts == {kind: 1}
    assert redact(text) == done  # deterministic


def test_placeholders_read_as_english() -> None:
    assert placeholder("aws_access_key") == "[redacted: AWS access key]"
    assert placeholder("private_key") == "[redacted: private key]"


@pytest.mark.parametrize(
    "text",
    [
        "I fixed it in commit 3f2a9c1b4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f90 yesterday.",
        "uuid 123e4567-e89b-12d3-a456-426614174000 is the request id",
        "The password reset flow sends an email.",
        "PORT=8080",
        "password = os.environ['DB_PASSWORD']",
        "",
    ],
)
def test_look_alikes_are_kept(text: str) -> None:
    assert redact(text).text == text
    assert redact(text).total == 0
