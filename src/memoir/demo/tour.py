"""The demo tour, and the home it makes (never a real one).

The demo's home: one it makes itself, never a real one.

``memoir demo`` builds its home in a new temporary folder, or with ``--home DIR`` in a
folder that is new, empty, or a home an earlier demo made. A home the demo made holds
:data:`MARKER`; one that also holds anything else — a real home, or a demo home a
``memoir sync`` of real transcripts was run on since — is refused with one line
(:class:`memoir.errors.ConfigError`), so sample data is never merged into real
conversations (doubled sessions, ambiguous id prefixes).

The demo tour: sync the bundled corpus into a home of its own and show what Memoir found.

Works offline on a fresh machine: the corpus is package data, the store is a SQLite file
in a temporary folder (removed at the end unless kept; :mod:`memoir.demo.tour` says which
folders the demo may build in), and the model is the embedded offline one (no network). The tour
walks the main job: sync (archive + index), the summary pass, search with the summary
beside each hit, a transcript excerpt, a compaction of the long session, and long-term
memory: what the user asked to keep, with their exact words.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.table import Table

from memoir import service
from memoir.app import Memoir
from memoir.config import Settings
from memoir.demo.make_corpus import CORPUS_DIR, corpus_sources
from memoir.errors import ConfigError
from memoir.home_files import private_dir, private_file
from memoir.ingest.batches import SyncReport
from memoir.model import EventKind
from memoir.store import Store

__all__ = [
    "DEMO_QUERIES",
    "MARKER",
    "DemoResult",
    "check_only_demo",
    "claim_home",
    "run_demo",
]

MARKER = "memoir-demo.txt"
_MARKER_TEXT = (
    "This home was made by `memoir demo` from its bundled sample corpus.\n"
    "It holds no real conversation; delete the folder when you are done with it.\n"
)


def _refuse(home: Path, what: str) -> ConfigError:
    return ConfigError(
        f"--home {home} {what} `memoir demo` did not make; the demo writes only into a "
        "home of its own: give --home a new or empty folder, or leave it out"
    )


def claim_home(home: Path | None) -> Path:
    """The folder the demo builds in, its marker written: a new temporary folder when
    ``home`` is None, else ``home`` when it is new, empty or marked as the demo's.
    ``ConfigError`` for anything else."""
    if home is None:
        home = Path(tempfile.mkdtemp(prefix="memoir-demo-"))
    elif home.exists() and not home.is_dir():
        raise ConfigError(f"--home {home} is not a folder; give it a new or empty folder")
    elif home.is_dir() and not (home / MARKER).is_file() and any(home.iterdir()):
        raise _refuse(home, "holds files")
    private_dir(home)  # owner-only, as every home (mkdtemp's folder is 0700 already)
    with private_file(home / MARKER) as marker:
        marker.write(_MARKER_TEXT.encode("utf-8"))
    return home


def check_only_demo(home: Path, store: Store, corpus_roots: Iterable[Path]) -> None:
    """``ConfigError`` when the store of a marked ``home`` holds a conversation the demo
    did not make: a transcript read from outside the bundled corpus, or a session fed
    another way (the HTTP API, ``service.append_messages``)."""
    roots = {text for root in corpus_roots for text in (str(root), str(root.resolve()))}
    sources = store.ingest.sources()
    for path in sources:
        if not any(path == root or path.startswith(root + os.sep) for root in roots):
            raise _refuse(home, f"holds transcripts (such as {path})")
    read = {state.session_id for state in sources.values()}
    for info in store.sessions.recent():
        if info.session.id not in read:
            raise _refuse(home, f"holds conversations (such as {info.session.id})")


DEMO_QUERIES = ("flaky coupon timezone", "PgBouncer transaction pooling", "Docker-Build psycopg")
EXCERPT_SESSION = "3f2a9c1e-5b7d-4e8a-9c0f-1a2b3c4d5e01"
LONG_SESSION = "8d0e6b2f-1c3a-4f5e-8a9b-7c6d5e4f3a02"
COMPACT_WINDOW = 2_800  # small on purpose: the demo session is ~2k tokens


@dataclass(frozen=True, slots=True)
class DemoResult:
    home: Path
    report: SyncReport
    stats: dict[str, int]
    hits: dict[str, int]
    summarized: int
    compaction: tuple[str, int, int]  # strategy, tokens before, tokens after
    remembered: int = 0
    kept: bool = True  # False: ``home`` was a temporary folder, removed when the tour ended


def _mark(snippet: str) -> str:
    text = " ".join(snippet.split()).replace("[", "\\[")
    return text.replace("\x02", "[bold yellow]").replace("\x03", "[/bold yellow]")


def _search(memoir: Memoir, console: Console) -> dict[str, int]:
    counts: dict[str, int] = {}
    for query in DEMO_QUERIES:
        hits = memoir.search(query, mode="text", limit=3)
        counts[query] = len(hits)
        console.print(f"\n[bold]memoir search[/bold] {query!r} → {len(hits)} hit(s)")
        for hit in hits:
            console.print(f"  [cyan]{hit.project}[/cyan]  {_mark(hit.snippet)}", soft_wrap=True)
        if hits and hits[0].summary:
            first = hits[0].summary.splitlines()[0]
            console.print(f"  [dim]summary of the top hit's conversation:[/dim] {first}")
    return counts


def _excerpt(store: Store, console: Console) -> None:
    console.print(f"\n[bold]memoir show[/bold] {EXCERPT_SESSION[:8]}  (first lines)")
    shown = 0
    for event in store.events.of(EXCERPT_SESSION):
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


def _compact(memoir: Memoir, console: Console) -> tuple[str, int, int]:
    events = memoir.store.events.of(LONG_SESSION)
    # a 2.8k-token window is too small for a memory request too: memory here is `remember`
    result = memoir.compactor(memory=False).compact_events(
        events, window=COMPACT_WINDOW, session_id=LONG_SESSION
    )
    console.print(
        f"\n[bold]compaction[/bold] of the long session for a {COMPACT_WINDOW:,}-token "
        f"window: {result.strategy}, {result.tokens_before:,} → {result.tokens_after:,} "
        f"tokens, {len(result.messages)} messages (system, summary, verbatim tail)"
    )
    return result.strategy, result.tokens_before, result.tokens_after


def _remember(memoir: Memoir, console: Console) -> int:
    out = memoir.remember(EXCERPT_SESSION[:8])
    console.print(
        f"\n[bold]memoir remember[/bold] {EXCERPT_SESSION[:8]} → {len(out.items)} item(s), "
        "each with the user's exact words:"
    )
    for item in out.items:
        console.print(f"  [green]{item.kind}[/green]  {item.content}", soft_wrap=True)
        for source in item.sources:
            console.print(f"    [dim]“{source.quote}” (event {source.ordinal})[/dim]")
    return len(out.items)


def _projects(store: Store, console: Console) -> None:
    table = Table(title="what Memoir found")
    table.add_column("project")
    table.add_column("sessions", justify="right")
    table.add_column("exchanges", justify="right")
    per: dict[str, list[int]] = {}
    for info in store.sessions.recent():
        row = per.setdefault(info.session.project, [0, 0])
        row[0] += 1
        row[1] += info.exchanges
    for project, (sessions, exchanges) in sorted(per.items()):
        table.add_row(project, str(sessions), str(exchanges))
    console.print(table)


def _executable() -> str:
    """How this shell can run memoir: ``memoir`` when it is on the PATH, else the path of
    the one running (``.venv/bin/memoir`` after ``make demo``)."""
    argv0 = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    if argv0 is None or argv0.name != "memoir" or not argv0.exists():
        return "memoir" if shutil.which("memoir") else f"{sys.executable} -m memoir.cli"
    on_path = shutil.which("memoir")
    if on_path and Path(on_path).resolve() == argv0.resolve():
        return "memoir"
    try:
        return str(argv0.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(argv0.resolve())


def run_demo(
    console: Console,
    home: Path | None = None,
    corpus: Path = CORPUS_DIR,
    *,
    keep: bool = False,
) -> DemoResult:
    """Sync the corpus into a home of the demo's own and tour it: ``home`` when it is new,
    empty or made by an earlier demo (kept), else a new temporary folder, removed when
    the tour ends — however it ends — unless ``keep``. ``ConfigError`` for a ``home``
    holding anything the demo did not make."""
    temporary = home is None
    home = claim_home(home)
    kept = keep or not temporary
    try:
        result = _tour(console, home, corpus, kept)
    finally:
        if not kept:
            shutil.rmtree(home, ignore_errors=True)
    return result


def _tour(console: Console, home: Path, corpus: Path, kept: bool) -> DemoResult:
    settings = Settings.from_env(
        {"MEMOIR_HOME": str(home)},
        sources=corpus_sources(corpus),
        database_url=None,
        llm="offline",
        summary_limit=50,
    )
    with Memoir.open(settings) as memoir:
        check_only_demo(home, memoir.store, settings.sources)
        where = "kept" if kept else "temporary: removed at the end; --keep keeps it"
        console.print(f"[bold]Memoir demo[/bold] — the demo's own home: {home} ({where})")
        report = memoir.sync()
        console.print(
            f"synced {report.files_indexed} transcripts "
            f"({report.bytes_indexed / 1024:.0f} KiB): {report.exchanges_added} exchanges, "
            f"{report.events_added} events, {report.lines_skipped} junk line(s) skipped and "
            "counted, every transcript archived"
        )
        _projects(memoir.store, console)
        summaries = service.summarize_pending(memoir)
        summarized = summaries.summarized + summaries.resummarized
        console.print(
            f"summary pass (offline model): {summarized} conversations summarized, "
            f"{summaries.failed} failed"
        )
        hits = _search(memoir, console)
        _excerpt(memoir.store, console)
        compaction = _compact(memoir, console)
        remembered = _remember(memoir, console)
        _try_it(console, home, kept)
        return DemoResult(
            home, report, memoir.store.stats(), hits, summarized, compaction, remembered, kept
        )


def _try_it(console: Console, home: Path, kept: bool) -> None:
    if not kept:
        console.print(
            "\nThe demo's home is removed now. To try the commands on it yourself, run "
            "`memoir demo --keep` (as `make demo` does): it keeps the home and prints its path."
        )
        return
    exe = _executable()
    console.print(
        f"\nTry it yourself: export MEMOIR_HOME={shlex.quote(str(home))}\n"
        f"  {exe} search 'rate limit' · {exe} show {LONG_SESSION[:8]} · {exe} stats\n"
        f"  {exe} remember 0199f1a2 · {exe} memories list · {exe} memories show ID"
    )
