"""Retries: only RateLimited / Transient, inside the attempt budget, honouring retry_after."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memoir.llm import ScriptedModel
from memoir.llm.port import (
    ChatMessage,
    EmptyResponse,
    ModelError,
    ModelRequest,
    OutOfCredit,
    RateLimited,
    Refused,
    Transient,
    Truncated,
    Unauthorized,
)
from memoir.llm.wiring import Retrying, RetryPolicy, backoff_delay, call_with_retries

REQUEST = ModelRequest(messages=(ChatMessage("user", "hi"),), max_tokens=10)


def _retrying(model: ScriptedModel, attempts: int = 3) -> tuple[Retrying, list[float]]:
    sleeps: list[float] = []
    return Retrying(
        model, RetryPolicy(attempts=attempts), sleep=sleeps.append, rand=lambda: 0.5
    ), sleeps


@pytest.mark.parametrize(
    ("retry", "rand", "retry_after", "expected"),
    [
        (1, 1.0, None, 1.0),
        (2, 1.0, None, 2.0),
        (3, 0.5, None, 2.0),
        (10, 1.0, None, 30.0),  # capped
        (1, 0.0, None, 0.0),
        (1, 0.2, 5.0, 5.0),  # retry_after is a floor
        (4, 1.0, 2.0, 8.0),  # backoff above retry_after wins
        (1, 1.0, 61.0, None),  # longer than max_wait_s: give up
    ],
)
def test_backoff_delay(
    retry: int, rand: float, retry_after: float | None, expected: float | None
) -> None:
    assert backoff_delay(retry, RetryPolicy(), retry_after=retry_after, rand=rand) == expected


@given(st.integers(1, 40), st.floats(0, 1), st.one_of(st.none(), st.floats(0, 60)))
def test_backoff_bounds(retry: int, rand: float, retry_after: float | None) -> None:
    policy = RetryPolicy()
    delay = backoff_delay(retry, policy, retry_after=retry_after, rand=rand)
    assert delay is not None
    assert 0 <= delay <= max(policy.cap_s, retry_after or 0)
    if retry_after is not None:
        assert delay >= retry_after


@pytest.mark.parametrize("error", [RateLimited("429"), Transient("503")])
def test_retryable_errors_are_retried_until_success(error: ModelError) -> None:
    model = ScriptedModel([error, error, "done"])
    retrying, sleeps = _retrying(model)
    assert retrying.complete(REQUEST).text == "done"
    assert model.calls == 3
    assert sleeps == [0.5, 1.0]


@pytest.mark.parametrize(
    "error",
    [
        Truncated("cut", partial="x"),
        Refused("no"),
        Unauthorized("key"),
        OutOfCredit("$"),
        EmptyResponse(""),
    ],
)
def test_other_errors_surface_at_once(error: ModelError) -> None:
    model = ScriptedModel([error, "never"])
    retrying, sleeps = _retrying(model)
    with pytest.raises(type(error)):
        retrying.complete(REQUEST)
    assert model.calls == 1 and sleeps == []


def test_budget_is_respected() -> None:
    model = ScriptedModel([Transient("a"), Transient("b"), Transient("c"), "late"])
    retrying, sleeps = _retrying(model, attempts=2)
    with pytest.raises(Transient, match="b"):
        retrying.complete(REQUEST)
    assert model.calls == 2 and len(sleeps) == 1


def test_retry_after_is_honoured() -> None:
    model = ScriptedModel([RateLimited("slow", retry_after=9.0), "ok"])
    retrying, sleeps = _retrying(model)
    retrying.complete(REQUEST)
    assert sleeps == [9.0]


def test_huge_retry_after_gives_up_at_once() -> None:
    model = ScriptedModel([RateLimited("slow", retry_after=3600.0), "ok"])
    retrying, sleeps = _retrying(model)
    with pytest.raises(RateLimited):
        retrying.complete(REQUEST)
    assert model.calls == 1 and sleeps == []


def test_call_with_retries_plain_function() -> None:
    calls: list[int] = []

    def flaky() -> int:
        calls.append(1)
        if len(calls) < 2:
            raise Transient("x")
        return 42

    assert call_with_retries(flaky, RetryPolicy(attempts=5), sleep=lambda s: None) == 42


def test_policy_needs_one_attempt() -> None:
    with pytest.raises(ValueError):
        RetryPolicy(attempts=0)
