"""Another user's object and one that does not exist cost the same, on both backends: the
same answer, the same work, and no timing difference a test can see.

For a few representative calls (HTTP: a session, its summary, deleting a memory; MCP: read
and forget, through :func:`memoir.mcp.server.answer`, what the server runs per call) Alice
asks for Bob's object (b) and for a missing one (c):

- **The same work.** Every SQL statement run, and how many rows each returned, is the same
  for (b) and (c): the owner is in the ``WHERE`` clause, so both are one lookup that finds
  nothing. A route that loaded Bob's row and then refused it in Python would return a row
  for (b) and none for (c), and fail here. This is exact, so it cannot flake.
- **No timing difference.** (b) and (c) are timed in alternating pairs (their order within
  each pair drawn at random, so a burst of load on a busy machine falls on both alike).
  A paired sign test asks whether (b) is slower than (c) in more pairs than chance allows
  (a two-sided exact binomial test at p < 1e-4: distribution-free, blind to outliers), and
  the median of the pairs' ratios (b / c) must be within 1.5x of 1. Both checks compare
  only (b) with (c) measured in the same moments; no absolute time is asserted. A real
  difference (an extra query, a second round trip) shifts every pair the same way and is
  caught; noise does not. One extra SQLite lookup on Bob's path was caught this way on a
  busy 2-core machine; a row read and dropped in Python is below what timing can see,
  which is why the work is compared exactly above.
"""

from __future__ import annotations

import math
import random
import statistics
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from fastapi.testclient import TestClient

from memoir.config import Settings
from memoir.mcp.reading import Home
from memoir.mcp.server import answer
from memoir.server import create_app
from memoir.store.parts.jobs import hash_key

from .conftest import A, World
from .matrix import Refs, refs
from .sqltrace import traced

PAIRS = 80
ALPHA = 1e-4
MEDIAN_RATIO = 1.5


@dataclass(frozen=True)
class Probe:
    name: str
    kind: str  # "session" or "item"
    send: Callable[[str], tuple[Any, str]]  # ref → (status, answer with the ref blanked)


def sign_test_bounds(n: int, alpha: float = ALPHA) -> tuple[int, int]:
    """The counts of "(b) slower" out of ``n`` fair pairs that a two-sided exact binomial
    test at ``alpha`` does not reject. Pure."""
    tail = 0.0
    low = -1
    for k in range(n + 1):
        tail += math.comb(n, k) / 2**n
        if tail > alpha / 2:
            break
        low = k
    return low + 1, n - low - 1


@pytest.mark.parametrize(
    ("n", "bounds"), [(80, (23, 57)), (20, (2, 18)), (10, (0, 10)), (200, (73, 127))]
)
def test_the_sign_test_bounds(n: int, bounds: tuple[int, int]) -> None:
    assert sign_test_bounds(n) == bounds


def _blank(text: str, r: Refs) -> str:
    return text.replace(r.other, "<ref>").replace(r.missing, "<ref>")


@pytest.fixture
def probes(world: World) -> Iterator[list[Probe]]:
    headers = {"Authorization": f"Bearer {world.keys[A]}"}
    home = Home(Settings.from_env(world.env, sources=()), None, A)
    with TestClient(create_app(world.memoir), raise_server_exceptions=False) as client:

        def http(method: str, path: str, kind: str) -> Callable[[str], tuple[Any, str]]:
            r = refs(world, kind)

            def send(ref: str) -> tuple[Any, str]:
                got = client.request(method, path.format(ref=ref), headers=headers)
                return got.status_code, _blank(got.text, r)

            return send

        def mcp(tool: str, argument: str, kind: str) -> Callable[[str], tuple[Any, str]]:
            r = refs(world, kind)

            def send(ref: str) -> tuple[Any, str]:
                got = answer(home, tool, {argument: ref})
                return got.isError, _blank(" ".join(c.text for c in got.content), r)  # type: ignore[union-attr]

            return send

        yield [
            Probe("GET session", "session", http("GET", "/api/sessions/{ref}", "session")),
            Probe("GET summary", "session", http("GET", "/api/sessions/{ref}/summary", "session")),
            Probe("DELETE memory", "item", http("DELETE", "/api/memories/{ref}", "item")),
            Probe("MCP read", "session", mcp("read", "id", "session")),
            Probe("MCP forget", "item", mcp("forget", "id", "item")),
        ]
    home.close()


def test_bobs_object_and_a_missing_one_do_the_same_work(
    world: World, probes: list[Probe], monkeypatch: pytest.MonkeyPatch
) -> None:
    with traced(monkeypatch) as ran:
        for probe in probes:
            r = refs(world, probe.kind)
            probe.send(r.missing)  # warm: a first call may open what later ones reuse
            shapes = []
            for ref in (r.other, r.missing, r.other):
                ran.statements.clear()
                answer_ = probe.send(ref)
                shapes.append((answer_, ran.shape(), list(ran.statements)))
            (other, work_b, ran_b), (missing, work_c, _), (again, work_b2, _) = shapes
            assert other == missing == again, (probe.name, other, missing)
            assert other[0] in (404, True), (probe.name, other)  # refused
            assert work_b == work_c == work_b2, (probe.name, work_b, work_c)
            # Bob's object was looked up by its id, with Alice as its owner (her name, or
            # her key's hash where the key is checked in the same statement), not found
            alice = (A, hash_key(world.keys[A]))
            lookups = [(sql, n) for sql, params, n in ran_b if r.other in params]
            assert lookups, (probe.name, work_b)
            assert all(
                n == 0 and any(a in params for a in alice)
                for _, params, n in ran_b
                if r.other in params
            )


def test_bobs_object_and_a_missing_one_take_the_same_time(
    world: World, probes: list[Probe]
) -> None:
    low, high = sign_test_bounds(PAIRS)
    seeded = random.Random(35)
    verdicts = {}
    for probe in probes:
        r = refs(world, probe.kind)
        for _ in range(5):  # warm both paths
            probe.send(r.other)
            probe.send(r.missing)
        times: dict[str, list[float]] = {"b": [], "c": []}
        for _ in range(PAIRS):
            order = [("b", r.other), ("c", r.missing)]
            seeded.shuffle(order)
            for side, ref in order:
                start = time.perf_counter()
                probe.send(ref)
                times[side].append(time.perf_counter() - start)
        slower = sum(tb > tc for tb, tc in zip(times["b"], times["c"], strict=True))
        # paired: each pair's two calls share their moment's load
        ratio = statistics.median(tb / tc for tb, tc in zip(times["b"], times["c"], strict=True))
        verdicts[probe.name] = (slower, round(ratio, 3))
    for name, (slower, ratio) in verdicts.items():
        assert low <= slower <= high, (name, verdicts, (low, high))
        assert 1 / MEDIAN_RATIO <= ratio <= MEDIAN_RATIO, (name, verdicts)
