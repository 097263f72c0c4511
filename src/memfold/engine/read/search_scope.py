"""One search, one scope of the index: a backend that can answer a search's several reads in fewer
round trips (PostgreSQL: ``index/pg_scope.py``) offers ``search_scope(user_id)``; the read path's
``Retriever.search`` runs inside it (``scoped``). Backends without it are used as they are."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any, TypeVar

from ...index.base import SearchScope, capability

F = TypeVar("F", bound=Callable[..., Any])


def scoped(search: F) -> F:
    """``Retriever.search`` inside its index's ``search_scope`` for the namespace searched."""

    @wraps(search)
    def in_scope(self: Any, query: str, user_id: str, *args: Any, **kwargs: Any) -> Any:
        scope = capability(self._store(user_id).index, SearchScope)
        if scope is None:
            return search(self, query, user_id, *args, **kwargs)
        with scope.search_scope(user_id):
            return search(self, query, user_id, *args, **kwargs)

    return in_scope  # type: ignore[return-value]
