"""`memoir bench`: retrieval benchmarks (LoCoMo)."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table

from memoir.bench import KS, run_locomo
from memoir.cli.app import app, console, err_console, print_json
from memoir.search.embedder import load_embedder

__all__ = ["bench_app", "locomo"]

bench_app = typer.Typer(help="Benchmarks: retrieval quality on LoCoMo.", no_args_is_help=True)
app.add_typer(bench_app, name="bench")


@bench_app.command("locomo")
def locomo(
    directory: Path = typer.Argument(
        ..., exists=True, file_okay=False, help="Folder of LoCoMo *.json conversations."
    ),
    embedder_name: str = typer.Option(
        "auto", "--embedder", help="auto, minilm, hash or none (text only)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Recall@k of text, vector and hybrid search on LoCoMo questions (categories 1–4)."""
    embedder = load_embedder(embedder_name)
    report = run_locomo(
        directory,
        embedder=embedder,
        progress=None if as_json else lambda line: err_console.print(line, style="dim"),
    )
    if as_json:
        print_json(report.to_json())
        return
    columns = [f"recall@{k}" for k in KS] + ["all@10", "questions", "ms_per_query"]
    headers = [f"R@{k}" for k in KS] + ["all@10", "n", "ms/q"]
    table = Table(title=f"LoCoMo retrieval ({', '.join(report.conversations)})")
    table.add_column("mode")
    for header in headers:
        table.add_column(header, justify="right")
    summary = report.to_json()
    for mode, scores in summary.items():
        table.add_row(mode, *(str(scores.get(c, "")) for c in columns))
    console.print(table)
    categories = Table(title="recall@10 by question category")
    categories.add_column("mode")
    names = {"1": "1 multi-hop", "2": "2 temporal", "3": "3 open-domain", "4": "4 single-hop"}
    keys = sorted({c for scores in summary.values() for c in scores["recall@10_by_category"]})
    for key in keys:
        categories.add_column(names.get(key, key), justify="right")
    for mode, scores in summary.items():
        by = scores["recall@10_by_category"]
        categories.add_row(mode, *(str(by.get(k, "")) for k in keys))
    console.print(categories)
    if report.embedder:
        console.print(f"embedder {report.embedder}: {report.embed_seconds:.1f} s to embed")
