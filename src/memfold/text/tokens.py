"""Exact token counts with toktok (tiktoken-identical ids, offline)."""

from __future__ import annotations

from collections.abc import Sequence

DEFAULT_ENCODING = "o200k_base"


def count_tokens(text: str, encoding: str = DEFAULT_ENCODING) -> int:
    import toktok

    return int(toktok.batch_count([text], encoding, threads=1)[0])


def count_many(texts: Sequence[str], encoding: str = DEFAULT_ENCODING) -> list[int]:
    import toktok

    return [int(n) for n in toktok.batch_count(list(texts), encoding, threads=1)] if texts else []
