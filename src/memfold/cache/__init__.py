"""The hot cache (SPEC §5.7, seed 003 §6.2): ``CachedIndex`` in front of any index backend, with
an in-process LRU (default) or Redis behind it (``[cache]`` settings)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import ConfigError
from ..index.base import ChangeCounter, capability
from .backends import SKIP, CacheBackend, LocalCache, RedisCache, TieredCache
from .index import CachedIndex
from .queries import CachedQueryEmbedder

if TYPE_CHECKING:
    from ..config import CacheSettings

__all__ = ["SKIP", "CacheBackend", "CachedIndex", "CachedQueryEmbedder", "LocalCache", "RedisCache", "TieredCache",
           "cached", "cached_queries", "make_backend"]


def make_backend(settings: "CacheSettings") -> CacheBackend | None:
    """The backend named by ``[cache] backend`` (None: ``off``)."""
    backend = settings.backend.lower()
    if settings.ttl <= 0:
        raise ConfigError(f"setting [cache] ttl must be more than 0 seconds, got {settings.ttl}")
    if settings.hot_size < 1:
        raise ConfigError(f"setting [cache] hot_size must be at least 1, got {settings.hot_size}")
    if settings.retry_after < 0:
        raise ConfigError(f"setting [cache] retry_after must be 0 seconds or more, got {settings.retry_after}")
    if backend == "off":
        return None
    if backend == "memory":
        return LocalCache(settings.max_entries)
    if backend == "redis":
        redis = RedisCache(settings.url, timeout=settings.timeout, retry_after=settings.retry_after)
        tiered = TieredCache(LocalCache(settings.max_entries), redis)
        tiered.remote_ttl = min(tiered.remote_ttl, settings.ttl)
        return tiered
    raise ConfigError(f"setting [cache] backend must be 'memory', 'redis' or 'off', got {settings.backend!r}")


def cached(index: Any, settings: "CacheSettings") -> Any:
    """``index`` behind the configured cache; unchanged when the cache is off or the index keeps no
    change counter (a backend of one's own). Bad settings close ``index`` (it was opened for this)."""
    if capability(index, ChangeCounter) is None:
        return index
    try:
        backend = make_backend(settings)
    except BaseException:
        index.close()
        raise
    if backend is None:
        return index
    return CachedIndex(index, backend, ttl=settings.ttl, hot_size=settings.hot_size,
                       answers=min(128, settings.max_entries))  # prepared answers: records, heavier than entries


def cached_queries(embedder: Any, index: Any) -> Any:
    """``embedder`` with its query vectors in the cache of ``index`` (a ``CachedIndex``); unchanged otherwise."""
    if not isinstance(index, CachedIndex):
        return embedder
    return CachedQueryEmbedder(embedder, index.cache, ttl=index.ttl)
