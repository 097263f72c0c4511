"""A vector cache on disk for evaluation runs (``memfold eval ... --vector-cache DIR``).

An evaluation embeds the same texts run after run (LongMemEval's ~37k user turns take minutes
with the bundled model on a shared CPU). ``CachedEmbedder`` wraps an embedder and keeps every
vector it computes in an SQLite file under ``DIR``, keyed by the embedder (name, size, input cut)
and the SHA-1 of the text, so a second run embeds only what it has not seen. Vectors are the
embedder's own output, so results are unchanged. The file is bounded: past ``max_entries`` rows the
oldest are deleted."""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..errors import InvalidInputError
from ..providers.embedder import Embedder, embed_query

DEFAULT_MAX_ENTRIES = 2_000_000
FILE_NAME = "vectors.sqlite"


def embedder_key(embedder: Embedder) -> str:
    """What decides a vector besides its text: the model, its size and how much of a text it reads."""
    return f"{embedder.name}|{embedder.dim}|{getattr(embedder, 'max_chars', '')}"


class CachedEmbedder:
    """``inner`` with its vectors remembered in ``folder/vectors.sqlite`` (query vectors apart)."""

    def __init__(self, inner: Embedder, folder: str | Path, max_entries: int = DEFAULT_MAX_ENTRIES):
        if max_entries < 1:
            raise InvalidInputError(f"the vector cache needs room for at least one vector, got {max_entries}")
        self.inner = inner
        self.name = inner.name
        self.dim = inner.dim
        if hasattr(inner, "max_chars"):
            self.max_chars = getattr(inner, "max_chars")
        self.max_entries = max_entries
        path = Path(folder)
        if path.exists() and not path.is_dir():
            raise InvalidInputError(f"--vector-cache {path} is a file; give a folder")
        path.mkdir(parents=True, exist_ok=True)
        self.path = path / FILE_NAME
        self._db = sqlite3.connect(self.path, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, vec BLOB NOT NULL)")
        self._db.commit()
        self._lock = threading.Lock()
        self._prefix = embedder_key(inner)
        self.hits = 0
        self.misses = 0

    def _key(self, text: str, query: bool) -> str:
        digest = hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()
        return f"{self._prefix}|{'q' if query else 'd'}|{digest}"

    def _lookup(self, keys: list[str]) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        for i in range(0, len(keys), 500):
            chunk = keys[i: i + 500]
            rows = self._db.execute(f"SELECT key, vec FROM vectors WHERE key IN ({','.join('?' * len(chunk))})",
                                    chunk).fetchall()
            for key, blob in rows:
                vec = np.frombuffer(blob, dtype=np.float32)
                if vec.shape == (self.dim,):
                    found[key] = vec
        return found

    def _embed(self, texts: Sequence[str], query: bool) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        keys = [self._key(t, query) for t in texts]
        with self._lock:
            found = self._lookup(sorted(set(keys)))
        todo: dict[str, str] = {}
        for k, t in zip(keys, texts):
            if k not in found:
                todo.setdefault(k, t)
        self.hits += len(keys) - sum(1 for k in keys if k in todo)
        self.misses += len(todo)
        if todo:
            new_texts = list(todo.values())
            vecs = embed_query(self.inner, new_texts) if query else self.inner.embed(new_texts)
            fresh = {k: np.asarray(v, dtype=np.float32) for k, v in zip(todo, vecs)}
            found.update(fresh)
            with self._lock:
                self._db.executemany("INSERT OR REPLACE INTO vectors (key, vec) VALUES (?, ?)",
                                     [(k, v.tobytes()) for k, v in fresh.items()])
                self._trim()
                self._db.commit()
        return np.vstack([found[k] for k in keys]).astype(np.float32)

    def _trim(self) -> None:
        top = self._db.execute("SELECT max(rowid) FROM vectors").fetchone()[0] or 0
        if top > self.max_entries:
            self._db.execute("DELETE FROM vectors WHERE rowid <= ?", (top - self.max_entries,))

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed(texts, False)

    def embed_query(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed(texts, True)

    def warm(self) -> None:
        fn = getattr(self.inner, "warm", None)
        if callable(fn):
            fn()

    def count(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT count(*) FROM vectors").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._db.close()
