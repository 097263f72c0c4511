"""``AsyncMemory``: every public method of ``Memory`` awaitable, on a bounded pool of threads, and
safe under many concurrent tasks (a short soak under asyncio)."""

from __future__ import annotations

import asyncio
import inspect
import threading
from pathlib import Path

import pytest

from memfold import AsyncMemory, Memory
from memfold.errors import InvalidInputError, NotFoundError

from ..conftest import _EMBEDDER


def test_every_public_method_of_memory_is_awaitable():
    public = [n for n, v in inspect.getmembers(Memory) if not n.startswith("_") and callable(v)
              and not isinstance(inspect.getattr_static(Memory, n), property)]
    assert {"add", "search", "get", "get_all", "update", "delete", "delete_all", "history", "reset", "session",
            "build_context", "stats", "export"} <= set(public)
    missing = [n for n in public if not inspect.iscoroutinefunction(getattr(AsyncMemory, n, None))]
    assert missing == []
    assert all((getattr(AsyncMemory, n).__doc__ or "").strip() for n in public)


def test_soak_many_tasks_on_few_threads(tmp_path: Path):
    """200 tasks at once over four namespaces: adds, searches, listings, updates and deletes; the
    work runs on at most ``max_workers`` threads, and what is stored afterwards is what was asked."""
    seen: set[str] = set()

    async def main() -> None:
        async with AsyncMemory(tmp_path / "ws", embedder=_EMBEDDER, max_workers=3, max_pending=8) as am:
            original = am.memory.search

            def spying(*args, **kwargs):  # type: ignore[no-untyped-def]
                seen.add(threading.current_thread().name)
                return original(*args, **kwargs)
            am.memory.search = spying  # type: ignore[method-assign]
            users = [f"u{i}" for i in range(4)]
            added = await asyncio.gather(*(am.add(f"fact {i}: the number {i} likes tea kind {i % 7}", users[i % 4])
                                           for i in range(80)))
            ids = [a.added[0].id for a in added]
            tasks = []
            for i in range(120):
                u = users[i % 4]
                if i % 3 == 0:
                    tasks.append(am.search(f"tea kind {i % 7}", u, limit=3))
                elif i % 3 == 1:
                    tasks.append(am.get_all(u))
                else:
                    tasks.append(am.update(ids[i % 80], users[(i % 80) % 4], importance=0.9))
            results = await asyncio.gather(*tasks)
            assert all(r is not None for r in results)
            gone = await asyncio.gather(*(am.delete(ids[i], users[i % 4]) for i in range(0, 80, 10)))
            assert [g.id for g in gone] == ids[0:80:10]
            counts = await asyncio.gather(*(am.get_all(u) for u in users))
            assert [len(c) for c in counts] == [16, 20, 16, 20]  # deleted: i = 0, 10, …, 70 of u0 and u2
            with pytest.raises(NotFoundError):
                await am.get(ids[0], "u0")
            assert (await am.stats("u1"))["user_id"] == "u1"  # a method made from Memory's
            assert "fact 1:" in await am.show("u1")
    asyncio.run(main())
    assert seen and all(n.startswith("memfold-async") for n in seen) and len(seen) <= 3


def test_bounds_are_checked(mem: Memory):
    with pytest.raises(InvalidInputError, match="max_workers"):
        AsyncMemory(memory=mem, max_workers=0)
    with pytest.raises(InvalidInputError, match="max_pending"):
        AsyncMemory(memory=mem, max_workers=4, max_pending=2)

    async def main() -> None:
        async with AsyncMemory(memory=mem) as am:  # an open Memory stays open
            await am.add("I like tea")
    asyncio.run(main())
    assert mem.get_all()[0].content == "I like tea"
