"""Paged lists: every list the HTTP API answers is ``{"results": [...], "next": <cursor or null>}``.

A cursor is opaque to clients (they give ``next`` back as ``cursor``); it names the list it was made
for, so a cursor of another list is refused (422, field ``cursor``) instead of paging the wrong
thing. ``limit`` is bounded by the limits table (``RESULTS``)."""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable, Iterable, Sequence
from itertools import islice
from typing import Any, TypeVar

from fastapi import Query

from ..limits import MAX_RESULTS
from .errors import ApiError

T = TypeVar("T")
DEFAULT_LIMIT = 100
MAX_CURSOR_CHARS = 200

LimitQuery = Query(DEFAULT_LIMIT, ge=1, le=MAX_RESULTS, description=f"Results per page (at most {MAX_RESULTS:,})")
CursorQuery = Query(None, max_length=MAX_CURSOR_CHARS, description="The `next` of the previous page")


def encode(list_name: str, offset: int) -> str:
    raw = json.dumps({"l": list_name, "o": offset}, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode(list_name: str, cursor: str | None) -> int:
    """The offset a cursor stands for (0 without one); 422 naming ``cursor`` when it is not one of
    this list's."""
    if not cursor:
        return 0
    try:
        d = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        ok = isinstance(d, dict) and d.get("l") == list_name and isinstance(d.get("o"), int) and d["o"] >= 0
    except (ValueError, binascii.Error, UnicodeDecodeError):
        ok = False
    if not ok:
        raise ApiError(422, "invalid_input", "cursor is not one this list gave (give back the 'next' of the "
                       "previous page of the same list, unchanged)", "cursor")
    return int(d["o"])


def page(list_name: str, fetch: Callable[[int, int], Sequence[T]], limit: int, cursor: str | None) -> dict[str, Any]:
    """One page through ``fetch(limit, offset)``: ``next`` is set when at least one more row follows
    (asked for with one extra row, or with a one-row probe when ``limit`` is the bound)."""
    offset = decode(list_name, cursor)
    if limit < MAX_RESULTS:
        rows = list(fetch(limit + 1, offset))
        more = len(rows) > limit
        rows = rows[:limit]
    else:
        rows = list(fetch(limit, offset))
        more = len(rows) == limit and bool(fetch(1, offset + limit))
    return {"results": rows, "next": encode(list_name, offset + limit) if more else None}


def page_of(list_name: str, items: Iterable[T], limit: int, cursor: str | None) -> dict[str, Any]:
    """One page of a list computed whole (or an iterator, read only as far as the page needs)."""
    offset = decode(list_name, cursor)
    rows = list(islice(iter(items), offset, offset + limit + 1))
    more = len(rows) > limit
    return {"results": rows[:limit], "next": encode(list_name, offset + limit) if more else None}
