"""Versioned schema migrations: ordered, named, each applied in one transaction.

Each version is a module ``vNNN_<name>.py`` with the statements for both backends. The
``schema_version`` table records every applied version (number, name, time). A
migration with ``reindex`` rebuilds the full-text index rows of all exchanges inside
the same transaction (the index is derived data; a new index format ships as a
migration with ``reindex``). The runners live in the backends
(``sqlite_store.migrate``, ``postgres_store.migrate``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from memoir.store.db import Tx
from memoir.store.migrations import (
    v001_core,
    v002_search,
    v003_filter_tokens,
    v004_neighbour_context,
    v005_token_states,
    v006_embedding_generations,
    v007_embedding_changes,
    v008_accent_folding,
    v009_embedding_recipe,
    v010_memory,
    v011_service,
    v012_checkpoint_boundary,
    v013_memory_recall,
    v014_project_names,
    v015_usage_redactions,
    v016_event_times,
    v017_secret_rescan,
    v018_index_folded_in_python,
    v019_owner_indexes,
    v020_keyed_items,
    v021_session_names,
    v022_owner_tokens,
    v023_embedding_log_everywhere,
)

__all__ = ["CURRENT_VERSION", "MIGRATIONS", "Migration", "pending"]


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    name: str
    sqlite: tuple[str, ...]
    postgres: tuple[str, ...]
    reindex: bool = False
    # a step in Python after the statements, in the same transaction (data repairs)
    sqlite_after: Callable[[Tx], None] | None = None
    postgres_after: Callable[[Tx], None] | None = None


MIGRATIONS: tuple[Migration, ...] = (
    Migration(v001_core.VERSION, v001_core.NAME, v001_core.SQLITE, v001_core.POSTGRES),
    Migration(
        v002_search.VERSION,
        v002_search.NAME,
        v002_search.SQLITE,
        v002_search.POSTGRES,
        reindex=v002_search.REINDEX,
    ),
    Migration(
        v003_filter_tokens.VERSION,
        v003_filter_tokens.NAME,
        (),
        (),
        reindex=v003_filter_tokens.REINDEX,
    ),
    Migration(
        v004_neighbour_context.VERSION,
        v004_neighbour_context.NAME,
        v004_neighbour_context.SQLITE,
        v004_neighbour_context.POSTGRES,
        reindex=v004_neighbour_context.REINDEX,
    ),
    Migration(
        v005_token_states.VERSION,
        v005_token_states.NAME,
        v005_token_states.SQLITE,
        v005_token_states.POSTGRES,
    ),
    Migration(
        v006_embedding_generations.VERSION,
        v006_embedding_generations.NAME,
        v006_embedding_generations.SQLITE,
        v006_embedding_generations.POSTGRES,
    ),
    Migration(
        v007_embedding_changes.VERSION,
        v007_embedding_changes.NAME,
        v007_embedding_changes.SQLITE,
        v007_embedding_changes.POSTGRES,
    ),
    Migration(
        v008_accent_folding.VERSION,
        v008_accent_folding.NAME,
        v008_accent_folding.SQLITE,
        v008_accent_folding.POSTGRES,
    ),
    Migration(
        v009_embedding_recipe.VERSION,
        v009_embedding_recipe.NAME,
        v009_embedding_recipe.SQLITE,
        v009_embedding_recipe.POSTGRES,
    ),
    Migration(v010_memory.VERSION, v010_memory.NAME, v010_memory.SQLITE, v010_memory.POSTGRES),
    Migration(v011_service.VERSION, v011_service.NAME, v011_service.SQLITE, v011_service.POSTGRES),
    Migration(
        v012_checkpoint_boundary.VERSION,
        v012_checkpoint_boundary.NAME,
        v012_checkpoint_boundary.SQLITE,
        v012_checkpoint_boundary.POSTGRES,
    ),
    Migration(
        v013_memory_recall.VERSION,
        v013_memory_recall.NAME,
        v013_memory_recall.SQLITE,
        v013_memory_recall.POSTGRES,
        sqlite_after=lambda tx: v013_memory_recall.repair(tx, fts=True),
        postgres_after=lambda tx: v013_memory_recall.repair(tx, fts=False),
    ),
    Migration(
        v014_project_names.VERSION,
        v014_project_names.NAME,
        v014_project_names.SQLITE,
        v014_project_names.POSTGRES,
        sqlite_after=lambda tx: v014_project_names.rename(tx, backend="sqlite"),
        postgres_after=lambda tx: v014_project_names.rename(tx, backend="postgres"),
    ),
    Migration(
        v015_usage_redactions.VERSION,
        v015_usage_redactions.NAME,
        v015_usage_redactions.SQLITE,
        v015_usage_redactions.POSTGRES,
    ),
    Migration(
        v016_event_times.VERSION,
        v016_event_times.NAME,
        v016_event_times.SQLITE,
        v016_event_times.POSTGRES,
        sqlite_after=lambda tx: v016_event_times.backfill(tx, backend="sqlite"),
        postgres_after=lambda tx: v016_event_times.backfill(tx, backend="postgres"),
    ),
    Migration(
        v017_secret_rescan.VERSION,
        v017_secret_rescan.NAME,
        v017_secret_rescan.SQLITE,
        v017_secret_rescan.POSTGRES,
    ),
    Migration(
        v018_index_folded_in_python.VERSION,
        v018_index_folded_in_python.NAME,
        v018_index_folded_in_python.SQLITE,
        v018_index_folded_in_python.POSTGRES,
    ),
    Migration(
        v019_owner_indexes.VERSION,
        v019_owner_indexes.NAME,
        v019_owner_indexes.SQLITE,
        v019_owner_indexes.POSTGRES,
    ),
    Migration(
        v020_keyed_items.VERSION,
        v020_keyed_items.NAME,
        v020_keyed_items.SQLITE,
        v020_keyed_items.POSTGRES,
    ),
    Migration(
        v021_session_names.VERSION,
        v021_session_names.NAME,
        v021_session_names.SQLITE,
        v021_session_names.POSTGRES,
    ),
    Migration(
        v022_owner_tokens.VERSION,
        v022_owner_tokens.NAME,
        v022_owner_tokens.SQLITE,
        v022_owner_tokens.POSTGRES,
        reindex=v022_owner_tokens.REINDEX,
        sqlite_after=v022_owner_tokens.refill_items,
    ),
    Migration(
        v023_embedding_log_everywhere.VERSION,
        v023_embedding_log_everywhere.NAME,
        v023_embedding_log_everywhere.SQLITE,
        v023_embedding_log_everywhere.POSTGRES,
    ),
)
CURRENT_VERSION = MIGRATIONS[-1].version


def pending(current: int, target: int | None = None) -> list[Migration]:
    """Migrations to apply, in order, to go from ``current`` to ``target`` (default: the
    newest)."""
    goal = CURRENT_VERSION if target is None else target
    return [m for m in MIGRATIONS if current < m.version <= goal]
