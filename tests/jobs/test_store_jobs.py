"""store.jobs on both backends: admission check, claims, fenced writes, abandonment."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

from memoir.store.codec import JobRow
from memoir.store.port import Store

T = datetime(2025, 1, 1, 12, 0, tzinfo=UTC)


def job(jid: str, *, session: str = "s1", user: str = "alice", at: datetime = T) -> JobRow:
    return JobRow(
        id=jid,
        kind="summary",
        user=user,
        session_id=session,
        state="queued",
        created_at=at,
        data={"x": 1},
    )


def test_one_active_job_per_user_session_and_kind(store: Store) -> None:
    first, created = store.jobs.create(job("j1"))
    assert created and first.id == "j1"
    again, created = store.jobs.create(job("j2"))
    assert not created and again.id == "j1"
    assert store.jobs.create(job("j3", user="bob"))[1]  # another user's session
    assert store.jobs.create(job("j4", session="s2"))[1]
    got = store.jobs.get("j1")
    assert got is not None and got.data == {"x": 1} and got.created_at == T
    assert store.jobs.active("alice", "s1").id == "j1"  # type: ignore[union-attr]
    assert {j.id for j in store.jobs.find(user="alice")} == {"j1", "j4"}
    assert store.jobs.get("j2") is None


def test_concurrent_creates_make_one_job(store: Store) -> None:
    ids: list[str] = []
    lock = threading.Lock()

    def create(n: int) -> None:
        row, _ = store.jobs.create(job(f"j{n}"))
        with lock:
            ids.append(row.id)

    threads = [threading.Thread(target=create, args=(n,)) for n in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(ids)) == 1 and len(store.jobs.find()) == 1


def test_claim_heartbeat_progress_and_fenced_finish(store: Store) -> None:
    store.jobs.create(job("j1"))
    store.jobs.create(job("j2", session="s2", at=T + timedelta(seconds=1)))
    a = store.jobs.claim("A", now=T, claim_s=900)
    assert a is not None and a.id == "j1" and a.state == "running" and a.attempts == 1
    assert a.source_hash and a.claimed_by == "A"
    b = store.jobs.claim("B", now=T, claim_s=900)
    assert b is not None and b.id == "j2"  # j1 is held
    assert store.jobs.claim("C", now=T, claim_s=900) is None
    assert store.jobs.claim("C", now=T, claim_s=900, kinds=["other"]) is None
    later = T + timedelta(seconds=5)
    assert store.jobs.heartbeat("j1", "A", a.source_hash, later)
    assert store.jobs.progress(
        "j1", "A", a.source_hash, phase="episodes", completed=2, total=4, now=later
    )
    row = store.jobs.get("j1")
    assert row is not None and (row.phase, row.completed, row.total) == ("episodes", 2, 4)
    assert row.heartbeat_at == later
    # a wrong fence changes nothing
    assert not store.jobs.heartbeat("j1", "B", a.source_hash, later)
    assert not store.jobs.complete("j1", "A", "not-the-hash", later)
    assert store.jobs.complete("j1", "A", a.source_hash, later, {"saved": True})
    done = store.jobs.get("j1")
    assert done is not None and done.state == "completed" and done.finished_at == later
    assert done.data == {"x": 1, "saved": True}
    assert not store.jobs.complete("j1", "A", a.source_hash, later)  # once
    assert store.jobs.fail("j2", "B", b.source_hash or "", "it broke", later)
    failed = store.jobs.get("j2")
    assert failed is not None and failed.state == "failed" and failed.error == "it broke"


def test_an_expired_claim_is_retaken_and_the_old_worker_refused(store: Store) -> None:
    store.jobs.create(job("j1"))
    a = store.jobs.claim("A", now=T, claim_s=60)
    assert a is not None and a.source_hash
    assert store.jobs.claim("B", now=T + timedelta(seconds=60), claim_s=60) is None
    b = store.jobs.claim("B", now=T + timedelta(seconds=61), claim_s=60)
    assert b is not None and b.id == "j1" and b.attempts == 2 and b.source_hash != a.source_hash
    now = T + timedelta(seconds=62)
    assert not store.jobs.holds("j1", "A", a.source_hash)
    assert not store.jobs.progress(
        "j1", "A", a.source_hash, phase="merge", completed=0, total=1, now=now
    )
    assert not store.jobs.complete("j1", "A", a.source_hash, now, {"by": "A"})
    assert store.jobs.complete("j1", "B", b.source_hash or "", now, {"by": "B"})
    assert not store.jobs.fail("j1", "A", a.source_hash, "late", now)
    final = store.jobs.get("j1")
    assert final is not None and final.state == "completed" and final.data["by"] == "B"


def test_release_and_cancel(store: Store) -> None:
    store.jobs.create(job("j1"))
    a = store.jobs.claim("A", now=T, claim_s=900)
    assert a is not None and store.jobs.release("j1", "A", a.source_hash or "")
    again = store.jobs.claim("B", now=T, claim_s=900)
    assert again is not None and again.claimed_by == "B" and again.attempts == 2
    cancelled = store.jobs.cancel("j1", T)
    assert cancelled is not None and cancelled.state == "failed" and cancelled.error == "cancelled"
    assert not store.jobs.heartbeat("j1", "B", again.source_hash or "", T)
    assert store.jobs.active("alice", "s1") is None
    assert store.jobs.create(job("j2"))[1]  # a new job may start


def test_abandoned_jobs_fail_then_resume(store: Store) -> None:
    store.jobs.create(job("j1"))
    store.jobs.create(job("j2", session="s2"))
    store.jobs.claim("A", now=T, claim_s=900)
    b = store.jobs.claim("B", now=T, claim_s=900)
    assert b is not None
    store.jobs.heartbeat(b.id, "B", b.source_hash or "", T + timedelta(seconds=100))
    at = T + timedelta(seconds=931)
    gone = store.jobs.abandon(at, 930, error="abandoned; retry")
    assert [j.id for j in gone] == ["j1"]  # j2 beat 100 s in
    failed = store.jobs.get("j1")
    assert failed is not None and failed.state == "failed" and failed.error == "abandoned; retry"
    assert failed.data.get("abandoned") is True
    resumed = store.jobs.abandon(at, 930, error="x", requeue=True)
    assert [j.id for j in resumed] == ["j1"]
    back = store.jobs.get("j1")
    assert back is not None and back.state == "queued" and back.error == ""
    assert back.data.get("resumed") == 1 and "abandoned" not in back.data
    # a failed job with a newer job after it is not resumed
    store.jobs.claim("C", now=at, claim_s=900)
    store.jobs.abandon(at + timedelta(seconds=931), 930, error="abandoned")
    store.jobs.create(job("j3", at=at + timedelta(seconds=1000)))
    later = store.jobs.abandon(at + timedelta(seconds=2000), 930, error="x", requeue=True)
    assert [j.id for j in later] == ["j2"]  # j1 is not: j3 came after it
