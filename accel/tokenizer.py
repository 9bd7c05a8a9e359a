"""Tokenisation for the encoder: real token counts, truncation at the model's limit, no fixed padding.

The ``tokenizer.json`` shipped with all-MiniLM-L6-v2 pads every text to 128 tokens and truncates at 128.
We switch padding off and truncate at ``max_tokens`` (256, as sentence-transformers does), so attention
masks come from real token counts and batches are padded only to their longest member.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from tokenizers import Tokenizer


@dataclass(frozen=True)
class TokenizedTexts:
    """Token ids per text (unpadded) and whether each text was truncated."""

    ids: list[list[int]]
    truncated: list[bool]

    @property
    def lengths(self) -> list[int]:
        return [len(ids) for ids in self.ids]


class EncoderTokenizer:
    def __init__(self, path: Path, max_tokens: int) -> None:
        self._tokenizer = Tokenizer.from_file(str(path))
        self._tokenizer.no_padding()
        self._tokenizer.enable_truncation(max_length=max_tokens)
        self.max_tokens = max_tokens

    def encode(self, texts: list[str]) -> TokenizedTexts:
        encodings = self._tokenizer.encode_batch(texts)
        return TokenizedTexts(
            ids=[encoding.ids for encoding in encodings],
            truncated=[bool(encoding.overflowing) for encoding in encodings],
        )


def pad_batch(ids: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    """``input_ids`` and ``attention_mask`` for one batch, padded with 0 to the longest member."""
    width = max(len(row) for row in ids)
    input_ids = np.zeros((len(ids), width), dtype=np.int64)
    mask = np.zeros((len(ids), width), dtype=np.int64)
    for row, tokens in enumerate(ids):
        input_ids[row, : len(tokens)] = tokens
        mask[row, : len(tokens)] = 1
    return input_ids, mask
