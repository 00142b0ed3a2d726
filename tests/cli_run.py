"""`memoir ARGS` through the real entry point, in the test's own process: what the CLI
tests share (importable from any test module: this folder is on the path)."""

from __future__ import annotations

import pytest

from memoir.cli.app import main

__all__ = ["run_cli"]


def run_cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of ``memoir ARGS``."""
    try:
        main(list(args))
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    out = capsys.readouterr()
    return code, out.out, out.err
