"""Storage: the Store port (its parts, one per aggregate) and its SQLite and PostgreSQL
backends.

:func:`open_store` picks the backend from the settings: a ``MEMOIR_DATABASE_URL`` that
starts with ``postgresql://`` or ``postgres://`` opens PostgreSQL (needs the ``postgres``
extra), anything else the SQLite file under ``MEMOIR_HOME``. Migrations run on open.

Store calls on an event loop (:func:`run_on_loop`, from :mod:`memoir.store.port`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from memoir.errors import ConfigError, ReadOnly, install_hint
from memoir.store.port import (
    LoopGate,
    Store,
    await_on_loop,
    in_loop_call,
    offload,
    run_on_loop,
)
from memoir.store.values import (
    CheckpointRow,
    IngestBatch,
    SearchFilters,
    SkippedLine,
    SourceState,
    SummaryRow,
    TextHit,
    TraceRow,
)

if TYPE_CHECKING:
    from memoir.config import Settings

__all__ = [
    "CheckpointRow",
    "IngestBatch",
    "LoopGate",
    "SearchFilters",
    "SkippedLine",
    "SourceState",
    "Store",
    "SummaryRow",
    "TextHit",
    "TraceRow",
    "await_on_loop",
    "ensure_writable",
    "in_loop_call",
    "is_postgres_url",
    "offload",
    "open_store",
    "run_on_loop",
    "sqlite_file",
]


_PG_SCHEMES = ("postgresql://", "postgres://")


def is_postgres_url(url: str | None) -> bool:
    return url is not None and url.strip().lower().startswith(_PG_SCHEMES)


def ensure_writable(store: Store, doing: str) -> None:
    """Refuse ``doing`` up front on a store this process can only read, before any model
    call, archive copy or file write it would make first."""
    if store.read_only:
        where = "PostgreSQL database" if store.backend == "postgres" else "SQLite database"
        raise ReadOnly(
            f"{doing} needs to write, and this {where} is read-only here (a standby, a "
            "read-only role or mount): search, show and stats work"
        )


def sqlite_file(settings: Settings) -> Path | None:
    """The SQLite file the settings name (None: PostgreSQL). ``ConfigError`` for a
    ``MEMOIR_DATABASE_URL`` of another kind."""
    url = settings.database_url
    if is_postgres_url(url):
        return None
    if url is not None and url.strip():
        url = url.strip()
        if url.lower().startswith("sqlite:///") and len(url) > len("sqlite:///"):
            rest = url[len("sqlite://") :]  # sqlite:////abs/x.db: one leading slash is enough
            return Path("/" + rest.lstrip("/") if rest.startswith("//") else rest).expanduser()
        raise ConfigError(
            "MEMOIR_DATABASE_URL must start with postgresql:// or sqlite:/// (or be unset "
            f"for the SQLite file under MEMOIR_HOME), not {url.split('://', 1)[0]!r}"
        )
    return settings.sqlite_path


def open_store(settings: Settings) -> Store:
    """Open (and migrate) the store the settings name."""
    path = sqlite_file(settings)
    if path is None:
        url = settings.database_url
        assert url is not None
        try:
            from memoir.store.postgres_store import PostgresStore
        except ImportError as exc:
            raise ConfigError(
                "MEMOIR_DATABASE_URL names PostgreSQL but psycopg is not installed: "
                + install_hint("postgres")
            ) from exc
        return PostgresStore(
            url.strip(),
            max_connections=settings.pg_pool_size,
            pool_timeout_s=settings.pg_pool_timeout_s,
            statement_timeout_s=settings.pg_statement_timeout_s,
        )
    from memoir.store.sqlite_store import SQLiteStore

    return SQLiteStore(path)
