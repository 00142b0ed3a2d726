"""Fixtures of the MCP tests: demo homes built by the real CLI, and servers on them."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from .mcp_client import Server, base_env, build_demo


@pytest.fixture(scope="session")
def demo_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo home, shared: read only (tests that write use ``fresh_demo``)."""
    root = tmp_path_factory.mktemp("mcp-demo")
    (root / "user").mkdir()
    return build_demo(root / "home", root / "user")


@pytest.fixture
def fresh_demo(tmp_path: Path) -> Path:
    return build_demo(tmp_path / "demo-home", tmp_path / "user-home")


@pytest.fixture
def server_for(tmp_path: Path) -> Callable[..., Server]:
    def make(home: Path, *, cwd: Path | None = None, **env: str) -> Server:
        return Server(
            base_env(tmp_path / "user-home", MEMOIR_HOME=str(home), **env),
            tmp_path / "server.log",
            cwd,
        )

    return make
