from __future__ import annotations

from memoir.llm import default_counter
from memoir.llm.offline_summary import text_summary


def test_a_repeated_sentence_is_said_once() -> None:
    line = "For the gateway, retries must reuse the same idempotency key and poll the intent."
    transcript = "\n".join(
        [
            "User: Plan the payments migration with me step by step.",
            *(f"Assistant: {line}" for _ in range(6)),
            "User: What about refunds?",
            "Assistant: Refunds now pass payment_intent instead of charge.",
        ]
    )
    out = text_summary(transcript, 400, default_counter().count)
    assert out.lower().count("reuse the same idempotency key") == 1
    assert "refunds" in out.lower()
