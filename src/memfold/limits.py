"""Bounds on every input that costs memory or time in proportion to its length (one place, so the
API, the CLI and the tools agree). A text over its bound gets an ``InvalidInputError`` that says how
long it is and what the bound is; nothing is stored. Embedding is bounded separately: each text is
cut to ``[embedder] max_chars`` for its vector while the full text is kept (``providers/embedder``)."""

from __future__ import annotations

from .errors import TooLongError

MAX_CONTENT_CHARS = 20_000  # one memory, one daily note, one piece of a conversation turn (longer: split)
MAX_QUERY_CHARS = 10_000  # a search query (retrieve/build_context use the query's last this many)
MAX_MESSAGE_CHARS = 100_000  # one session message (kept verbatim in the session buffer)


def check_length(what: str, text: str, limit: int, hint: str = "split it first") -> None:
    if len(text) > limit:
        raise TooLongError(f"{what} is {len(text):,} characters long, over the limit of {limit:,}; {hint}")


def query_tail(query: str) -> str:
    """The part of a long query used for retrieval: its last ``MAX_QUERY_CHARS`` characters (a
    conversation excerpt ends with what is being asked)."""
    return query if len(query) <= MAX_QUERY_CHARS else query[-MAX_QUERY_CHARS:]
