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


def truncate_tokens(text: str, max_tokens: int, encoding: str = DEFAULT_ENCODING) -> str:
    """The longest prefix of ``text`` with at most ``max_tokens`` tokens (cut on a character boundary)."""
    import toktok

    return str(toktok.truncate(text, max(0, int(max_tokens)), encoding)[0])
