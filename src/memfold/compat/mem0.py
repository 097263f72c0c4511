"""mem0's ``Memory`` calls and result shapes over memfold: code written for mem0 runs with only the
import changed (``from memfold.compat.mem0 import Memory``).

What maps to what: ``user_id`` is memfold's namespace (``default`` when only ``agent_id`` or
``run_id`` is given); ``agent_id`` and ``run_id`` are stored on each memory (``run_id`` as its
session) and narrow searches, listings and ``delete_all``; ``metadata`` is the memory's
``structured_data``; ``filters`` take mem0's operators and name metadata keys (``user_id``,
``agent_id``, ``run_id``, ``created_at``, ``updated_at`` and ``memory`` / ``content`` name the
memory's own fields). Results are ``{"results": [...]}`` of mem0's items (``id``, ``memory``,
``hash``, ``metadata``, ``created_at``, ``updated_at``, ``user_id``, ``score`` for searches), plus
memfold's ``memory_type`` and ``importance``. Extraction (``infer=True``) is memfold's: its rules, or
the configured ``[llm]``. docs/coming-from-mem0.md tells what differs and why."""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from ..config import load_settings
from ..errors import ArgumentError, InvalidInputError, NotFoundError
from ..facade.memory import Memory as NativeMemory
from ..models import HistoryEntry, MemoryRecord, SearchHit

log = logging.getLogger("memfold")
T = TypeVar("T")

DEFAULT_LIMIT = 100  # mem0's default number of results of search and get_all
_OWN_FIELDS = {"user_id": "user_id", "agent_id": "agent_id", "run_id": "session_id", "created_at": "created_at",
               "updated_at": "updated_at", "memory": "content", "content": "content"}
_EVENTS = {"add": "ADD", "update": "UPDATE", "edit": "UPDATE", "merge": "UPDATE", "replace": "UPDATE",
           "delete": "DELETE", "forget": "DELETE", "archive": "DELETE"}


class ValidationError(InvalidInputError, ValueError):
    """Arguments mem0 would refuse with a ``ValueError`` (no user, agent or run id; a bad filter)."""


def _checked(fn: Callable[[], T]) -> T:
    """A native call whose input errors are also ``ValueError`` (what mem0 code catches)."""
    try:
        return fn()
    except ArgumentError:
        raise
    except InvalidInputError as exc:
        if isinstance(exc, ValueError):
            raise
        raise ValidationError(str(exc)) from exc


def _hash(text: str) -> str:
    return hashlib.md5(text.encode("utf-8")).hexdigest()


def memory_item(r: MemoryRecord, score: float | None = None) -> dict[str, Any]:
    """One memory in mem0's item shape (with memfold's ``memory_type``, ``kind`` — ``turn`` for a
    conversation turn, else the type — and ``importance``)."""
    item: dict[str, Any] = {"id": r.id, "memory": r.content, "hash": _hash(r.content),
                            "metadata": dict(r.structured_data) or None, "created_at": r.created_at.isoformat(),
                            "updated_at": r.updated_at.isoformat() if r.updated_at != r.created_at else None,
                            "user_id": r.user_id}
    if r.agent_id:
        item["agent_id"] = r.agent_id
    if r.source_session_id:
        item["run_id"] = r.source_session_id
    if score is not None:
        item["score"] = score
    item.update(memory_type=r.memory_type.value, kind=r.kind, importance=r.importance)
    return item


def _hit_item(h: SearchHit) -> dict[str, Any]:
    item = memory_item(h.record, round(h.score, 6))
    item["relevance"] = round(h.relevance, 4)
    return item


def history_item(n: int, e: HistoryEntry) -> dict[str, Any]:
    """One history entry in mem0's shape (both the documented and the returned key names)."""
    event = _EVENTS.get(e.action, e.action.upper())
    at = e.at.isoformat()
    return {"id": n, "memory_id": e.memory_id, "old_memory": e.old_content, "new_memory": e.new_content,
            "previous_value": e.old_content, "new_value": e.new_content, "event": event, "action": event,
            "created_at": at, "updated_at": at if event != "ADD" else None, "is_deleted": int(event == "DELETE"),
            "user_id": e.user_id}


def _mem0_filters(value: Any, where: str = "filters") -> Any:
    """mem0's filter names as memfold's: metadata keys under ``metadata.``, the own fields by name."""
    if isinstance(value, list):
        return [_mem0_filters(v, where) for v in value]
    if not isinstance(value, dict):
        return value
    out: dict[str, Any] = {}
    for key, val in value.items():
        bare = key.lstrip("$") if isinstance(key, str) else key
        if isinstance(bare, str) and bare.upper() in ("AND", "OR", "NOT"):
            out[bare.upper()] = _mem0_filters(val, f"{where}.{bare}")
        elif key == "user_id":
            raise ValidationError(f"{where}: user_id goes at the top of the filters or as user_id=..., where it "
                                  "names the namespace searched")
        elif key in _OWN_FIELDS:
            out[_OWN_FIELDS[key]] = val
        elif isinstance(key, str) and key.startswith(("metadata.", "structured_data.")):
            out[key] = val
        else:
            out[f"metadata.{key}"] = val
    return out


class Memory:
    """mem0's ``Memory`` over a memfold workspace (``config``: see ``from_config``; or ``root=``)."""

    def __init__(self, config: dict[str, Any] | None = None, *, root: str | Path | None = None,
                 memory: NativeMemory | None = None):
        self._native = memory if memory is not None else _open(config or {}, root)

    @classmethod
    def from_config(cls, config_dict: dict[str, Any]) -> "Memory":
        """A memory from mem0's configuration dict. Read: ``memfold`` (``root`` and memfold's setting
        sections: ``index``, ``llm``, ``embedder``, ``memory``, ``language``), ``vector_store`` of
        provider ``pgvector`` (memfold's PostgreSQL index) and ``llm`` of an OpenAI-compatible provider
        (model and base URL; the key comes from ``OPENAI_API_KEY``). Other sections do not apply to
        memfold and are logged as ignored."""
        if not isinstance(config_dict, dict):
            raise ValidationError(f"the configuration must be a dict, got {type(config_dict).__name__}")
        return cls(config_dict)

    @property
    def native(self) -> NativeMemory:
        """The memfold ``Memory`` underneath (namespaces, sessions, context, maintenance)."""
        return self._native

    def close(self) -> None:
        """Close the index and the LLM client."""
        self._native.close()

    def __enter__(self) -> "Memory":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- scope ------------------------------------------------------------------------------
    @staticmethod
    def _scope(user_id: str | None, agent_id: str | None, run_id: str | None, filters: dict[str, Any] | None,
               call: str, need: bool = True) -> tuple[str, dict[str, Any] | None]:
        """The namespace and the memfold filter of a call (entity ids may come inside ``filters``)."""
        rest = dict(filters or {})
        for name in ("user_id", "agent_id", "run_id"):
            if name in rest and isinstance(rest[name], str) and rest[name] != "*":
                given = {"user_id": user_id, "agent_id": agent_id, "run_id": run_id}[name]
                if given is not None and given != rest[name]:
                    raise ValidationError(f"{call}(): {name} is {given!r} but filters say {rest[name]!r}")
                value = rest.pop(name)
                user_id, agent_id, run_id = ((value, agent_id, run_id) if name == "user_id" else
                                             (user_id, value, run_id) if name == "agent_id" else
                                             (user_id, agent_id, value))
        if need and user_id is None and agent_id is None and run_id is None:
            raise ValidationError(f"{call}(): give at least one of user_id, agent_id or run_id")
        parts: list[dict[str, Any]] = []
        if rest:
            parts.append(_mem0_filters(rest))
        if agent_id is not None:
            parts.append({"agent_id": agent_id})
        if run_id is not None:
            parts.append({"session_id": run_id})
        where = None if not parts else parts[0] if len(parts) == 1 else {"AND": parts}
        return user_id or "default", where

    # ---- mem0's calls ----------------------------------------------------------------------
    def add(self, messages: Any, *, user_id: str | None = None, agent_id: str | None = None,
            run_id: str | None = None, metadata: dict[str, Any] | None = None, infer: bool = True,
            memory_type: str | None = None, prompt: str | None = None) -> dict[str, Any]:
        """Store a text, one message or a list of messages: ``{"results": [{id, memory, event, …}]}``.
        ``memory_type`` is memfold's (``fact``, ``preference``, …); mem0's ``procedural_memory`` is
        not one of them. ``prompt`` (mem0's custom extraction prompt) does not apply: memfold's
        extraction prompts are its own files."""
        namespace, _ = self._scope(user_id, agent_id, run_id, None, "add")
        if prompt is not None:
            log.info("memfold.compat.mem0: add(prompt=...) is ignored (memfold's extraction prompts are files)")
        data: Any = [messages] if isinstance(messages, dict) else messages
        res = _checked(lambda: self._native.add(data, namespace, agent_id=agent_id, session_id=run_id,
                                                metadata=metadata, infer=infer, memory_type=memory_type))
        out = [dict(memory_item(r), event="ADD") for r in res.added]
        out += [dict(memory_item(r), event="UPDATE") for r in res.merged]
        out += [dict(memory_item(r), event="DELETE") for r in res.forgotten]
        return {"results": out}

    def search(self, query: str, *, user_id: str | None = None, agent_id: str | None = None,
               run_id: str | None = None, limit: int = DEFAULT_LIMIT, filters: dict[str, Any] | None = None,
               threshold: float | None = None, rerank: bool = False) -> dict[str, Any]:
        """Ranked memories: ``{"results": [{…, "score"}]}``, best first; ``threshold``: the least
        ``score`` kept. ``rerank`` does not apply (memfold ranks with its own fusion and rescoring)."""
        namespace, where = self._scope(user_id, agent_id, run_id, filters, "search")
        hits = _checked(lambda: self._native.search(query, namespace, limit=limit, filters=where))
        items = [_hit_item(h) for h in hits]
        if threshold is not None:
            items = [i for i in items if i["score"] >= threshold]
        return {"results": items}

    def get_all(self, *, user_id: str | None = None, agent_id: str | None = None, run_id: str | None = None,
                filters: dict[str, Any] | None = None, limit: int = DEFAULT_LIMIT) -> dict[str, Any]:
        """The memories of the scope, oldest first: ``{"results": [...]}``."""
        namespace, where = self._scope(user_id, agent_id, run_id, filters, "get_all")
        rows = _checked(lambda: self._native.get_all(namespace, limit=limit, filters=where))
        return {"results": [memory_item(r) for r in rows]}

    def get(self, memory_id: str) -> dict[str, Any] | None:
        """One memory by id in mem0's item shape, or None when there is none."""
        try:
            return memory_item(_checked(lambda: self._native.get(memory_id, include_archived=False)))
        except NotFoundError:
            return None

    def update(self, memory_id: str, data: str, metadata: dict[str, Any] | None = None) -> dict[str, str]:
        """Replace a memory's words (and, given, its metadata)."""
        _checked(lambda: self._native.update(memory_id, content=data, structured_data=metadata))
        return {"message": "Memory updated successfully!"}

    def delete(self, memory_id: str) -> dict[str, str]:
        """Delete a memory and every other copy of its words."""
        _checked(lambda: self._native.delete(memory_id))
        return {"message": "Memory deleted successfully!"}

    def delete_all(self, user_id: str | None = None, agent_id: str | None = None,
                   run_id: str | None = None) -> dict[str, str]:
        """Delete every memory of the scope (at least one of user_id, agent_id, run_id)."""
        namespace, where = self._scope(user_id, agent_id, run_id, None, "delete_all")
        _checked(lambda: self._native.delete_all(namespace, filters=where))
        return {"message": "Memories deleted successfully!"}

    def history(self, memory_id: str) -> list[dict[str, Any]]:
        """Every change of a memory, oldest first, in mem0's shape."""
        return [history_item(n, e) for n, e in enumerate(_checked(lambda: self._native.history(memory_id)), 1)]

    def reset(self) -> None:
        """Delete every memory of every namespace of the workspace (mem0's ``reset``)."""
        self._native.reset(confirm=True)


class AsyncMemory:
    """mem0's ``AsyncMemory``: the same calls as ``Memory``, awaitable, run on a few worker threads."""

    def __init__(self, config: dict[str, Any] | None = None, *, root: str | Path | None = None,
                 memory: NativeMemory | None = None, max_workers: int = 4):
        self._sync = Memory(config, root=root, memory=memory)
        self._pool = ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="memfold-mem0")

    @classmethod
    async def from_config(cls, config_dict: dict[str, Any]) -> "AsyncMemory":
        """As ``Memory.from_config`` (awaitable, as mem0's is)."""
        return cls(config_dict)

    async def _run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._pool, partial(fn, *args, **kwargs))

    async def add(self, messages: Any, **kwargs: Any) -> dict[str, Any]:
        """``Memory.add``, awaitable."""
        return await self._run(self._sync.add, messages, **kwargs)

    async def search(self, query: str, **kwargs: Any) -> dict[str, Any]:
        """``Memory.search``, awaitable."""
        return await self._run(self._sync.search, query, **kwargs)

    async def get_all(self, **kwargs: Any) -> dict[str, Any]:
        """``Memory.get_all``, awaitable."""
        return await self._run(self._sync.get_all, **kwargs)

    async def get(self, memory_id: str) -> dict[str, Any] | None:
        """``Memory.get``, awaitable."""
        return await self._run(self._sync.get, memory_id)

    async def update(self, memory_id: str, data: str, metadata: dict[str, Any] | None = None) -> dict[str, str]:
        """``Memory.update``, awaitable."""
        return await self._run(self._sync.update, memory_id, data, metadata)

    async def delete(self, memory_id: str) -> dict[str, str]:
        """``Memory.delete``, awaitable."""
        return await self._run(self._sync.delete, memory_id)

    async def delete_all(self, **kwargs: Any) -> dict[str, str]:
        """``Memory.delete_all``, awaitable."""
        return await self._run(self._sync.delete_all, **kwargs)

    async def history(self, memory_id: str) -> list[dict[str, Any]]:
        """``Memory.history``, awaitable."""
        return await self._run(self._sync.history, memory_id)

    async def reset(self) -> None:
        """``Memory.reset``, awaitable."""
        await self._run(self._sync.reset)

    def close(self) -> None:
        """Wait for the calls under way, then close the memory."""
        self._pool.shutdown(wait=True)
        self._sync.close()


def _open(config: dict[str, Any], root: str | Path | None) -> NativeMemory:
    """A memfold ``Memory`` from mem0's configuration dict (what applies of it; the rest is logged)."""
    own = dict(config.get("memfold") or {})
    root = root or own.pop("root", None) or os.environ.get("MEMFOLD_HOME") or None
    overrides: dict[str, Any] = {k: own[k] for k in ("index", "llm", "embedder", "memory", "language") if k in own}
    store = config.get("vector_store") or {}
    if store.get("provider") == "pgvector":
        c = store.get("config") or {}
        dsn = c.get("connection_string") or (
            f"postgresql://{c.get('user', '')}{':' + str(c['password']) if c.get('password') else ''}"
            f"@{c.get('host', 'localhost')}:{c.get('port', 5432)}/{c.get('dbname', 'postgres')}")
        overrides["index"] = {"backend": "postgres", "dsn": dsn, **overrides.get("index", {})}
    elif store:
        log.warning("memfold.compat.mem0: vector_store %r does not apply; memfold keeps its own index (SQLite, "
                    "or PostgreSQL with provider 'pgvector')", store.get("provider"))
    llm = config.get("llm") or {}
    if llm:
        c = llm.get("config") or {}
        base = c.get("openai_base_url") or c.get("base_url") or c.get("ollama_base_url") or ""
        if c.get("api_key"):
            log.warning("memfold.compat.mem0: llm.config.api_key is not read; memfold takes the key from the "
                        "environment variable OPENAI_API_KEY ([llm] api_key_env)")
        overrides["llm"] = {"provider": "openai", **({"model": c["model"]} if c.get("model") else {}),
                            **({"base_url": base} if base else {}), **overrides.get("llm", {})}
    for key in config:
        if key not in ("memfold", "vector_store", "llm", "version"):
            log.warning("memfold.compat.mem0: configuration section %r does not apply to memfold; ignored", key)
    # mem0 returns every candidate of a search unless a threshold is given: no relevance floor by default
    policy = {"min_score": 0.0}
    return NativeMemory(settings=load_settings(root, **overrides), policy=policy)
