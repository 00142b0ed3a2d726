"""The demo's home, built once per test session and copied for each page that runs on it."""

from __future__ import annotations

import io
import os
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from rich.console import Console

from memoir.demo.tour import run_demo


@pytest.fixture(scope="session")
def demo_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("demo") / "home"
    with pytest.MonkeyPatch.context() as mp:  # as the per-test clean environment has it
        for key in [k for k in os.environ if k.startswith(("MEMOIR_", "EPISODIC_MEMORY_"))]:
            mp.delenv(key)
        mp.setenv("HOME", str(home.parent / "user-home"))
        run_demo(Console(file=io.StringIO()), home)
    return home


def copy_home(template: Path, to: Path) -> Path:
    """A copy of the demo's home that is a home of its own: the one absolute path it holds
    (each source's archive copy) re-pointed at the copy."""
    shutil.copytree(template, to)
    db = sqlite3.connect(to / "memoir.db")
    with db:
        db.execute(
            "UPDATE sources SET archive_path = ? || substr(archive_path, ?)",
            (str(to), len(str(template)) + 1),
        )
    db.close()
    return to


@pytest.fixture
def page_home(
    demo_template: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Path]:
    home = copy_home(demo_template, tmp_path / "demo-home")
    monkeypatch.setenv("MEMOIR_HOME", str(home))
    monkeypatch.setenv("MEMOIR_EMBEDDER", "none")
    monkeypatch.chdir(tmp_path)
    yield home
