"""`memoir embed`: compute the missing embeddings (semantic search catch-up)."""

from __future__ import annotations

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

from memoir.cli.app import app, console, open_memoir, print_json
from memoir.errors import ConfigError
from memoir.search.backfill import embed_backlog
from memoir.search.embedder import load_embedder
from memoir.search.vectors import prepare_files

__all__ = ["embed"]


@app.command()
def embed(
    batch: int = typer.Option(128, "--batch", min=1, max=4096, help="Exchanges per batch."),
    max_items: int | None = typer.Option(
        None, "--max", min=1, help="Stop after this many (the rest waits for the next run)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Embed the exchanges that have no vector yet, or no token states for re-ranking (needs
    memoir[embeddings])."""
    with open_memoir() as memoir:
        choice = memoir.settings.embedder
        embedder = load_embedder("minilm" if choice == "auto" else choice)
        if embedder is None:
            raise ConfigError("MEMOIR_EMBEDDER=none: semantic search is switched off")
        if as_json:
            result = embed_backlog(memoir.store, embedder, batch=batch, max_items=max_items)
        else:
            with Progress(
                TextColumn("embedding"), BarColumn(), MofNCompleteColumn(), console=console
            ) as bar:
                task = bar.add_task("embed", total=max_items)
                result = embed_backlog(
                    memoir.store,
                    embedder,
                    batch=batch,
                    max_items=max_items,
                    progress=lambda n: bar.advance(task, n),
                )
        if result.embedded:  # the next `memoir search` then maps the matrix from a file
            prepare_files(memoir.store, embedder.name)
    if as_json:
        print_json(
            {"model": result.model, "embedded": result.embedded, "complete": result.complete}
        )
        return
    left = "" if result.complete else " (more left: run memoir embed again)"
    console.print(f"embedded {result.embedded} exchanges with {result.model}{left}")
