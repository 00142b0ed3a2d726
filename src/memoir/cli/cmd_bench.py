"""`memoir bench`: retrieval and long-term memory benchmarks (LoCoMo)."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table

from memoir.bench import KS, run_locomo
from memoir.bench.memories import SPEAKERS, run_memories
from memoir.cli.app import app, console, err_console, print_json
from memoir.search.embedder import load_embedder

__all__ = ["bench_app", "locomo", "memories"]

bench_app = typer.Typer(
    help="Benchmarks: retrieval and long-term memory quality on LoCoMo.", no_args_is_help=True
)
app.add_typer(bench_app, name="bench")


@bench_app.command("locomo")
def locomo(
    directory: Path = typer.Argument(
        ..., exists=True, file_okay=False, help="Folder of LoCoMo *.json conversations."
    ),
    embedder_name: str = typer.Option(
        "auto", "--embedder", help="auto, minilm, hash or none (text only)."
    ),
    memories: bool = typer.Option(
        False,
        "--memories",
        help="Also extract memory items (offline) and score text and hybrid search with "
        "the memory-keys list too (rows MODE+memories, same run).",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Recall@k of text, vector and hybrid search on LoCoMo questions (categories 1–4)."""
    embedder = load_embedder(embedder_name)
    report = run_locomo(
        directory,
        embedder=embedder,
        progress=None if as_json else lambda line: err_console.print(line, style="dim"),
        memories=memories,
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


@bench_app.command("memories")
def memories(
    directory: Path = typer.Argument(
        ..., exists=True, file_okay=False, help="Folder of LoCoMo *.json conversations."
    ),
    speaker: str = typer.Option(
        "a", "--speaker", help="Who is ingested as the user: a (speaker_a), b, or both in turn."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Evidence recall and precision of the offline memory extractor on LoCoMo.

    Each session is extracted through a compaction checkpoint; the items' quoted turns
    are scored against the observations of the speaker ingested as the user."""
    if speaker not in SPEAKERS:
        raise typer.BadParameter(f"one of {', '.join(SPEAKERS)}", param_hint="--speaker")
    report = run_memories(
        directory,
        speaker=speaker,  # narrowed to a, b or both above
        progress=None if as_json else lambda line: err_console.print(line, style="dim"),
    )
    summary = report.to_json()
    if as_json:
        print_json(summary)
        return
    table = Table(title="LoCoMo long-term memory evidence (offline extractor)")
    for header in ("conversation", "user", "recall", "precision", "base prec.", "items", "calls"):
        table.add_column(header, justify="left" if header in ("conversation", "user") else "right")
    for row in summary["conversations"]:
        table.add_row(
            row["conversation"],
            row["speaker"],
            f"{row['evidence_recall']:.3f}",
            f"{row['evidence_precision']:.3f}",
            f"{row['base_precision']:.3f}",
            str(row["items"]),
            str(row["model_calls"]),
        )
    table.add_row(
        "all",
        "",
        f"{summary['evidence_recall']:.3f}",
        f"{summary['evidence_precision']:.3f}",
        f"{summary['base_precision']:.3f}",
        str(summary["items"]),
        str(summary["model_calls"]),
        style="bold",
    )
    console.print(table)
    console.print(
        f"{summary['cited_observation_turns']} of {summary['observation_turns']} observation "
        f"turns cited ({summary['own_observation_turns']} spoken by the user); "
        f"{summary['cited_turns']} turns cited in all"
    )
