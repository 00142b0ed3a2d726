"""Admission: the in-process LRU, and Redis compare-and-set against a real server."""

from __future__ import annotations

import os
import threading
import uuid

import pytest

from memoir.jobs import AdmissionUnavailable, LocalAdmission, RedisAdmission

from .helpers import free_port


def test_local_admission_is_a_bounded_lru_with_expiry() -> None:
    now = [0.0]
    adm = LocalAdmission(cap=2, clock=lambda: now[0])
    assert adm.admit("a", "j1", 10) == "j1"
    assert adm.admit("a", "j2", 10) == "j1"  # held
    assert adm.admit("b", "j3", 10) == "j3"
    adm.admit("a", "j9", 10)  # "a" used: "b" is now the least recent
    assert adm.admit("c", "j4", 10) == "j4"
    assert len(adm) == 2 and adm.admit("b", "j5", 10) == "j5"  # "b" was evicted
    now[0] = 11.0
    assert adm.admit("c", "j6", 10) == "j6"  # expired
    adm.release("c", "other")  # not its holder: kept
    assert adm.admit("c", "j7", 10) == "j6"
    adm.release("c", "j6")
    assert adm.admit("c", "j7", 10) == "j7"
    with pytest.raises(ValueError):
        LocalAdmission(cap=0)


@pytest.mark.redis
def test_redis_compare_and_set_admits_one_of_many() -> None:
    url = os.environ.get("MEMOIR_TEST_REDIS_URL")
    if not url:
        pytest.skip("MEMOIR_TEST_REDIS_URL is not set")
    adm = RedisAdmission(url)
    key = f"memoir-test:{uuid.uuid4().hex}"
    got: list[str] = []
    lock = threading.Lock()

    def admit(n: int) -> None:
        held = adm.admit(key, f"job{n}", 30)
        with lock:
            got.append(held)

    threads = [threading.Thread(target=admit, args=(n,)) for n in range(30)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(got)) == 1
    winner = got[0]
    adm.release(key, "somebody-else")
    assert adm.admit(key, "late", 30) == winner
    adm.release(key, winner)
    assert adm.admit(key, "late", 30) == "late"
    adm.release(key, "late")
    adm.check()
    adm.close()


def test_unreachable_redis_fails_closed_with_a_clear_error() -> None:
    adm = RedisAdmission(f"redis://:secret@127.0.0.1:{free_port()}/0", timeout_s=0.5)
    with pytest.raises(AdmissionUnavailable, match=r"Redis at redis://:\*\*\*@127.0.0.1") as exc:
        adm.admit("k", "j", 10)
    assert "reads keep working" in str(exc.value) and "secret" not in str(exc.value)
    with pytest.raises(AdmissionUnavailable):
        adm.check()
