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


PEM_BODY = "MIIEowIBAAKCAQEAv8Zp2Jx1q3Jm0q0u9s4nGf1QeXbHk3n0dJ5Lw3q"
PEM_LINES = f"-----BEGIN RSA PRIVATE KEY-----\n{PEM_BODY}\n-----END RSA PRIVATE KEY-----"
PEM_FLAT = f"-----BEGIN RSA PRIVATE KEY----- {PEM_BODY} -----END RSA PRIVATE KEY-----"


# (text, what it must read after redaction, the secrets that must be gone)
JOINED = [
    (
        "DB_PASSWORD=s3cr3tV4lue; API_KEY=abc123xyz789q",
        "DB_PASSWORD=[redacted: secret]; API_KEY=[redacted: secret]",
        ("s3cr3tV4lue", "abc123xyz789q"),
    ),
    (
        "DB_PASSWORD=s3cr3tV4lue;API_KEY=abc123xyz789q",
        "DB_PASSWORD=[redacted: secret];API_KEY=[redacted: secret]",
        ("s3cr3tV4lue", "abc123xyz789q"),
    ),
    (
        "AUTH_TOKEN=9f8e7d6c5b4a39281706aa; SESSION_KEY=q8Zr2LmX0vT7bN4kP1sW9yD3",
        "AUTH_TOKEN=[redacted: random token]; SESSION_KEY=[redacted: random token]",
        ("9f8e7d6c5b4a39281706aa", "q8Zr2LmX0vT7bN4kP1sW9yD3"),
    ),
    (
        "export AUTH_TOKEN=9f8e7d6c5b4a39281706aa && SESSION_KEY=q8Zr2LmX0vT7bN4kP1sW9yD3 ./run",
        "export AUTH_TOKEN=[redacted: random token] && SESSION_KEY=[redacted: random token] ./run",
        ("9f8e7d6c5b4a39281706aa", "q8Zr2LmX0vT7bN4kP1sW9yD3"),
    ),
    (
        "cd app && DB_PASSWORD=s3cr3tV4lue API_KEY=abc123xyz789q make deploy",
        "cd app && DB_PASSWORD=[redacted: secret] API_KEY=[redacted: secret] make deploy",
        ("s3cr3tV4lue", "abc123xyz789q"),
    ),
    (
        f"here is the key: {PEM_LINES} and that was all",
        "here is the key: [redacted: private key] and that was all",
        (PEM_BODY,),
    ),
    (
        f"one line: {PEM_FLAT} then DB_PASSWORD=s3cr3tV4lue",
        "one line: [redacted: private key] then DB_PASSWORD=[redacted: secret]",
        (PEM_BODY, "s3cr3tV4lue"),
    ),
]


@pytest.mark.parametrize(("text", "expected", "gone"), JOINED, ids=range(len(JOINED)))
def test_joined_assignments_and_mid_line_keys(
    text: str, expected: str, gone: tuple[str, ...]
) -> None:
    done = redact(text)
    assert done.text == expected  # the text around each secret is kept
    for secret in gone:
        assert secret not in done.text


@pytest.mark.parametrize(
    "text",
    ["DEBUG=true; PORT=8080; NODE_ENV=production", "a=1; b=2 and the secret: keep it simple"],
)
def test_joined_look_alikes_are_kept(text: str) -> None:
    assert redact(text).text == text


def test_the_offline_task_is_redacted_with_the_prompt() -> None:
    """The offline model reads the task, not the prompt: the task's text (strings in
    fields, tuples and dicts alike) is redacted too, an enum is kept, and the count is the
    prompt's (the same secret is not counted twice)."""
    from memoir.llm import OfflineModel
    from memoir.llm.port import ChatMessage, ModelRequest, Purpose, RequestMeta
    from memoir.llm.wiring import Redacting, redact_request
    from memoir.memory import ExtractionTask, Trigger
    from memoir.memory.evidence import SliceTurn
    from memoir.summaries.offline import MergeTask, SummaryTask

    kind, secret, context = SECRETS[0]
    said = context.format(secret=secret)
    tasks = [
        SummaryTask(f"User: {said}", previous=said),
        MergeTask(({"narrative": said, "facts": [said]},), said),
        ExtractionTask(Trigger.REMEMBER, (SliceTurn(1, "user", said, True),), 1),
    ]
    for task in tasks:
        request = ModelRequest(
            messages=(ChatMessage("user", f"<transcript>\n{said}\n</transcript>"),),
            max_tokens=800,
            meta=RequestMeta(purpose=Purpose.SUMMARY),
            task=task,
        )
        done = redact_request(request)
        assert done.meta.redacted == 1
        assert secret not in repr(done.task) and placeholder(kind) in repr(done.task)
        assert type(done.task) is type(task)
        answer = Redacting(OfflineModel()).complete(request).text
        assert secret not in answer
    assert redact_request(request).task.trigger is Trigger.REMEMBER  # type: ignore[union-attr]
    plain = ModelRequest(messages=(ChatMessage("user", "hi"),), max_tokens=9, task=tasks[0])
    assert redact_request(plain) is plain  # no secret in the prompt: nothing to redact
