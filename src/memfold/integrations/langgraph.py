"""A LangGraph ``BaseStore`` kept in memfold (``pip install memfold[langgraph]``).

``MemfoldStore(memory)`` holds every item of the store in one memfold namespace (``user_id``,
default ``langgraph``): an item is a memory whose words are the item's text (the fields named by
``index`` — the store's ``index_fields`` or the put's — else every text of the value) and whose
``structured_data`` holds the value's keys beside the item's LangGraph namespace and key. So
``search(query=...)`` is memfold's hybrid search (Chinese and English), ``filter`` is tested by the
index in SQL, and the items are lines of a MEMORY.md a person can read and edit. Items are
stored as given (no near-duplicate folding: two keys stay two items). Pass it as a compiled
graph's ``store=``."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    get_text_at_path,
)

from ..errors import InvalidInputError
from ..facade.memory import Memory
from ..models import MemoryRecord, MemoryType

NS = "_lg_ns"  # the item's namespace, its labels joined by "." (a label holds no ".")
PREFIXES = "_lg_prefixes"  # every leading part of the namespace, for prefix searches in SQL
KEY = "_lg_key"
FIELDS = "_lg_fields"  # the value's keys, in order
PAGE = 1000


def _joined(namespace: Sequence[str]) -> str:
    return ".".join(namespace)


def _text(value: dict[str, Any], fields: Sequence[str] | None) -> str:
    """The words of an item: the texts at ``fields`` (LangGraph paths), else every text of the value."""
    if fields:
        parts = [t for f in fields for t in get_text_at_path(value, f) if t]
    else:
        parts = []

        def walk(v: Any) -> None:
            if isinstance(v, str):
                parts.append(v)
            elif isinstance(v, dict):
                for x in v.values():
                    walk(x)
            elif isinstance(v, list):
                for x in v:
                    walk(x)
        walk(value)
    text = "; ".join(p.strip() for p in parts if p.strip())
    return " ".join(text.split()) or json.dumps(value, ensure_ascii=False, sort_keys=True)


def _parts(r: MemoryRecord) -> tuple[tuple[str, ...], str, dict[str, Any]]:
    sd = r.structured_data
    return tuple(str(sd.get(NS, "")).split(".")), str(sd.get(KEY)), {k: sd[k] for k in sd.get(FIELDS, []) if k in sd}


def _item(r: MemoryRecord) -> Item:
    namespace, key, value = _parts(r)
    return Item(value=value, key=key, namespace=namespace, created_at=r.created_at, updated_at=r.updated_at)


def _search_item(r: MemoryRecord, score: float | None) -> SearchItem:
    namespace, key, value = _parts(r)
    return SearchItem(namespace=namespace, key=key, value=value, created_at=r.created_at, updated_at=r.updated_at,
                      score=score)


def _value_filter(flt: dict[str, Any] | None) -> dict[str, Any]:
    """LangGraph's filter (value keys; ``$eq`` … operators) as memfold's, on the value's keys."""
    out: dict[str, Any] = {}
    for k, v in (flt or {}).items():
        if not isinstance(k, str) or k.startswith("_lg_"):
            raise InvalidInputError(f"filter key {k!r} is not a key of the stored values")
        out[f"metadata.{k}"] = v
    return out


def _matches(ns: tuple[str, ...], cond: MatchCondition) -> bool:
    path = tuple(cond.path)
    if len(path) > len(ns):
        return False
    part = ns[: len(path)] if cond.match_type == "prefix" else ns[len(ns) - len(path):]
    return all(p == "*" or p == n for p, n in zip(path, part))


class MemfoldStore(BaseStore):
    """LangGraph's long-term memory store over memfold (sync and async)."""

    supports_ttl = False

    def __init__(self, memory: Memory, *, user_id: str = "langgraph", index_fields: Sequence[str] | None = None,
                 max_workers: int = 4):
        self.memory = memory
        self.user_id = user_id
        self.index_fields = list(index_fields) if index_fields else None
        self._pool = ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="memfold-store")

    # ---- LangGraph's two entry points ----------------------------------------------------------
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run the operations in order; each result in the place of its operation."""
        out: list[Result] = []
        for op in ops:
            if isinstance(op, GetOp):
                out.append(self._get(op.namespace, op.key))
            elif isinstance(op, PutOp):
                self._put(op)
                out.append(None)
            elif isinstance(op, SearchOp):
                out.append(self._search(op))
            elif isinstance(op, ListNamespacesOp):
                out.append(self._namespaces(op))
            else:
                raise InvalidInputError(f"unknown store operation {type(op).__name__}")
        return out

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """``batch`` on the store's worker threads (the event loop does not wait on the index)."""
        return await asyncio.get_running_loop().run_in_executor(self._pool, partial(self.batch, list(ops)))

    def close(self) -> None:
        """Stop the worker threads (the memory stays open: it is the caller's)."""
        self._pool.shutdown(wait=True)

    # ---- the operations ----------------------------------------------------------------------------
    def _find(self, namespace: Sequence[str], key: str) -> MemoryRecord | None:
        rows = self.memory.get_all(self.user_id, limit=1, filters={NS: _joined(namespace), KEY: key})
        return rows[0] if rows else None

    def _get(self, namespace: Sequence[str], key: str) -> Item | None:
        r = self._find(namespace, key)
        return _item(r) if r is not None else None

    def _put(self, op: PutOp) -> None:
        old = self._find(op.namespace, op.key)
        if op.value is None:
            if old is not None:
                self.memory.delete(old.id, self.user_id)
            return
        value = dict(op.value)
        bad = [k for k in value if not isinstance(k, str) or k.startswith("_lg_")]
        if bad:
            raise InvalidInputError(f"value keys {bad!r}: keys starting with '_lg_' are the store's own")
        ns = list(op.namespace)
        data = {**value, NS: _joined(ns), PREFIXES: [_joined(ns[:i]) for i in range(1, len(ns) + 1)], KEY: op.key,
                FIELDS: list(value)}
        fields = self.index_fields if op.index is None else (op.index or None)
        text = _text(value, fields)
        if old is None:
            self.memory.add(text, self.user_id, memory_type=MemoryType.FACT, structured_data=data, infer=False,
                            dedupe=False)
        else:
            self.memory.update(old.id, self.user_id, content=text, structured_data=data)

    def _search(self, op: SearchOp) -> list[SearchItem]:
        where: dict[str, Any] = _value_filter(op.filter)
        if op.namespace_prefix:
            where[PREFIXES] = {"contains": _joined(op.namespace_prefix)}
        else:
            where[KEY] = "*"  # the store's items only (a hand-written line of MEMORY.md is not one)
        if op.query:
            hits = self.memory.search(op.query, self.user_id, limit=op.offset + op.limit, filters=where,
                                      include_episodic=False)
            return [_search_item(h.record, round(h.score, 6)) for h in hits[op.offset:]]
        rows = self.memory.get_all(self.user_id, limit=op.limit, offset=op.offset, filters=where)
        return [_search_item(r, None) for r in rows]

    def _namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        seen: dict[tuple[str, ...], None] = {}
        offset = 0
        while True:  # a scan of the store's items, a page at a time
            rows = self.memory.get_all(self.user_id, limit=PAGE, offset=offset, filters={NS: "*"})
            for r in rows:
                ns = tuple(str(r.structured_data[NS]).split("."))
                if op.match_conditions and not all(_matches(ns, c) for c in op.match_conditions):
                    continue
                seen[ns[: op.max_depth] if op.max_depth is not None else ns] = None
            if len(rows) < PAGE:
                break
            offset += PAGE
        return sorted(seen)[op.offset: op.offset + op.limit]

