"""`memoir serve`: the HTTP API (FastAPI under uvicorn), with background workers in the
same process on request (`--workers N`).

On a loopback address (the default 127.0.0.1) it prints, once it listens, a sign-in link
to the page for ``local`` — the owner of the sessions synced from this machine — on stdout:
the token in it works once, for 15 minutes (:mod:`memoir.server.auth`). On any other
address it prints none: ``local``'s data then needs a key (``memoir users key local``)."""

from __future__ import annotations

import contextlib
import logging
import sys
import threading
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import typer

from memoir import service
from memoir.cli.app import app
from memoir.errors import ConfigError, install_hint

if TYPE_CHECKING:
    from memoir.app import Memoir

__all__ = ["serve"]


@app.command()
def serve(
    host: str = typer.Option("127.0.0.1", "--host", help="Address to listen on."),
    port: int = typer.Option(8420, "--port", min=0, max=65535, help="Port to listen on."),
    workers: int = typer.Option(
        1,
        "--workers",
        min=0,
        max=64,
        help="Background job workers to run in this process (0: leave jobs to `memoir worker`).",
    ),
    log_level: str = typer.Option("info", "--log-level", help="debug | info | warning."),
) -> None:
    """Serve the HTTP API (OpenAPI at /openapi.json, docs at /docs) and the web page. On a
    loopback address, print a one-time sign-in link to the page for your own synced
    sessions (user `local`). Same settings as the CLI; SIGTERM stops admitting requests and
    lets running ones finish."""
    try:
        import uvicorn

        from memoir.server import create_app
    except ImportError as exc:
        raise ConfigError(
            f"memoir serve needs the server extra: {install_hint('server')} ({exc})"
        ) from exc
    from memoir.app import Memoir
    from memoir.model.event import LOCAL_USER
    from memoir.server.auth import LINK_TTL_S, SignInLinks, is_loopback, link_url
    from memoir.server.plumbing import JsonFormatter

    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    for name in ("memoir", "uvicorn", "uvicorn.error"):
        logger = logging.getLogger(name)
        logger.handlers[:] = [handler]
        logger.setLevel(log_level.upper())
        logger.propagate = False
    memoir = Memoir.open()
    service.recover_memories_in_background(memoir)  # what a killed process left, run eventually
    stop = threading.Event()
    threads = _start_workers(memoir, workers, stop)
    web = create_app(memoir)
    announce: Callable[[int], None] | None = None
    if is_loopback(host):
        links = web.state.sign_in_links = SignInLinks()

        def announce(bound: int) -> None:
            url = link_url(host, bound, links.issue(LOCAL_USER))
            print(f"Sign in to your own sessions (user {LOCAL_USER}): {url}", flush=True)
            print(
                f"  (the link works once, within {LINK_TTL_S // 60} minutes; "
                f"a key for later: memoir users key {LOCAL_USER})",
                flush=True,
            )

    config = uvicorn.Config(
        web,
        host=host,
        port=port,
        log_config=None,
        access_log=False,  # the app logs each request as JSON, with its request id
        timeout_graceful_shutdown=30,
        lifespan="on",
    )
    server = _server_class(uvicorn, announce)(config)
    try:
        server.run()  # SIGINT / SIGTERM: stop accepting, finish running requests, return
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=60)
        memoir.close()


def _server_class(uvicorn: Any, announce: Callable[[int], None] | None = None) -> Any:
    """uvicorn's server, except that a SIGTERM/SIGINT it shut down gracefully for is not
    raised again once it has (uvicorn re-raises it, which would end this process before the
    workers are stopped and the store closed): ``memoir serve`` then exits 0. Once it
    listens, ``announce`` is called with the port it bound (``--port 0`` picks one)."""

    class Server(uvicorn.Server):
        async def startup(self, sockets: Any = None) -> None:
            await super().startup(sockets=sockets)
            if announce is not None and self.started and self.servers:
                announce(int(self.servers[0].sockets[0].getsockname()[1]))

        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            with super().capture_signals():
                yield
                captured = getattr(self, "_captured_signals", None)
                if isinstance(captured, list):
                    captured.clear()

    return Server


def _start_workers(memoir: Memoir, count: int, stop: threading.Event) -> list[threading.Thread]:
    if count == 0:
        return []
    threads = []
    for n in range(count):
        thread = threading.Thread(
            target=service.run_worker,
            args=(memoir, stop),
            # no name: each worker takes host:pid:random (two replicas never share one)
            name=f"memoir-worker-{n + 1}",
            daemon=True,
        )
        thread.start()
        threads.append(thread)
    return threads
