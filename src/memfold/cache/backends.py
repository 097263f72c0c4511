"""Where cached answers are kept: ``LocalCache`` (in process, the default) and ``RedisCache``
(shared by processes and machines), used behind a ``LocalCache`` (``TieredCache``: a process
asks Redis only for what it has not seen itself). All store bytes under string keys with a time
to live.

A backend never decides what is true: a miss and an unavailable backend (``SKIP``) both send the
caller to the index. Redis down or slow costs one warning per outage and nothing else: after a
failure the backend is skipped for ``retry_after`` seconds, then tried again."""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Hashable
from typing import Any, Final, Protocol

from ..errors import ConfigError

log = logging.getLogger("memfold")


class _Skip:
    def __repr__(self) -> str:
        return "SKIP"


SKIP: Final = _Skip()  # the backend is unavailable: not a miss, nothing was looked up


class CacheBackend(Protocol):
    def get(self, key: str) -> bytes | None | _Skip: ...
    def set(self, key: str, value: bytes, ttl: float) -> None: ...
    def close(self) -> None: ...


class LocalCache:
    """A thread-safe LRU of at most ``max_entries`` entries and ``max_bytes`` bytes of values;
    an entry older than its time to live is a miss (and removed). Being in process, it also keeps
    values that are not bytes under keys that are not strings (``CachedIndex``'s search results, kept
    as they are: no key hashed, nothing encoded), each counted at the size its writer gives."""

    def __init__(self, max_entries: int = 2000, max_bytes: int = 64 * 1024 * 1024):
        if max_entries < 1:
            raise ConfigError(f"setting [cache] max_entries must be at least 1, got {max_entries}")
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self._data: OrderedDict[Hashable, tuple[float, Any, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._data)

    @property
    def nbytes(self) -> int:
        return self._bytes

    def get(self, key: Hashable) -> Any:
        now = time.monotonic()
        with self._lock:
            got = self._data.get(key)
            if got is None:
                return None
            if got[0] <= now:
                self._drop(key)
                return None
            self._data.move_to_end(key)
            return got[1]

    def set(self, key: Hashable, value: Any, ttl: float, nbytes: int | None = None) -> None:
        """Keep ``value`` (bytes; or any value with ``nbytes``, its size in memory) for ``ttl`` seconds."""
        size = len(value) if nbytes is None else nbytes
        if size > self.max_bytes:
            return
        with self._lock:
            if key in self._data:
                self._drop(key)
            self._data[key] = (time.monotonic() + ttl, value, size)
            self._bytes += size
            while len(self._data) > self.max_entries or self._bytes > self.max_bytes:
                self._drop(next(iter(self._data)))

    def _drop(self, key: Hashable) -> None:
        _, _, size = self._data.pop(key)
        self._bytes -= size

    def close(self) -> None:
        with self._lock:
            self._data.clear()
            self._bytes = 0


class RedisCache:
    """Redis at ``url`` (``redis://host:port/db``); every call waits at most ``timeout`` seconds.
    A failed call logs one warning for the outage and skips Redis for ``retry_after`` seconds;
    the first call that works again logs that it is back."""

    def __init__(self, url: str, *, timeout: float = 0.05, retry_after: float = 30.0):
        try:
            import redis
            from redis.backoff import NoBackoff
            from redis.retry import Retry
        except ImportError as exc:
            raise ConfigError("[cache] backend = 'redis' needs the Redis client: pip install 'memfold[redis]'") from exc
        if not url:
            raise ConfigError("[cache] backend = 'redis' needs [cache] url (or MEMFOLD_CACHE__URL), "
                              "e.g. redis://127.0.0.1:6379/0")
        if timeout <= 0:
            raise ConfigError(f"setting [cache] timeout must be more than 0 seconds, got {timeout}")
        try:
            self._client: Any = redis.Redis.from_url(url, socket_timeout=timeout, socket_connect_timeout=timeout,
                                                     retry=Retry(NoBackoff(), 0), retry_on_timeout=False,
                                                     health_check_interval=0)
        except ValueError as exc:
            raise ConfigError(f"setting [cache] url is not a Redis URL ({exc}): {url!r}") from exc
        self._errors: tuple[type[BaseException], ...] = (redis.RedisError, OSError)
        self.url = url
        self.retry_after = retry_after
        self._down_until = 0.0
        self._down = False
        self._lock = threading.Lock()
        self.warnings = 0  # outages reported (one warning each)

    def _failed(self, exc: BaseException) -> None:
        with self._lock:
            self._down_until = time.monotonic() + self.retry_after
            if not self._down:
                self._down = True
                self.warnings += 1
                log.warning("Redis cache at %s is unavailable (%s: %s); searching without the cache, retrying "
                            "every %g s", _safe(self.url), type(exc).__name__, exc, self.retry_after)

    def _ok(self) -> None:
        if self._down:
            with self._lock:
                if self._down:
                    self._down = False
                    log.warning("Redis cache at %s is available again", _safe(self.url))

    def _skipping(self) -> bool:
        return self._down and time.monotonic() < self._down_until

    def get(self, key: str) -> bytes | None | _Skip:
        if self._skipping():
            return SKIP
        try:
            value = self._client.get(key)
        except self._errors as exc:
            self._failed(exc)
            return SKIP
        self._ok()
        return value

    def set(self, key: str, value: bytes, ttl: float) -> None:
        if self._skipping():
            return
        try:
            self._client.set(key, value, px=max(1, int(ttl * 1000)))
        except self._errors as exc:
            self._failed(exc)
            return
        self._ok()

    def close(self) -> None:
        self._client.close()


class TieredCache:
    """``local`` in front of ``remote``: reads try the process's own entries first, then the shared
    ones (remembering what they found); writes go to both. ``SKIP`` only when the local entries miss
    and the remote backend is unavailable."""

    def __init__(self, local: LocalCache, remote: RedisCache):
        self.local, self.remote = local, remote

    @property
    def warnings(self) -> int:
        return self.remote.warnings

    def get(self, key: str) -> bytes | None | _Skip:
        got = self.local.get(key)
        if got is not None:
            return got
        shared = self.remote.get(key)
        if isinstance(shared, bytes):
            self.local.set(key, shared, self.remote_ttl)
        return shared

    remote_ttl = 60.0  # seconds a value read from the shared backend is kept locally (its own TTL is unknown)

    def set(self, key: str, value: bytes, ttl: float) -> None:
        self.local.set(key, value, ttl)
        self.remote.set(key, value, ttl)

    def close(self) -> None:
        try:
            self.remote.close()
        finally:
            self.local.close()


def _safe(url: str) -> str:
    """The URL without a password."""
    if "@" in url and "://" in url:
        scheme, rest = url.split("://", 1)
        return f"{scheme}://***@{rest.rsplit('@', 1)[1]}"
    return url
