"""A user's policy files (seed 001 §1.2, §1.4, §3.5): ``policy_overrides.json`` and
``policy_snapshots/YYYYMMDD_HHMMSS.json``.

Every change of the overrides (``set``, ``reset``, ``rollback``, an evolution step) first saves
the overrides as they are into a new snapshot, then writes the new ones atomically (temp file,
fsync, rename), all under the folder's policy lock. A snapshot is the overrides file's content itself,
so copying one back by hand is a rollback too. Values are checked against the policy's bounds
before anything is written; an error names the key. The newest ``SNAPSHOTS_KEPT`` snapshots
are kept."""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any, Mapping

from ..errors import ConfigError, InvalidInputError, NotFoundError
from ..policy import Policy, load_overrides, policy_keys
from ..workspace.files import FileLock, atomic_write
from ..workspace.userspace import check_user_id

log = logging.getLogger("memfold")
OVERRIDES = "policy_overrides.json"
SNAPSHOTS = "policy_snapshots"
SNAPSHOTS_KEPT = 200
_NAME = re.compile(r"^(\d{8}_\d{6})(?:_(\d{1,6}))?$")


@dataclass(frozen=True)
class Snapshot:
    """One saved state of the overrides: ``name`` (``YYYYMMDD_HHMMSS`` or ``…_N`` for a second
    snapshot within the same second), its file and the overrides it holds."""

    name: str
    path: Path
    overrides: dict[str, Any]
    error: str = ""  # the file could not be read as overrides (it is listed, never restored)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "file": str(self.path), "overrides": self.overrides}
        if self.error:
            out["error"] = self.error
        return out


@dataclass(frozen=True)
class PolicyChange:
    """What a change did: the overrides before and after, the snapshot saved first (None when
    nothing changed, so nothing was written)."""

    before: dict[str, Any]
    after: dict[str, Any]
    snapshot: Snapshot | None = None
    dropped: dict[str, str] = field(default_factory=dict)  # key -> why (evolution proposals only)
    restored: str | None = None  # rollback: the snapshot restored

    @property
    def changed(self) -> bool:
        return self.before != self.after

    def to_dict(self) -> dict[str, Any]:
        return {"changed": self.changed, "before": self.before, "after": self.after,
                "snapshot": self.snapshot.name if self.snapshot else None, "dropped": dict(self.dropped),
                "restored": self.restored}


def validate(values: Mapping[str, Any], source: str) -> dict[str, Any]:
    """The values as the policy stores them (``"15"`` → 15, ``"true"`` → True); an unknown key
    or a value outside its bounds raises ``ConfigError`` naming the key and ``source``."""
    checked = Policy().merged(values, source)
    return {k: getattr(checked, k) for k in values}


def _sort_key(path: Path) -> tuple[str, int]:
    m = _NAME.match(path.stem)
    return (m.group(1), int(m.group(2) or 0)) if m else ("", 0)


class PolicyFiles:
    """The policy files of one user folder (``folder`` is ``<root>/<user>``). Changes hold the
    folder's ``.policy.lock`` (across threads and processes), not the user lock of memory
    writes: a long ingest does not hold up ``policy set``, nor a policy change a write."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.path = folder / OVERRIDES
        self.snapshot_dir = folder / SNAPSHOTS
        self.lock = FileLock(folder / ".policy.lock")

    @classmethod
    def of(cls, root: Path, user_id: str) -> "PolicyFiles":
        """The policy files of ``user_id`` under the workspace ``root`` (the id is checked)."""
        return cls(root / check_user_id(user_id))

    # ---- reading -----------------------------------------------------------------------
    def overrides(self) -> dict[str, Any]:
        """The overrides file's content ({} when there is none); ``ConfigError`` when it is not a
        JSON object."""
        return load_overrides(self.path)

    def stamp(self) -> tuple[int, int, int] | None:
        """(mtime, size, inode) of the overrides file, None when there is none: a different stamp
        means the file changed (every write here renames a new file into place)."""
        try:
            st = self.path.stat()
        except FileNotFoundError:
            return None
        return (st.st_mtime_ns, st.st_size, st.st_ino)

    def effective(self, base: Policy) -> Policy:
        """``base`` (defaults and config) with this user's overrides applied."""
        return base.merged(self.overrides(), str(self.path))

    def snapshots(self) -> list[Snapshot]:
        """Every snapshot, oldest first."""
        if not self.snapshot_dir.is_dir():
            return []
        paths = sorted((p for p in self.snapshot_dir.glob("*.json") if _NAME.match(p.stem)), key=_sort_key)
        return [self._read_snapshot(p) for p in paths]

    def _read_snapshot(self, path: Path) -> Snapshot:
        try:
            data = load_overrides(path)
            validate(data, str(path))
        except (ConfigError, OSError, UnicodeDecodeError) as exc:
            return Snapshot(path.stem, path, {}, error=str(exc))
        return Snapshot(path.stem, path, data)

    # ---- changing ------------------------------------------------------------------------
    def set(self, values: Mapping[str, Any], source: str = "policy set") -> PolicyChange:
        """Set policy keys (checked first: nothing is written when one is bad)."""
        if not values:
            raise InvalidInputError("policy set needs at least one key and value")
        checked = validate(values, source)
        return self._change(lambda cur: {**cur, **checked})

    def reset(self, keys: list[str] | None = None) -> PolicyChange:
        """Remove the named overrides (all of them when ``keys`` is empty): the config's values apply again."""
        unknown = [k for k in keys or [] if k not in policy_keys()]
        if unknown:
            raise ConfigError(f"unknown policy key {unknown[0]!r} in policy reset; known keys: {', '.join(policy_keys())}")
        if not keys:
            return self._change(lambda cur: {}, unreadable_ok=True)
        return self._change(lambda cur: {k: v for k, v in cur.items() if k not in keys})

    def rollback(self, name: str | None = None) -> PolicyChange:
        """Restore the overrides saved in snapshot ``name`` (default: the newest). The overrides
        replaced are snapshotted first, so a second rollback undoes the first."""
        snaps = self.snapshots()
        if not snaps:
            raise NotFoundError(f"no policy snapshots in {self.snapshot_dir}")
        if name is None:
            snap = snaps[-1]
        else:
            stem = name[:-5] if name.endswith(".json") else name
            if not _NAME.match(stem):
                raise InvalidInputError(f"invalid snapshot name {name!r}: use YYYYMMDD_HHMMSS (see 'memfold policy snapshots')")
            found = [s for s in snaps if s.name == stem]
            if not found:
                raise NotFoundError(f"no policy snapshot {stem!r}; the newest are: "
                                    f"{', '.join(s.name for s in snaps[-5:])}")
            snap = found[0]
        if snap.error:
            raise ConfigError(f"snapshot {snap.name} cannot be restored: {snap.error}")
        return replace(self._change(lambda cur: dict(snap.overrides)), restored=snap.name)

    def apply(self, update: Any) -> PolicyChange:
        """Change the overrides with ``update(current) -> new`` under the policy lock (snapshot first)."""
        return self._change(update)

    def _change(self, update: Any, unreadable_ok: bool = False) -> PolicyChange:
        with self.lock:
            try:
                before = self.overrides()
            except ConfigError as exc:
                if not unreadable_ok:
                    raise ConfigError(f"{exc}; fix it by hand or run 'memfold policy reset' (its text is then "
                                      "kept as a snapshot); nothing was changed") from None
                snap = self._snapshot_text(self.path.read_text(encoding="utf-8", errors="replace"))
                self.path.unlink(missing_ok=True)
                log.warning("unreadable %s removed; its text is kept in snapshot %s", self.path, snap.name)
                return PolicyChange({"_unreadable": str(exc)}, {}, snap)
            after = update(dict(before))
            validate(after, str(self.path))  # a bad key already in the file is named before anything is written
            if after == before:
                return PolicyChange(before, before)
            snap = self._snapshot(before)
            if after:
                atomic_write(self.path, json.dumps(after, ensure_ascii=False, indent=2, sort_keys=True) + "\n")
            else:
                self.path.unlink(missing_ok=True)
            self._prune()
        log.info("policy of %s changed: %s -> %s (snapshot %s)", self.folder.name, before, after, snap.name)
        return PolicyChange(before, after, snap)

    def _snapshot(self, overrides: dict[str, Any]) -> Snapshot:
        return self._snapshot_text(json.dumps(overrides, ensure_ascii=False, indent=2, sort_keys=True) + "\n",
                                   dict(overrides))

    def _snapshot_text(self, text: str, overrides: dict[str, Any] | None = None) -> Snapshot:
        """Save ``text`` as a new snapshot named by the time; a name taken within the same
        second gets ``_1``, ``_2``, … (the caller holds the policy lock)."""
        self.snapshot_dir.mkdir(parents=True, exist_ok=True)
        stamp = datetime.now().strftime("%Y%m%d_%H%M%S")
        taken = [_sort_key(p) for p in self.snapshot_dir.glob(f"{stamp}*.json")]
        n = max((i for s, i in taken if s == stamp), default=-1) + 1
        name = stamp if n == 0 else f"{stamp}_{n}"
        path = self.snapshot_dir / f"{name}.json"
        atomic_write(path, text)
        return Snapshot(name, path, overrides or {}, error="" if overrides is not None else "not valid overrides")

    def _prune(self) -> None:
        paths = sorted((p for p in self.snapshot_dir.glob("*.json") if _NAME.match(p.stem)), key=_sort_key)
        for old in paths[:-SNAPSHOTS_KEPT]:
            old.unlink(missing_ok=True)
