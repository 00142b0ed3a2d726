"""The demo tour: sync the bundled corpus into a throwaway home and show what Memoir found.

Works offline on a fresh machine: the corpus is package data, the store is a SQLite file
in a temporary folder, no model is called.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.table import Table

from memoir.config import Settings
from memoir.demo.make_corpus import CORPUS_DIR, corpus_sources
from memoir.ingest.sync import SyncReport, sync
from memoir.model import EventKind
from memoir.store import SearchFilters, Store, open_store

__all__ = ["DEMO_QUERIES", "DemoResult", "run_demo"]

DEMO_QUERIES = ("flaky coupon timezone", "PgBouncer transaction pooling", "Docker-Build psycopg")
EXCERPT_SESSION = "3f2a9c1e-5b7d-4e8a-9c0f-1a2b3c4d5e01"


@dataclass(frozen=True, slots=True)
class DemoResult:
    home: Path
    report: SyncReport
    stats: dict[str, int]
    hits: dict[str, int]


def _mark(snippet: str) -> str:
    text = " ".join(snippet.split()).replace("[", "\\[")
    return text.replace("\x02", "[bold yellow]").replace("\x03", "[/bold yellow]")


def _search(store: Store, console: Console) -> dict[str, int]:
    counts: dict[str, int] = {}
    for query in DEMO_QUERIES:
        hits = store.search_text(query, SearchFilters(), 3)
        counts[query] = len(hits)
        console.print(f"\n[bold]memoir search[/bold] {query!r} → {len(hits)} hit(s)")
        found = store.get_exchanges([h.exchange_id for h in hits])
        for hit in hits:
            exchange = found.get(hit.exchange_id)
            session = store.get_session(exchange.session_id) if exchange else None
            where = f"{session.project} · {session.harness}" if session else hit.exchange_id
            console.print(f"  [cyan]{where}[/cyan]  {_mark(hit.snippet)}", soft_wrap=True)
    return counts


def _excerpt(store: Store, console: Console) -> None:
    console.print(f"\n[bold]memoir show[/bold] {EXCERPT_SESSION[:8]}  (first lines)")
    shown = 0
    for event in store.events(EXCERPT_SESSION):
        if event.kind is EventKind.USER_TEXT:
            console.print(f"  [bold green]user[/bold green]  {event.text[:160]}", soft_wrap=True)
        elif event.kind is EventKind.ASSISTANT_TEXT:
            console.print(f"  [bold blue]assistant[/bold blue]  {event.text[:160]}", soft_wrap=True)
        elif event.kind is EventKind.TOOL_CALL:
            console.print(f"  [dim]→ {event.tool_name}: {event.text[:80]}[/dim]", soft_wrap=True)
        else:
            continue
        shown += 1
        if shown >= 6:
            break


def run_demo(console: Console, home: Path | None = None, corpus: Path = CORPUS_DIR) -> DemoResult:
    """Sync the corpus into ``home`` (a new temporary folder by default) and tour it."""
    home = home or Path(tempfile.mkdtemp(prefix="memoir-demo-"))
    settings = Settings.from_env(
        {"MEMOIR_HOME": str(home)}, sources=corpus_sources(corpus), database_url=None
    )
    home.mkdir(parents=True, exist_ok=True)
    store = open_store(settings)
    try:
        console.print(f"[bold]Memoir demo[/bold] — throwaway home: {home}")
        report = sync(settings, store)
        console.print(
            f"synced {report.files_indexed} transcripts "
            f"({report.bytes_indexed / 1024:.0f} KiB): {report.exchanges_added} exchanges, "
            f"{report.events_added} events, {report.lines_skipped} junk line(s) skipped and "
            "counted, every transcript archived"
        )
        stats = store.stats()
        table = Table(title="what Memoir found")
        table.add_column("project")
        table.add_column("sessions", justify="right")
        table.add_column("exchanges", justify="right")
        per: dict[str, list[int]] = {}
        for info in store.list_sessions():
            row = per.setdefault(info.session.project, [0, 0])
            row[0] += 1
            row[1] += info.exchanges
        for project, (sessions, exchanges) in sorted(per.items()):
            table.add_row(project, str(sessions), str(exchanges))
        console.print(table)
        hits = _search(store, console)
        _excerpt(store, console)
        console.print(
            f"\nTry it yourself: MEMOIR_HOME={home} memoir search 'rate limit' · "
            f"memoir stats · memoir verify"
        )
        return DemoResult(home, report, stats, hits)
    finally:
        store.close()
