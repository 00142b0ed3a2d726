"""`memoir ARGS` through the real entry point, in the test's own process: what the CLI
tests share (importable from any test module: this folder is on the path)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from memoir.cli.app import app, main
from memoir.demo.make_corpus import corpus_sources

__all__ = ["run_cli", "synced_runner"]


def synced_runner(home: Path, monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    """A CLI runner whose home (``MEMOIR_HOME``) holds the demo corpus, synced."""
    monkeypatch.setenv("MEMOIR_HOME", str(home))
    monkeypatch.setenv("MEMOIR_SOURCES", ":".join(str(p) for p in corpus_sources()))
    runner = CliRunner()
    done = runner.invoke(app, ["sync", "--no-summaries", "--json"])
    assert done.exit_code == 0, done.output
    return runner


def run_cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of ``memoir ARGS``."""
    try:
        main(list(args))
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    out = capsys.readouterr()
    return code, out.out, out.err
