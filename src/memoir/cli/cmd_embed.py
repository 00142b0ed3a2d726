"""`memoir embed`: compute the missing embeddings (semantic search catch-up)."""

from __future__ import annotations

from typing import Any

import typer
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeRemainingColumn,
)

from memoir import service
from memoir.cli.app import app, console, err_console, open_memoir, print_json
from memoir.errors import Busy
from memoir.search.backfill import DEFAULT_BATCH, BackfillResult
from memoir.search.embedders import Embedder, TokenEmbedder

__all__ = ["embed"]


@app.command()
def embed(
    batch: int = typer.Option(
        DEFAULT_BATCH, "--batch", min=1, max=4096, help="Exchanges per batch."
    ),
    max_items: int | None = typer.Option(
        None, "--max", min=1, help="Stop after this many (the rest waits for the next run)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Embed the exchanges that have no vector yet, or no token states for re-ranking, then
    redo vectors embedded from an older release's recipe (needs the embeddings extra)."""
    with open_memoir(existing=True) as memoir:
        # before any bar is drawn: a read-only home is one line, as for sync and summarize
        service.ensure_writable(memoir, "memoir embed")
        embedder = service.embedder(memoir)
        try:
            if as_json or embedder is None or not err_console.is_terminal:
                # no embedder: embed_pending says why, in one line, with no bar before it
                result = service.embed_pending(memoir, batch=batch, max_items=max_items)
            else:
                with Progress(  # on stderr and gone when done, as sync's and summarize's
                    TextColumn("embedding"),
                    BarColumn(),
                    MofNCompleteColumn(),
                    TimeRemainingColumn(),
                    console=err_console,
                    transient=True,
                ) as bar:
                    task = bar.add_task("embed", total=_backlog(memoir, embedder, max_items))
                    result = service.embed_pending(
                        memoir,
                        batch=batch,
                        max_items=max_items,
                        progress=lambda n: bar.advance(task, n),
                    )
        except Busy:
            if as_json:
                print_json({"busy": True, "embedded": 0})
            else:
                console.print("another memoir embed is running; leaving it to finish")
            return
    _report(result, as_json)


def _backlog(memoir: Any, embedder: Embedder, max_items: int | None) -> int:
    """What the bar counts up to: the exchanges still to embed (at most ``max_items``)."""
    left = service.embedding_backlog(
        memoir, embedder.name, with_tokens=isinstance(embedder, TokenEmbedder)
    )
    return left if max_items is None else min(left, max_items)


def _report(result: BackfillResult, as_json: bool) -> None:
    if as_json:
        print_json(
            {"model": result.model, "embedded": result.embedded, "complete": result.complete}
        )
        return
    left = "" if result.complete else " (more left: run memoir embed again)"
    console.print(f"embedded {result.embedded} exchanges with {result.model}{left}")
