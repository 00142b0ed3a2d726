"""One person's daily loop, driven as they drive it: subprocesses of the installed
``memoir`` on one temporary home (``HOME`` is a temp folder, so ``~/.claude``,
``~/.codex`` and ``~/.memoir`` are the defaults a new user gets), the SessionStart hook
command read back from the settings file it was installed into and run with the venv's
``bin`` off ``PATH``, ``memoir serve`` as a real server, ``memoir mcp`` through the ``mcp``
SDK's stdio client, and the page in Debian's chromium."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["BIN", "MEMOIR", "Home", "wait_for"]

BIN = Path(sys.executable).parent
MEMOIR = str(BIN / "memoir")


def wait_for(what: str, probe: Callable[[], Any], *, timeout: float = 90.0) -> Any:
    """``probe()`` until it returns something truthy; fails naming ``what`` after
    ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = probe()
        if last:
            return last
        time.sleep(0.25)
    raise AssertionError(f"timed out waiting for {what} (last: {last!r})")


class Home:
    """A new user's machine: a temp ``HOME`` and the environment their shell has (only the
    venv's ``bin`` on ``PATH`` beside the system's; no MEMOIR_* set)."""

    def __init__(self, user_home: Path, **extra: str) -> None:
        self.user_home = user_home
        self.env = {
            "HOME": str(user_home),
            "PATH": f"{BIN}{os.pathsep}{os.defpath}",
            "LANG": "C.UTF-8",
            **extra,
        }
        if pythonpath := os.environ.get("PYTHONPATH"):
            self.env["PYTHONPATH"] = pythonpath

    @property
    def memoir_home(self) -> Path:
        return self.user_home / ".memoir"

    def run(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [MEMOIR, *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        assert done.returncode == 0, f"memoir {shlex.join(args)}: {done.stdout}{done.stderr}"
        return done

    def json(self, *args: str) -> Any:
        return json.loads(self.run(*args, "--json").stdout)

    def without_venv(self) -> dict[str, str]:
        """The environment a harness runs hooks and MCP servers in: the venv not on PATH."""
        return {**self.env, "PATH": os.defpath}

    def run_hook(self) -> None:
        """Run every SessionStart hook command the settings file holds, as Claude Code
        does (``sh -c``, the venv's bin not on PATH)."""
        settings = json.loads((self.user_home / ".claude" / "settings.json").read_text())
        commands = [
            hook["command"]
            for entry in settings["hooks"]["SessionStart"]
            for hook in entry["hooks"]
            if hook.get("type") == "command"
        ]
        assert commands, settings
        for command in commands:
            done = subprocess.run(
                ["/bin/sh", "-c", command],
                env=self.without_venv(),
                capture_output=True,
                text=True,
                timeout=30,
                check=False,
            )
            assert done.returncode == 0, f"hook {command!r}: {done.stdout}{done.stderr}"
            assert done.stdout == "", "a SessionStart hook's output lands in the agent's context"
