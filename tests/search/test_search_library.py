"""``Memoir.search`` as a library user calls it: what the CLI accepts, it accepts."""

from __future__ import annotations

from pathlib import Path

import pytest
from search_corpus import fill

from memoir.app import Memoir
from memoir.errors import ConfigError, NotFound
from memoir.search import SearchFilters


def test_library_search_takes_a_session_prefix_like_the_cli(tmp_path: Path) -> None:
    with Memoir.at(tmp_path) as memoir:
        fill(memoir.store)
        whole = memoir.search("dark mode", mode="text", filters=SearchFilters(session_id="s-web"))
        prefix = memoir.search("dark mode", mode="text", filters=SearchFilters(session_id="s-w"))
        assert [h.exchange_id for h in prefix] == [h.exchange_id for h in whole] != []
        with pytest.raises(NotFound, match="no session 'zz'"):
            memoir.search("dark mode", mode="text", filters=SearchFilters(session_id="zz"))


def test_an_unknown_harness_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="harness must be one of claude-code, codex"):
        SearchFilters(harness="claude")
    assert SearchFilters(harness="codex").harness == "codex"
