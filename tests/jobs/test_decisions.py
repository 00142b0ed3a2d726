"""The pure job rules, as tables."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from memoir.jobs.values import (
    Ending,
    abandoned,
    admission_key,
    claim_expired,
    claimable,
    ending,
    is_active,
    should_abort,
)

NOW = datetime(2025, 1, 1, 12, 0, tzinfo=UTC)


def ago(s: float) -> datetime:
    return NOW - timedelta(seconds=s)


@pytest.mark.parametrize(
    ("state", "active"),
    [("queued", True), ("running", True), ("completed", False), ("failed", False)],
)
def test_active_states(state: str, active: bool) -> None:
    assert is_active(state) is active


@pytest.mark.parametrize(
    ("state", "claimed", "expired", "can_claim"),
    [
        ("queued", None, False, True),
        ("running", ago(10), False, False),
        ("running", ago(900), False, False),  # exactly at the limit: still held
        ("running", ago(901), True, True),
        ("running", None, False, False),
        ("completed", ago(5000), False, False),
        ("failed", ago(5000), False, False),
    ],
)
def test_claim_expiry(state: str, claimed: datetime | None, expired: bool, can_claim: bool) -> None:
    assert claim_expired(state, claimed, NOW, 900) is expired
    assert claimable(state, claimed, NOW, 900) is can_claim


@pytest.mark.parametrize(
    ("state", "heartbeat", "claimed", "created", "is_abandoned"),
    [
        ("running", ago(5), ago(1000), ago(1000), False),  # heartbeats keep it alive
        ("running", ago(931), ago(1000), ago(1000), True),
        ("running", None, ago(931), ago(1000), True),  # never beat: from its claim
        ("running", None, None, ago(931), True),
        ("running", None, ago(10), ago(1000), False),
        ("queued", None, None, ago(5000), False),  # waiting is not abandonment
        ("completed", ago(5000), ago(5000), ago(5000), False),
        ("failed", ago(5000), ago(5000), ago(5000), False),
    ],
)
def test_abandonment(
    state: str,
    heartbeat: datetime | None,
    claimed: datetime | None,
    created: datetime,
    is_abandoned: bool,
) -> None:
    assert abandoned(state, heartbeat, claimed, created, NOW, 930) is is_abandoned


@pytest.mark.parametrize(("ran", "abort"), [(0, False), (599.9, False), (600, True), (601, True)])
def test_abort_signal(ran: float, abort: bool) -> None:
    assert should_abort(ago(ran), NOW, 600) is abort


@pytest.mark.parametrize(
    ("raised", "superseded", "aborted", "stopping", "want"),
    [
        (False, False, False, False, Ending.COMPLETE),
        (False, False, False, True, Ending.COMPLETE),  # finished before it stopped
        (False, True, False, False, Ending.DROP),  # its claim is gone: write nothing
        (True, True, False, False, Ending.DROP),
        (True, True, True, True, Ending.DROP),
        (True, False, True, True, Ending.RELEASE),  # told to stop by a shutdown
        (True, False, True, False, Ending.FAIL),  # past the abort interval
        (True, False, False, True, Ending.FAIL),  # failed on its own
        (True, False, False, False, Ending.FAIL),
    ],
)
def test_what_ends_a_run(
    raised: bool, superseded: bool, aborted: bool, stopping: bool, want: Ending
) -> None:
    assert ending(raised=raised, superseded=superseded, aborted=aborted, stopping=stopping) is want


def test_admission_keys_cannot_collide_across_users() -> None:
    assert admission_key("m:", "summary", "a:b", "c") != admission_key("m:", "summary", "a", "b:c")
    assert admission_key("m:", "summary", "u", "s") != admission_key("m:", "other", "u", "s")
