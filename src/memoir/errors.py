"""Memoir's one exception tree.

Every error Memoir raises on purpose derives from :class:`MemoirError`; errors of
drivers and SDKs are translated at the boundary (``raise X(...) from exc``)::

    MemoirError
    ├── ConfigError            bad or missing setting (names the variable)
    │   └── UsageError         an argument that cannot be used (a missing input file,
    │                          conflicting options; names the argument)
    ├── StoreError             the database refused or is unreachable
    │   ├── MigrationError     schema cannot be brought to the current version
    │   ├── ReadOnly           the home or database cannot be written (reading works)
    │   └── ConcurrentWrite    another process indexed the same transcript first
    ├── IngestError            a transcript cannot be read at all (single bad lines are
    │                          skipped and counted, never raised)
    ├── NotFound               a session / exchange / checkpoint id that does not exist
    ├── ModelError             (memoir.llm.port) every model failure, see that module
    ├── SummaryError           a summary run failed (carries the reason)
    │   ├── BudgetExhausted    the per-run attempt budget ran out
    │   └── OversizedHistory   a full regeneration beyond the configured size
    ├── CompactionError        compaction could not produce a valid context
    └── Busy                   another instance holds the lock (sync, job claim)

Python's built-in ``MemoryError`` is never shadowed: no Memoir error has that name.

An error that a missing extra causes says how to install it, and every such hint is made
here (:func:`install_hint`), so none can point a user at someone else's package: the import
name and the command are ``memoir``; the distribution is not: ``memoir`` on the package
index is an unrelated 2020 package (and ``memoirs``, ``memoir-ai``, ``memoire-ai`` are
other memory projects). ``tests/test_distribution.py`` greps ``src/`` for any other hint.
"""

from __future__ import annotations

__all__ = [
    "DISTRIBUTION",
    "BudgetExhausted",
    "Busy",
    "CompactionError",
    "ConcurrentWrite",
    "ConfigError",
    "IngestError",
    "MemoirError",
    "MigrationError",
    "NotFound",
    "OversizedHistory",
    "ReadOnly",
    "StoreError",
    "SummaryError",
    "UsageError",
    "install_hint",
]

DISTRIBUTION = "memoir-engine"


def install_hint(extra: str | None = None) -> str:
    """``pip install 'memoir-engine[extra]'`` (or the base package): what a user types."""
    if extra is None:
        return f"pip install {DISTRIBUTION}"
    return f"pip install '{DISTRIBUTION}[{extra}]'"


class MemoirError(Exception):
    """Base of every error Memoir raises on purpose."""


class ConfigError(MemoirError):
    """A setting is missing or invalid; the message names the variable."""


class UsageError(ConfigError):
    """An argument that cannot be used: a missing input file, options that conflict. The
    CLI exits 2 for it, as for a bad setting; the message names the argument."""


class StoreError(MemoirError):
    """The database refused an operation or cannot be reached."""


class MigrationError(StoreError):
    """The schema cannot be brought to the current version."""


class ReadOnly(StoreError):
    """The home or its database cannot be written by this process (a read-only mount, a
    backup, another user's files): reading commands work, writing ones stop with this."""


class ConcurrentWrite(StoreError):
    """An ingest batch was read from a transcript that another process (a replica sharing
    the database) indexed further meanwhile: it is refused, so no event is stored twice."""


class IngestError(MemoirError):
    """A transcript cannot be read at all (a missing or unreadable file)."""


class NotFound(MemoirError):
    """An id (session, exchange, checkpoint, job) that does not exist."""


class SummaryError(MemoirError):
    """A summary run failed; ``reason`` is one line a person can act on."""

    def __init__(self, reason: str, *, fallback_attempted: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.fallback_attempted = fallback_attempted


class BudgetExhausted(SummaryError):
    """The run's shared attempt budget ran out before the summary was complete."""


class OversizedHistory(SummaryError):
    """A full regeneration beyond the configured size; use incremental mode."""


class CompactionError(MemoirError):
    """Compaction could not produce a valid context (should not happen: the backstop
    always makes progress; raised only for invalid input such as a window <= 0)."""


class Busy(MemoirError):
    """Another process holds the lock (a sync, a job claim)."""
