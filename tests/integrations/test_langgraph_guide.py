"""docs/langgraph.md runs as written, on a home of each backend: its ```python blocks in
order, in one namespace, each printing exactly the ```text block that follows it."""

from __future__ import annotations

import contextlib
import io
import re
import sys
import types
from collections.abc import Iterator
from pathlib import Path

import pytest

from memoir import service

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "langgraph.md"
_FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.M | re.S)


def _steps() -> list[tuple[str, str | None]]:
    """(code, what it prints — None when the page shows no output) of each python block."""
    fences = [(m.group(1), m.group(2)) for m in _FENCE.finditer(GUIDE.read_text("utf-8"))]
    steps: list[tuple[str, str | None]] = []
    for n, (lang, body) in enumerate(fences):
        if lang == "python":
            after = fences[n + 1] if n + 1 < len(fences) else ("", "")
            steps.append((body, after[1] if after[0] == "text" else None))
    return steps


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def env_home(
    request: pytest.FixtureRequest, home: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[str]:
    monkeypatch.setenv("MEMOIR_HOME", str(home))
    monkeypatch.setenv("MEMOIR_EMBEDDER", "none")
    if request.param == "sqlite":
        yield "sqlite"
        return
    from conftest import fresh_pg_schema

    with fresh_pg_schema() as url:
        monkeypatch.setenv("MEMOIR_DATABASE_URL", url)
        yield "postgres"


def test_the_page_has_two_examples_each_with_its_output() -> None:
    steps = _steps()
    assert len(steps) == 2
    assert all(shown is not None for _, shown in steps)


def test_the_guide_runs_and_prints_what_it_shows(
    env_home: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = types.ModuleType("langgraph_guide")  # a module of its own, as a script is
    monkeypatch.setitem(sys.modules, module.__name__, module)
    for code, shown in _steps():
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(code, str(GUIDE), "exec", dont_inherit=True), module.__dict__)
        assert out.getvalue() == shown
    from memoir import Memoir

    with Memoir.open() as memoir:  # the example's memories are in the home, as Alice's
        kept = service.keyed_memories(memoir).search(("memories", "alice"), limit=10)
    assert sorted(i.value["text"] for i in kept) == [
        "I take my coffee black",
        "my cat is called Miso",
    ]
