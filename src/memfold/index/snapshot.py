"""Snapshots of a namespace's in-process search structures, so that a new process starts from a
file read instead of re-reading and re-building every row (the cold start).

One uncompressed ``.npz`` per namespace in ``<index.db>.cache/``, written to a temporary file and
renamed over the old one (readers never see a torn file; two writers just race to the same
content). A snapshot names the index it was cut from (a random ``instance`` id in the index's meta
table, new whenever the file is recreated) and the change counter it reflects; the rows changed
since are applied on top through the usual incremental path. It is only a cache: a missing,
stale, foreign or unreadable snapshot is ignored and the structures are built from the rows."""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from .keywords import KeywordIndex
from .vectors import VectorMatrix

log = logging.getLogger(__name__)

FORMAT = 2  # 2: vectors carry their residual norms
MIN_ROWS = 5000  # smaller namespaces load from the rows fast enough
LEFTOVER_AGE = 300.0  # seconds without a change after which a snapshot temp file is abandoned


def cache_dir(index_path: Path) -> Path:
    return index_path.with_name(index_path.name + ".cache")


def path_for(index_path: Path, user_id: str) -> Path:
    name = hashlib.sha1(user_id.encode("utf-8")).hexdigest()[:24]
    return cache_dir(index_path) / f"{name}.npz"


def save(path: Path, *, instance: str, seq: int, user_id: str, vectors: VectorMatrix,
         keywords: KeywordIndex) -> None:
    arrays = {"format": np.array([FORMAT]), "seq": np.array([seq]), "instance": np.array(instance),
              "user_id": np.array(user_id), "dim": np.array([vectors.dim])}
    arrays.update(vectors.state())
    arrays.update(keywords.state())
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            np.savez(fh, **arrays)  # type: ignore[arg-type]  # numpy's stub reads ** as allow_pickle
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def remove_leftovers(cache: Path, min_age: float = LEFTOVER_AGE) -> int:
    """Delete temporary files of snapshot writes that never finished (a process died while saving).
    Only files unchanged for ``min_age`` seconds: a live writer's file grows as it is written."""
    if not cache.is_dir():
        return 0
    n = 0
    now = time.time()
    for tmp in cache.glob("*.npz.*.tmp"):
        try:
            if now - tmp.stat().st_mtime >= min_age:
                tmp.unlink()
                n += 1
        except FileNotFoundError:
            pass
    if n:
        log.info("removed %d unfinished snapshot file(s) from %s", n, cache)
    return n


def load(path: Path, *, instance: str, seq_now: int, user_id: str, dim: int, exact_max: int
         ) -> tuple[int, VectorMatrix, KeywordIndex] | None:
    """(seq, vectors, keywords) from a snapshot of this very index, or None."""
    if not path.exists():
        return None
    try:
        with np.load(path, allow_pickle=False) as z:
            st = {k: z[k] for k in z.files}
        seq = int(st["seq"][0])
        if int(st["format"][0]) != FORMAT or str(st["instance"]) != instance or str(st["user_id"]) != user_id \
                or int(st["dim"][0]) != dim or seq > seq_now:
            return None
        return seq, VectorMatrix.from_state(dim, exact_max, st), KeywordIndex.from_state(st)
    except Exception as exc:  # noqa: BLE001 - a cache: any damage means "build from the rows"
        log.warning("ignoring the search snapshot %s (%s); building from the index", path, exc)
        return None
