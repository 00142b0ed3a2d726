"""Helpers of the MCP tests: `memoir mcp` started by the SDK's own stdio client.

Homes are built by the real CLI in a subprocess (`memoir sync`, `memoir remember`), with
an environment made here from nothing but what they need: the server under test sees the
same. ``MEMOIR_EMBEDDER=none`` keeps the server from loading the MiniLM model (the
embeddings extra is installed here; text search is what these tests check).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

BIN = Path(sys.executable).parent
MEMOIR = str(BIN / "memoir")

WEBSHOP = "3f2a9c1e-5b7d-4e8a-9c0f-1a2b3c4d5e01"  # the flaky coupon test (remembered by the tour)
LONG = "8d0e6b2f-1c3a-4f5e-8a9b-7c6d5e4f3a02"  # the long webshop session
INFRA = "7b8c9d0e-1f2a-4b3c-8d4e-5f6a7b8c9d06"  # PgBouncer in transaction pooling mode
CODEX = "0199f1a2-3b4c-7d5e-8f6a-7b8c9d0e1f10"  # "We decided to support Python 3.11 …"


def base_env(user_home: Path, **more: str) -> dict[str, str]:
    """The whole environment of a subprocess: nothing of the developer's own."""
    env = {
        "HOME": str(user_home),
        "PATH": f"{BIN}{os.pathsep}{os.defpath}",
        "MEMOIR_EMBEDDER": "none",
        "LANG": "C.UTF-8",
    }
    if os.environ.get("PYTHONPATH"):  # the code under test, when it is not the installed one
        parts = os.environ["PYTHONPATH"].split(os.pathsep)
        env["PYTHONPATH"] = os.pathsep.join(os.path.abspath(p) for p in parts if p)
    env.update(more)
    return env


def run_cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [MEMOIR, *args], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done


@dataclass
class Server:
    """How to start one `memoir mcp` (its environment, directory and log file)."""

    env: dict[str, str]
    log: Path
    cwd: Path | None = None
    command: str = MEMOIR
    args: tuple[str, ...] = ("mcp",)

    def run(self, body: Callable[[Client], Coroutine[Any, Any, Any]]) -> Any:
        """Start the server, initialize a client session, run ``body`` with it, stop."""

        async def main() -> Any:
            async with self.client() as client:
                return await body(client)

        return anyio.run(main)

    @asynccontextmanager
    async def client(self) -> AsyncIterator[Client]:
        params = StdioServerParameters(
            command=self.command, args=list(self.args), env=self.env, cwd=self.cwd
        )
        with self.log.open("a", encoding="utf-8") as errlog:
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write) as session,
            ):
                init = await session.initialize()
                yield Client(session, init)


@dataclass
class Reply:
    text: str
    is_error: bool

    @property
    def data(self) -> Any:
        assert not self.is_error, self.text
        return json.loads(self.text)


@dataclass
class Client:
    session: ClientSession
    init: Any

    async def call(self, name: str, arguments: dict[str, Any] | None = None) -> Reply:
        result = await self.session.call_tool(name, arguments or {})
        assert len(result.content) == 1
        block = result.content[0]
        assert block.type == "text"
        return Reply(block.text, bool(result.isError))


def build_demo(home: Path, user_home: Path) -> Path:
    """A home holding the bundled demo corpus: synced and summarized (the offline model),
    and the webshop session's memories remembered, as the tour leaves it."""
    from memoir.demo.make_corpus import corpus_sources

    sources = os.pathsep.join(str(p) for p in corpus_sources())
    env = base_env(user_home, MEMOIR_HOME=str(home), MEMOIR_SOURCES=sources)
    run_cli({**env, "MEMOIR_MEMORY_LIMIT": "0"}, "sync")  # the tour's sync keeps no memory
    run_cli(env, "remember", WEBSHOP[:8])
    return home
