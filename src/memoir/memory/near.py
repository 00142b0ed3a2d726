"""Near-duplicates: when a new item says what a live item of the same owner and scope
already says in other words, it merges into it (its quotes appended) instead of standing
beside it. Pure.

Vectors alone are not enough: with the bundled MiniLM, "I prefer tabs over spaces." and
"I prefer spaces over tabs." score 0.981 — higher than the paraphrase "I prefer tabs to
spaces." (0.975). So a pair is a near-duplicate only when all three hold:

- cosine similarity of their vectors at least :data:`NEAR_DUPLICATE` (0.95; measured pairs
  in docs/benchmarks.md: paraphrases 0.95–0.98, a different city 0.59, a different
  allergy wording 0.88);
- the content words they share appear in the same order in both (the reversed
  preference above shares {prefer, tabs, spaces} in another order);
- both or neither carry a negation (``not``, ``never``, ``no``, ``n't`` …).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from memoir.store.search_text import STOPWORDS

if TYPE_CHECKING:
    import numpy as np

__all__ = ["NEAR_DUPLICATE", "Candidate", "near_duplicate", "same_claim"]

NEAR_DUPLICATE = 0.95
_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)?", re.UNICODE)
_NEGATION = re.compile(r"\b(?:not|never|no|none|nobody|nothing|neither|nor|without)\b|n't\b")


@dataclass(frozen=True, slots=True)
class Candidate:
    id: str
    text: str
    vector: np.ndarray


def _content_words(text: str) -> list[str]:
    return [w for w in (m.casefold() for m in _WORD.findall(text)) if w not in STOPWORDS]


def same_claim(a: str, b: str) -> bool:
    """The word-order and negation guards of the module (not the vectors)."""
    if bool(_NEGATION.search(a.casefold())) != bool(_NEGATION.search(b.casefold())):
        return False
    wa, wb = _content_words(a), _content_words(b)
    shared = set(wa) & set(wb)
    order_a = [w for w in dict.fromkeys(wa) if w in shared]
    order_b = [w for w in dict.fromkeys(wb) if w in shared]
    return bool(shared) and order_a == order_b


def near_duplicate(text: str, vector: np.ndarray, candidates: Sequence[Candidate]) -> str | None:
    """The id of the most similar candidate that is a near-duplicate of ``text``, or None."""
    import numpy as np

    best: tuple[float, str] | None = None
    v = np.asarray(vector, dtype=np.float32).reshape(-1)
    for c in candidates:
        score = float(np.asarray(c.vector, dtype=np.float32).reshape(-1) @ v)
        near = score >= NEAR_DUPLICATE and same_claim(text, c.text)
        if near and (best is None or score > best[0]):
            best = (score, c.id)
    return best[1] if best is not None else None
