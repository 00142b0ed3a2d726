"""docs/async.md's example runs as written, on a home of each backend, and prints what the
guide says it prints."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from memoir import service

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "async.md"


def _example() -> str:
    text = GUIDE.read_text(encoding="utf-8")
    found = re.search(
        r"<!-- async-example -->\n```python\n(.*?)```\n<!-- /async-example -->", text, re.S
    )
    assert found is not None, "docs/async.md has a python block between async-example markers"
    return found.group(1)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def env_home(
    request: pytest.FixtureRequest, home: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[str]:
    monkeypatch.setenv("MEMOIR_HOME", str(home))
    monkeypatch.setenv("MEMOIR_EMBEDDER", "none")  # no model files loaded for this
    if request.param == "sqlite":
        yield "sqlite"
        return
    from conftest import fresh_pg_schema

    with fresh_pg_schema() as url:
        monkeypatch.setenv("MEMOIR_DATABASE_URL", url)
        yield "postgres"


def test_the_guide_s_example_runs_and_prints_what_it_says(
    env_home: str, capsys: pytest.CaptureFixture[str]
) -> None:
    exec(compile(_example(), "docs/async.md", "exec"), {"__name__": "__main__"})
    assert capsys.readouterr().out.splitlines() == [
        "Appended(added=2, skipped=0, last_ordinal=2)",
        "2",
        "['We deploy on Fridays.']",
        "8704dfa23401660caf5294f607e1c9ea fact True",  # the id local's support-42 has
        "True True",
        "none 1",
    ]
    from memoir import Memoir

    with Memoir.open() as memoir:  # the store it wrote: this backend's, in MEMOIR_HOME's home
        assert service.stats(memoir)["backend"] == env_home
        texts = [e.text for e in memoir.events("support-42")]
        assert texts == [
            "Remember that we deploy on Fridays.",
            "Noted: deploys go out on Fridays.",
        ]
    assert not (Path.home() / ".memoir").exists()
