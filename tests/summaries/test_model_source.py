"""The models a summary run builds are closed when it ends (a remote model holds an HTTP
client): :func:`closing_source`, and ``Memoir.summarize`` / ``summarize_pending`` through it."""

from __future__ import annotations

from pathlib import Path

import pytest

from memoir import Memoir, service
from memoir.llm import ScriptedModel
from memoir.llm.port import Model
from memoir.summaries.session import closing_source


class Closable(ScriptedModel):
    def __init__(self) -> None:
        super().__init__(default='{"narrative": "n", "title": "t"}')
        self.closed = 0

    def close(self) -> None:
        self.closed += 1


def test_the_models_built_are_closed_once_and_the_unbuilt_never_made() -> None:
    made: list[Closable] = []

    def factory() -> Model:
        made.append(Closable())
        return made[-1]

    with closing_source(factory, factory) as models:
        assert made == []  # nothing is built before a call is due
        models.model()
    assert [m.closed for m in made] == [1]  # the fallback was never asked for
    with closing_source(factory, factory) as models:
        models.model()
        models.fallback()
    assert [m.closed for m in made] == [1, 1, 1]


def test_the_models_are_closed_when_the_run_fails() -> None:
    model = Closable()
    with pytest.raises(RuntimeError), closing_source(lambda: model) as models:
        models.model()
        raise RuntimeError("the run failed")
    assert model.closed == 1


def test_a_fallback_of_none_is_not_closed() -> None:
    with closing_source(Closable, lambda: None) as models:
        assert models.fallback() is None


def test_memoir_summarize_closes_the_model_it_built(tmp_path: Path, monkeypatch) -> None:
    built: list[Closable] = []

    def model(self: Memoir) -> Model:
        built.append(Closable())
        return built[-1]

    monkeypatch.setattr(Memoir, "_model", model)
    memoir = Memoir.at(tmp_path / "home", embedder="none", llm="offline")
    try:
        service.create_session(memoir, "u", session_id="s1")
        service.append_messages(
            memoir,
            "u",
            "s1",
            [
                {"role": "user", "content": "plan the db migration"},
                {"role": "assistant", "content": "we add a column first"},
            ],
        )
        run = memoir.as_user("u").summarize("s1", mode="full")  # u's session
        assert run.summary is not None
        assert len(built) == 1 and built[0].calls >= 1 and built[0].closed == 1
    finally:
        memoir.close()
