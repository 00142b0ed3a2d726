"""When a summary was last written, whichever store holds it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from memoir import service
from memoir.app import Memoir
from memoir.config import Settings
from memoir.demo.make_corpus import corpus_sources

WEBSHOP = "3f2a9c1e-5b7d-4e8a-9c0f-1a2b3c4d5e01"


def test_summary_updated_at_reads_the_file_store_and_the_database(home: Path) -> None:
    settings = Settings.from_env(
        {"MEMOIR_HOME": str(home)}, sources=corpus_sources(), summary_limit=50
    )
    before = datetime.now(UTC) - timedelta(seconds=5)
    with Memoir.open(settings) as m:
        m.sync()
        assert service.summary_updated_at(m, WEBSHOP) is None  # nothing written yet
        service.summarize_pending(m)
        stamp = service.summary_updated_at(m, WEBSHOP)
        assert stamp is not None and before <= stamp <= datetime.now(UTC) + timedelta(seconds=5)
        assert service.summary_updated_at(m, "no-such-session") is None
