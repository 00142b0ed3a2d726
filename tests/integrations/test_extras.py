"""Each adapter is an extra: ``import memoir`` never imports a framework, and importing an
adapter without its framework says, in one line, which extra to install."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

ADAPTERS = [
    (
        "memoir.integrations.openai_agents",
        "agents",
        "memoir.integrations.openai_agents needs the openai-agents extra: "
        "pip install 'memoir-engine[openai-agents]'",
    ),
    (
        "memoir.integrations.pydantic_ai",
        "pydantic_ai",
        "memoir.integrations.pydantic_ai needs the pydantic-ai extra: "
        "pip install 'memoir-engine[pydantic-ai]'",
    ),
]


@pytest.mark.parametrize(("module", "framework", "message"), ADAPTERS)
def test_an_adapter_without_its_framework_names_the_extra(
    monkeypatch: pytest.MonkeyPatch, module: str, framework: str, message: str
) -> None:
    for name in list(sys.modules):
        if name in (framework, module) or name.startswith(f"{framework}."):
            monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, framework, None)  # as if it were not installed
    with pytest.raises(ImportError) as caught:
        importlib.import_module(module)
    assert str(caught.value) == message
    assert "\n" not in str(caught.value)


def test_import_memoir_imports_no_framework() -> None:
    code = (
        "import sys, memoir, memoir.integrations; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('agents', 'pydantic_ai') or m.startswith('memoir.integrations.')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"
