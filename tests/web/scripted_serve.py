"""``memoir serve`` with the shipped scripted model in place of ``MEMOIR_LLM``'s, for the
browser tests. Run as ``python scripted_serve.py CONTROL.json serve --port N …``: the CLI's
own ``serve`` command runs (uvicorn, workers, SIGTERM handling) with ``Memoir._model``
answering from a :class:`~memoir.llm.ScriptedModel`, metered into the usage
ledger like any model.

The control file is JSON, read again on every call, so a test steers a running server:
``delay_s`` (seconds each call takes: progress slow enough to watch), ``fail`` (a message:
every call raises ``BadResponse`` with it, so the job fails) and ``tag`` (a word the
summary ends with, "(regeneration TAG)", so a test can tell one regeneration from the next).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from memoir.app import Memoir
from memoir.llm import ScriptedModel
from memoir.llm.port import BadResponse, Model, ModelRequest, Purpose
from memoir.llm.wiring import wrap

CONTROL = Path(sys.argv[1])


def control() -> dict[str, Any]:
    value: dict[str, Any] = json.loads(CONTROL.read_text(encoding="utf-8"))
    return value


def answer(request: ModelRequest) -> str:
    steer = control()
    time.sleep(float(steer.get("delay_s", 0)))
    if steer.get("fail"):
        raise BadResponse(str(steer["fail"]))
    tag = str(steer.get("tag", "first"))
    if request.meta.purpose is Purpose.MERGE:
        return json.dumps(
            {
                "narrative": "Moving the invoices tables to the new Postgres cluster: logical "
                "replication first, then a blue-green cut-over behind the load balancer, with "
                f"a day of reverse replication to roll back. (regeneration {tag})",
                "facts": [
                    "Replication lag stayed under a second.",
                    "Billing deploys are blue-green.",
                ],
                "keywords": ["postgres", "replication", tag],
            }
        )
    return json.dumps(
        {"narrative": f"A step of the migration plan ({tag}).", "facts": [], "keywords": [tag]}
    )


def scripted_model(self: Memoir) -> Model:
    return wrap(ScriptedModel(default=answer, name="scripted:web"), self.store.usage, self.settings)


_configured_model = Memoir._model
# summaries answer from the script; memory extraction keeps the configured (offline) model
Memoir._memory_model = _configured_model  # type: ignore[method-assign]
Memoir._model = scripted_model  # type: ignore[method-assign]

if __name__ == "__main__":
    from memoir.cli.app import main

    main(sys.argv[2:])
