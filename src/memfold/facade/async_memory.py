"""``AsyncMemory``: the ``Memory`` facade for asyncio applications (FastAPI apps, async agent graphs).

Every public method of ``Memory`` is awaitable here, with the same arguments and results. The
work (embedding, index reads and writes, file writes) runs on a bounded pool of worker threads
(``max_workers``), so the event loop never waits on it; at most ``max_pending`` calls wait for a
thread at once (further callers wait their turn in the loop, never in an unbounded queue).
``Memory`` is thread-safe: the user lock orders writes of one namespace, the index its own."""

from __future__ import annotations

import asyncio
import functools
import inspect
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

from ..errors import InvalidInputError
from ..models import AddResult, HistoryEntry, MemoryRecord, Retrieval, SearchHit
from .memory import Memory

T = TypeVar("T")
DEFAULT_WORKERS = 4
DEFAULT_PENDING = 256


class AsyncMemory:
    """``AsyncMemory(root=...)`` (the arguments of ``Memory``) or ``AsyncMemory(memory=m)`` around an
    open one (then ``aclose`` leaves it open). ``await m.add(...)``, ``await m.search(...)``, …"""

    def __init__(self, root: str | Path | None = None, *, memory: Memory | None = None,
                 max_workers: int = DEFAULT_WORKERS, max_pending: int = DEFAULT_PENDING, **memory_args: Any):
        if not isinstance(max_workers, int) or not 1 <= max_workers <= 64:
            raise InvalidInputError(f"max_workers must be between 1 and 64, got {max_workers!r}")
        if not isinstance(max_pending, int) or max_pending < max_workers:
            raise InvalidInputError(f"max_pending must be at least max_workers ({max_workers}), got {max_pending!r}")
        if memory is not None and (root is not None or memory_args):
            raise InvalidInputError("give memory= or the arguments of a new Memory, not both")
        self.memory = memory if memory is not None else Memory(root, **memory_args)
        self._owned = memory is None
        self._pool = ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="memfold-async")
        self._max_pending = max_pending
        self._slots: dict[asyncio.AbstractEventLoop, asyncio.Semaphore] = {}

    async def run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Any call (``fn(*args, **kwargs)``) on the worker threads: a ``Session``'s methods, say."""
        loop = asyncio.get_running_loop()
        slots = self._slots.get(loop)
        if slots is None:
            if len(self._slots) >= 16:  # event loops that are gone (asyncio.run per call)
                self._slots = {lp: s for lp, s in self._slots.items() if not lp.is_closed()}
            slots = self._slots[loop] = asyncio.Semaphore(self._max_pending)
        async with slots:
            return await loop.run_in_executor(self._pool, functools.partial(fn, *args, **kwargs))

    async def aclose(self) -> None:
        """Wait for the calls under way, then close the memory (when this object opened it)."""
        await asyncio.get_running_loop().run_in_executor(None, functools.partial(self._pool.shutdown, wait=True))
        if self._owned:
            self.memory.close()

    async def close(self) -> None:
        """``aclose``."""
        await self.aclose()

    async def __aenter__(self) -> "AsyncMemory":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # ---- the calls used most, typed; every other public method of Memory is made below ----------------
    async def add(self, data: str | Sequence[Any], user_id: str = "default", **kwargs: Any) -> AddResult:
        """``Memory.add``."""
        return await self.run(self.memory.add, data, user_id, **kwargs)

    async def search(self, query: str, user_id: str = "default", **kwargs: Any) -> list[SearchHit]:
        """``Memory.search``."""
        return await self.run(self.memory.search, query, user_id, **kwargs)

    async def retrieve(self, query: str | None, user_id: str = "default", **kwargs: Any) -> Retrieval:
        """``Memory.retrieve``."""
        return await self.run(self.memory.retrieve, query, user_id, **kwargs)

    async def get(self, memory_id: str, user_id: str | None = None, **kwargs: Any) -> MemoryRecord:
        """``Memory.get``."""
        return await self.run(self.memory.get, memory_id, user_id, **kwargs)

    async def get_all(self, user_id: str = "default", **kwargs: Any) -> list[MemoryRecord]:
        """``Memory.get_all``."""
        return await self.run(self.memory.get_all, user_id, **kwargs)

    async def update(self, memory_id: str, user_id: str | None = None, **kwargs: Any) -> MemoryRecord:
        """``Memory.update``."""
        return await self.run(self.memory.update, memory_id, user_id, **kwargs)

    async def delete(self, memory_id: str, user_id: str | None = None, **kwargs: Any) -> MemoryRecord:
        """``Memory.delete``."""
        return await self.run(self.memory.delete, memory_id, user_id, **kwargs)

    async def delete_all(self, user_id: str | None = None, **kwargs: Any) -> list[MemoryRecord]:
        """``Memory.delete_all``."""
        return await self.run(self.memory.delete_all, user_id, **kwargs)

    async def history(self, memory_id: str, user_id: str | None = None) -> list[HistoryEntry]:
        """``Memory.history``."""
        return await self.run(self.memory.history, memory_id, user_id)

    async def forget(self, query_or_id: str, user_id: str = "default", **kwargs: Any) -> list[MemoryRecord]:
        """``Memory.forget``."""
        return await self.run(self.memory.forget, query_or_id, user_id, **kwargs)

    async def build_context(self, user_message: str, user_id: str = "default", *,
                            tools: Mapping[str, str] | None = None, **kwargs: Any) -> list[dict[str, str]]:
        """``Memory.build_context``."""
        return await self.run(self.memory.build_context, user_message, user_id, tools=tools, **kwargs)

    async def add_note(self, text: str, user_id: str = "default", *, when: datetime | None = None) -> MemoryRecord:
        """``Memory.add_note``."""
        return await self.run(self.memory.add_note, text, user_id, when=when)


def _awaitable(name: str, method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    async def call(self: AsyncMemory, *args: Any, **kwargs: Any) -> Any:
        return await self.run(getattr(self.memory, name), *args, **kwargs)
    call.__doc__ = f"``Memory.{name}``, awaitable. " + (method.__doc__ or "")
    return call


def _public_methods() -> dict[str, Callable[..., Any]]:
    out = {}
    for name, member in inspect.getmembers(Memory):
        if name.startswith("_") or isinstance(inspect.getattr_static(Memory, name), property):
            continue
        if callable(member):
            out[name] = member
    return out


for _name, _method in _public_methods().items():
    if _name not in AsyncMemory.__dict__:
        setattr(AsyncMemory, _name, _awaitable(_name, _method))
