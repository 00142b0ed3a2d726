"""Fit the token projection used by late-interaction re-ranking (run once by a developer).

    .venv/bin/python scripts/fit_token_basis.py

Reads the bundled demo conversations (``memoir/demo/corpus``: English, German and Japanese
coding-agent sessions, nothing from any benchmark), runs MiniLM over every text longer
than 40 characters, and keeps the mean and the first 96 principal directions of the
content-token states in ``src/memoir/search/data/minilm-token-basis.npz``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from memoir.demo.make_corpus import CORPUS_DIR
from memoir.search.embedders import TOKEN_BASIS_PATH, MiniLMEmbedder, content_token

DIMENSIONS = 96


def strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        if len(value) > 40:
            yield value[:1000]
    elif isinstance(value, dict):
        for item in value.values():
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)


def main() -> None:
    texts: list[str] = []
    for path in sorted(Path(CORPUS_DIR).rglob("*.jsonl")):
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                texts.extend(strings(json.loads(line)))
            except json.JSONDecodeError:
                continue
    model = MiniLMEmbedder(threads=2)
    model.embed(["load"])
    tokenizer, session = model._tokenizer, model._session
    rows = []
    for text in texts:
        encoding = tokenizer.encode(text)
        ids = np.array([encoding.ids], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": 0 * ids}
        (states,) = session.run(["last_hidden_state"], feeds)
        keep = [n for n, piece in enumerate(encoding.tokens) if content_token(piece)]
        rows.append(states[0, keep])
    matrix = np.concatenate(rows).astype(np.float64)
    mean = matrix.mean(axis=0)
    _, _, vt = np.linalg.svd(matrix - mean, full_matrices=False)
    np.savez(
        TOKEN_BASIS_PATH,
        mean=mean.astype(np.float32),
        components=vt[:DIMENSIONS].astype(np.float32),
    )
    print(f"{len(texts)} texts, {matrix.shape[0]} tokens -> {TOKEN_BASIS_PATH}")


if __name__ == "__main__":
    main()
