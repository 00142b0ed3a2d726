"""`memoir serve` subprocesses for the multi-process tests: the CLI run with an environment,
a server started on a free port and waited for, stopped (SIGTERM, then kill) after."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

__all__ = ["free_port", "memoir_cli", "running", "serve"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def memoir_cli(*args: str, env: dict[str, str]) -> str:
    """Run ``memoir ARGS`` with ``env``; its stdout (raises with stderr when it fails)."""
    done = subprocess.run(
        [sys.executable, "-m", "memoir.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, f"memoir {' '.join(args)} failed: {done.stderr}"
    return done.stdout


@contextmanager
def running(command: list[str], env: dict[str, str], log_path: Path, base: str) -> Iterator[str]:
    """Run a server ``command`` (output to ``log_path``) until its ``/healthz`` at ``base``
    answers; SIGTERM (then kill) after."""
    log = log_path.open("w")
    proc = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 90  # a loaded 2-core machine starts it slowly
        while True:
            try:
                if httpx.get(f"{base}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if proc.poll() is not None:
                raise AssertionError(f"memoir serve exited: {log_path.read_text()}")
            if time.monotonic() > deadline:
                raise AssertionError(f"memoir serve did not start: {log_path.read_text()}")
            time.sleep(0.1)
        yield base
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        log.close()


@contextmanager
def serve(env: dict[str, str], log_path: Path, *, workers: int = 0) -> Iterator[str]:
    """A ``memoir serve`` on a free port with ``env`` (output to ``log_path``); its base URL
    once ``/healthz`` answers."""
    port = free_port()
    command = [sys.executable, "-m", "memoir.cli", "serve", "--port", str(port)]
    command += ["--workers", str(workers)]
    with running(command, env, log_path, f"http://127.0.0.1:{port}") as base:
        yield base
