"""`memoir bench` and `memoir demo`: Memoir run over data it ships or is given.

`memoir bench`: retrieval and long-term memory benchmarks (LoCoMo), compaction retention.
`memoir demo`: a bundled sample corpus synced into a home of its own, and a tour of it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.markup import escape
from rich.table import Table

from memoir.bench import KS, run_locomo
from memoir.bench.quality import SPEAKERS, run_memories
from memoir.cli.app import app, console, err_console, print_json
from memoir.errors import ConfigError, UsageError, install_hint
from memoir.search.embedders import load_embedder

__all__ = ["bench_app", "bench_memories", "compaction", "demo", "locomo", "summaries"]

bench_app = typer.Typer(
    help="Benchmarks: retrieval and long-term memory quality on LoCoMo, compaction retention.",
    no_args_is_help=True,
)
app.add_typer(bench_app, name="bench")


@bench_app.command("locomo")
def locomo(
    directory: Path = typer.Argument(
        ..., exists=True, file_okay=False, help="Folder of LoCoMo *.json conversations."
    ),
    embedder_name: str = typer.Option(
        "auto",
        "--embedder",
        help="auto (minilm, else e5, else text only), none (text only), e5, minilm, or hash "
        "(the test fake).",
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
    embedder = _bench_embedder(embedder_name)
    if embedder is None:
        err_console.print(f"[yellow]note:[/yellow] {escape(_no_vectors_reason(embedder_name))}")
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


def _bench_embedder(name: str) -> Any:
    """The embedder ``--embedder`` names; a name not among the choices is a usage error
    naming the flag (not the environment variable the same choices are read from)."""
    from memoir.search.embedders import EMBEDDER_CHOICES

    if name not in EMBEDDER_CHOICES:
        raise UsageError(f"--embedder must be one of {', '.join(EMBEDDER_CHOICES)}, not {name!r}")
    try:
        return load_embedder(name)
    except ConfigError as exc:
        raise UsageError(f"--embedder {name}: {exc}") from exc


def _no_vectors_reason(name: str) -> str:
    """Why only the text row will be printed, and how to get the others."""
    if name == "none":
        return "vector and hybrid rows skipped: --embedder none (text search only)"
    return (
        "vector and hybrid rows skipped: no embedder is installed (the embeddings extra: "
        f"{install_hint('embeddings')})"
    )


@bench_app.command("memories")
def bench_memories(
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


@bench_app.command("summaries")
def summaries(
    directory: Path = typer.Argument(
        ..., exists=True, file_okay=False, help="Folder of LoCoMo *.json conversations."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
    embedder: bool = typer.Option(
        True,
        "--embedder/--no-embedder",
        help="Also summarize with the embedder's centrality (when the extra is installed).",
    ),
) -> None:
    """ROUGE-1/2/L F1 of the offline session summaries against LoCoMo's reference
    session summaries, next to baselines cut to the same length (lead, random sentences,
    the keyword-led summary of format 1)."""
    from memoir.bench.quality import run_summaries
    from memoir.llm.transcript import embedding_scorer
    from memoir.search.embedders import load_embedder

    loaded = load_embedder("auto") if embedder else None
    report = run_summaries(
        directory,
        progress=None if as_json else lambda line: err_console.print(line, style="dim"),
        scorer=embedding_scorer(loaded.embed) if loaded is not None else None,
    )
    summary = report.to_json()
    if as_json:
        print_json(summary)
        return
    table = Table(title=f"LoCoMo session summaries, {summary['sessions']} sessions (ROUGE F1)")
    for header in ("summary", "ROUGE-1", "ROUGE-2", "ROUGE-L"):
        table.add_column(header, justify="left" if header == "summary" else "right")
    for method, row in summary["methods"].items():
        table.add_row(method, *(f"{row[k]:.3f}" for k in ("rouge1", "rouge2", "rougeL")))
    console.print(table)
    console.print(
        f"ROUGE-L {summary['rougeL_vs_lead']}× lead (keyword: "
        f"{summary['keyword_rougeL_vs_lead']}× at the same length); length "
        f"{summary['length_ratio']}× the reference (keyword: {summary['keyword_length_ratio']}×)"
    )


def _numbers(raw: str, option: str) -> tuple[int, ...]:
    try:
        values = tuple(int(v) for v in raw.split(",") if v.strip())
    except ValueError:
        values = ()
    if not values or any(v <= 0 for v in values):
        raise typer.BadParameter("positive whole numbers, comma-separated", param_hint=option)
    return values


@bench_app.command("compaction")
def compaction(
    turns: str = typer.Option(
        "50,100,200,400", "--turns", help="History lengths in agent steps, comma-separated."
    ),
    windows: str = typer.Option(
        "8000,32000,128000", "--windows", help="Context windows (tokens), comma-separated."
    ),
    seeds: int = typer.Option(3, "--seeds", min=1, help="Histories per length (seeds 0…N-1)."),
    model: str = typer.Option(
        "offline",
        "--model",
        help="offline (the embedded model) or configured (MEMOIR_LLM and its key).",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Retention of compaction on generated agent histories with planted facts (issue 26).

    Each history is played through an agent loop that compacts whenever the context
    reaches the threshold; measured are the planted facts still in the context (summary +
    tail), the recent messages kept verbatim and the tokens used against the threshold."""
    from contextlib import ExitStack

    from memoir.bench.compaction import BANDS, TARGETS, run_compaction_bench
    from memoir.cli.app import open_memoir
    from memoir.config import Settings
    from memoir.errors import ConfigError

    if model not in ("offline", "configured"):
        raise typer.BadParameter("offline or configured", param_hint="--model")
    lengths, sizes = _numbers(turns, "--turns"), _numbers(windows, "--windows")
    settings = Settings.from_env()
    with ExitStack() as stack:
        chosen = None
        if model == "configured":
            if settings.llm == "offline":
                raise ConfigError("--model configured needs MEMOIR_LLM set to a provider model")
            chosen = stack.enter_context(open_memoir()).model()
        report = run_compaction_bench(
            turns=lengths,
            windows=sizes,
            seeds=range(seeds),
            model=chosen,
            tail_ratio=settings.compact_tail_ratio,
            ratio=settings.compact_threshold_ratio,
            progress=None if as_json else lambda line: err_console.print(line, style="dim"),
        )
    summary = report.to_json()
    if as_json:
        print_json(summary)
        return
    _compaction_table(summary, BANDS, TARGETS)


def _compaction_table(
    summary: dict[str, Any], bands: tuple[str, ...], targets: dict[str, float]
) -> None:
    table = Table(title=f"Compaction retention ({summary['model']} model)")
    for header in ("window", "runs", "compactions", "facts", "recent", "tokens used", "min"):
        table.add_column(header, justify="left" if header == "window" else "right")
    rows = [(f"{int(w):,}", by) for w, by in summary["by_window"].items()]
    rows.append(("all", summary))
    for name, by in rows:
        table.add_row(
            name,
            str(by["runs_compacted"]),
            str(by["compactions"]),
            _share(by["fact_retention"]),
            _share(by["recent_retention"]),
            _share(by["tokens_used_share"]),
            _share(by["min_tokens_used_share"]),
            style="bold" if name == "all" else None,
        )
    console.print(table)
    by_band = summary["fact_retention_by_band"]
    console.print(
        "facts by position: "
        + ", ".join(f"{b} {_share(by_band[b])}" for b in bands)
        + f"; targets: recent {targets['recent_retention']}, facts ≥ "
        f"{targets['fact_retention']}, tokens used ≥ {targets['tokens_used_share']} — met: "
        + ", ".join(f"{k} {'yes' if v else 'no'}" for k, v in summary["met"].items())
    )


def _share(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


@app.command()
def demo(
    home: Path | None = typer.Option(
        None,
        "--home",
        help="Build the demo's home here (kept): a new or empty folder, or one an earlier "
        "demo made; any other is refused.",
    ),
    keep: bool = typer.Option(
        False, "--keep", help="Keep the temporary home and print how to use it."
    ),
) -> None:
    """Sync a bundled sample corpus into a home of its own and tour what Memoir found."""
    from memoir.demo.tour import run_demo

    run_demo(console, home, keep=keep)
