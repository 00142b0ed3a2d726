"""No adapter touches the store, by import or by attribute.

import-linter's contract "adapters never touch the store" (pyproject.toml) refuses an
import of ``memoir.store`` in ``cli/``, ``server/`` and ``mcp/``. An adapter could still
reach it through the open Memoir (``memoir.store.sessions.recent()``), which no import
shows: every adapter module is parsed and each attribute named ``store`` is refused. What
an adapter needs of the store it gets from ``memoir.service`` or the public library.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "memoir"
ADAPTERS = ("cli", "server", "mcp")


def store_uses(source: str) -> list[str]:
    """Each use of a ``store`` attribute, and each import of ``memoir.store``, in
    ``source``. Pure."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr == "store":
            found.append(f"{node.lineno}: {ast.unparse(node)}")
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("memoir.store"):
            found.append(f"{node.lineno}: from {node.module}")
        elif isinstance(node, ast.Import):
            found += [
                f"{node.lineno}: import {a.name}"
                for a in node.names
                if a.name == "memoir.store" or a.name.startswith("memoir.store.")
            ]
    return found


@pytest.mark.parametrize(
    ("source", "flagged"),
    [
        ("rows = memoir.store.sessions.recent(user=user)", True),
        ("last = m.store.events.last_ordinal(sid)", True),
        ("store = memoir.store", True),
        ("from memoir.store.parts.jobs import hash_key", True),
        ("from memoir.store import open_store", True),
        ("import memoir.store.codec", True),
        ("kept = memoir.settings.summary_store", False),  # a setting, not the store
        ("last = service.last_event(memoir, sid)", False),
        ("from memoir.model.event import scrub_deep", False),
        ("from memoir import service", False),
        ("help_text = 'what is stored'", False),
    ],
)
def test_the_guard_sees_what_it_guards_against(source: str, flagged: bool) -> None:
    assert bool(store_uses(source)) is flagged


def test_no_adapter_touches_the_store() -> None:
    modules = [p for folder in ADAPTERS for p in sorted((SRC / folder).rglob("*.py"))]
    assert len(modules) >= 20  # the adapters were found and read (22 modules after #36)
    assert {p.relative_to(SRC).parts[0] for p in modules} == set(ADAPTERS)
    offending = [
        f"{path.relative_to(SRC)}:{hit}"
        for path in modules
        for hit in store_uses(path.read_text(encoding="utf-8"))
    ]
    assert offending == []
