"""Writing memory files that people edit by hand while memfold writes them.

Editors take no lock. Three things can go wrong, and this module handles each:

* **A save lands between memfold's read and memfold's write.** memfold swaps its new file in
  with one atomic exchange of names, so the file it replaced comes back to it; when that is not
  the text it read, someone saved in between, and memfold merges that save with its change and
  writes again (a bounded number of times).
* **A save made from an older copy drops lines memfold wrote since** (an editor that read the
  file, then saved after memfold's write). Every file memfold writes ends in a revision marker
  ``<!-- memfold-rev N -->`` that the editor carries along; memfold remembers, per revision, a
  hash of every entry (``<user>/.edits/``). The next operation finds the revision the editor
  started from and makes a three-way merge at the level of bullets: memfold's additions,
  removals and updates since that revision are applied to the editor's text, the editor's own
  additions, removals and changes stand, and a bullet both changed keeps the editor's version.
* **A file read while an editor rewrites it in place** (truncate, then write) is short. A file
  memfold has marked is complete only when it ends with a line break and still has its marker
  (the last line); otherwise memfold re-reads until it is, or until it stops changing for a
  moment, so half a file is never taken for a file with lines deleted.
"""

from __future__ import annotations

import functools
import json
import os
import time
import zlib
from pathlib import Path
from typing import Any

from ..errors import InvalidInputError
from .bullet_merge import MARKER_BYTES, added_since, bullet_hashes, marked_utf8, merge3, split_marker
from .files import ChangedMeanwhile, atomic_swap

SETTLE_STEP = 0.02  # seconds between two reads of a file that looks half-written
SETTLE_QUIET = 1.0  # it counts as complete once unchanged for this long
SETTLE_MAX = 5.0  # and is taken as it is after this long
PUBLISH_TRIES = 8
KEEP_VERSIONS = 64
MARKER_TAIL = 256  # where the revision marker of a file memfold wrote is: its last line
LATEST_MAGIC = b"memfold-last"  # how the header of the latest version's file starts
LATEST_HEAD = 96  # its length in bytes (a fixed size: the text after it is rewritten in place)
FULL_EVERY = 32  # a version's whole list of bullet hashes at least every this many lines of the log


def read_settled(path: Path, expect_marker: bool) -> tuple[str | None, os.stat_result | None]:
    """The text of ``path`` once no one is in the middle of writing it, and its stat taken
    before the read (so a later change always shows as a different stat). (None, None) when
    there is no file. Looks half-written: no revision marker in a file memfold has marked (the
    marker is its last line), or else no final line break; such a file is read again until it is
    complete or stays the same for ``SETTLE_QUIET`` seconds (at most ``SETTLE_MAX``)."""

    def once() -> tuple[bytes | None, os.stat_result | None]:
        try:
            st = os.stat(path)
            return path.read_bytes(), st
        except FileNotFoundError:
            return None, None

    def complete(data: bytes) -> bool:
        if expect_marker:  # the marker is the last line memfold writes: a cut file has lost it
            return bool(MARKER_BYTES.search(b"\n" + data[-MARKER_TAIL:])) or \
                (len(data) > MARKER_TAIL and bool(MARKER_BYTES.search(data)))
        return data.endswith(b"\n")

    data, st = once()
    if data is not None and not complete(data):
        start = quiet = time.monotonic()
        while time.monotonic() - start < SETTLE_MAX:
            time.sleep(SETTLE_STEP)
            again, st2 = once()
            if again is not None and complete(again):
                data, st = again, st2
                break
            if again != data or st2 is None or st is None or \
                    (st2.st_mtime_ns, st2.st_size) != (st.st_mtime_ns, st.st_size):
                data, st, quiet = again, st2, time.monotonic()
                continue
            if time.monotonic() - quiet >= SETTLE_QUIET:
                break
    if data is None:
        return None, None
    try:
        return data.decode("utf-8"), st
    except UnicodeDecodeError as exc:
        raise InvalidInputError(f"{path} is not valid UTF-8: {exc}") from exc


class Versions:
    """What memfold remembers of the versions of one memory file: a log of bullet hashes per
    version it wrote or read (the last ``KEEP_VERSIONS``), and the full text of the latest version
    it wrote or accepted, with the revision counter. Kept in ``<user>/.edits/``; hashes only, no
    words, except the latest text (which is the file itself).

    A line of the log holds a version's bullet hashes whole (``bullets``), or what changed since
    the line before it (``add``, ``del``) when this process wrote that line and the log has not
    changed since; every ``FULL_EVERY`` lines one is whole again. So a write adds a line as long as
    its change, not as long as the file."""

    def __init__(self, folder: Path, rel: str):
        name = rel.replace("/", "_")
        self.folder = folder
        self.log = folder / f"{name}.log"
        # the latest version is kept in two copies written in turn, each in place: a write cut short
        # spoils only the copy it was writing, never the version before it
        self.slots = (folder / f"{name}.last", folder / f"{name}.last-b")
        # the latest version as last written or read: the copies' headers, its counter, its text, its copy
        self._cache: tuple[tuple[bytes, bytes], int, str, int] | None = None
        # the log as this process last wrote it: (its stat, the last line's hashes, lines since a whole one,
        # the length of the last whole line)
        self._tail: tuple[tuple[int, int, int], dict[str, str], int, int] | None = None

    def _load(self) -> tuple[int, str] | None:
        key = self.key()
        if key is None:
            return None
        if self._cache is None or self._cache[0] != key:
            got = None  # the copy with the highest sequence number whose text is whole
            for slot in sorted(range(2), key=lambda i: -_slot_seq(key[i])):
                read = _read_latest(self.slots[slot])
                if read is not None:
                    got = (key, read[1], read[2], slot)
                    break
            if got is None:
                return None
            self._cache = got
        return self._cache[1], self._cache[2]

    def key(self) -> tuple[bytes, bytes] | None:
        """What the two copies of the latest version hold now, in short (their headers: every write
        gives one a new header): another writer changes it."""
        heads = (_slot_key(self.slots[0]), _slot_key(self.slots[1]))
        return None if heads == (b"", b"") else heads

    def held_key(self) -> tuple[bytes, bytes] | None:
        """The same, as this object last wrote or read it."""
        return self._cache[0] if self._cache is not None else None

    def last(self) -> str | None:
        """The text memfold last wrote or accepted, exactly (marker included); None when there is
        none, or when the copy kept is not whole (a write of it cut short)."""
        got = self._load()
        return got[1] if got else None

    def next_rev(self) -> int:
        got = self._load()
        return got[0] + 1 if got else 1

    def reset(self) -> None:
        """Forget every version (the latest text is gone, so revisions start again)."""
        self.log.unlink(missing_ok=True)

    def record(self, text: str, *, own: bool, accept: bool, data: bytes | None = None) -> None:
        """Remember a version: one memfold wrote (``own``) or found on disk; ``accept`` makes it
        the latest, against which the next hand save is merged (``data``: its UTF-8 bytes, when made)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        rev = split_marker(text)[1]
        hashes = bullet_hashes(text)
        tail = self._tail if self._tail is not None and self._tail[0] == _stat_key(self.log) else None
        row: dict[str, Any] = {"rev": rev, "own": own}
        if tail is not None and tail[2] + 1 < FULL_EVERY:
            prev = tail[1]
            added = added_since(prev, text)  # bullets added to the version before: the change without a diff
            row["add"] = added if added is not None else {k: h for k, h in hashes.items() if prev.get(k) != h}
            row["del"] = [] if added is not None else [k for k in prev if k not in hashes]
            since, full_len = tail[2] + 1, tail[3]
        else:
            row["bullets"] = hashes
            since, full_len = 0, 0
        line = json.dumps(row, separators=(",", ":")) + "\n"
        full_len = full_len or len(line)
        with open(self.log, "a", encoding="utf-8") as fh:
            fh.write(line)
            fh.flush()
            size = fh.tell()
            st = os.fstat(fh.fileno())
        self._tail = ((st.st_ino, st.st_mtime_ns, st.st_size), hashes, since, full_len)
        if size > (KEEP_VERSIONS // FULL_EVERY + 4) * full_len + 2 * KEEP_VERSIONS * len(line) + 4096:
            self._prune()
        if accept:
            got = self._load()
            counter = max(got[0] if got else 0, rev if own and rev is not None else 0)
            self._write_latest(counter, text, data)

    def _write_latest(self, counter: int, text: str, data: bytes | None = None) -> None:
        """Keep ``text`` as the latest version, in the copy that does not hold the version before
        it, overwritten in place (a new file per write would be a second whole file created, freed
        and written to disk per add): the text first, its header last. The header names a sequence
        number, the text's length and checksum: a copy cut short by a crash (an older header before
        a newer text) reads as none, and the version before it, in the other copy, is the latest."""
        body = text.encode("utf-8") if data is None else data
        self._load()
        key = self.key() or (b"", b"")
        held = self._cache[3] if self._cache is not None and self._cache[0] == key else 1
        target = self.slots[1 - held]
        head = _latest_head(max(_slot_seq(key[0]), _slot_seq(key[1])) + 1, counter, body)
        try:
            fd = os.open(target, os.O_RDWR)
        except FileNotFoundError:
            fd = -1
        written = False
        if fd >= 0:
            try:
                if os.pread(fd, len(LATEST_MAGIC), 0) == LATEST_MAGIC:
                    os.pwrite(fd, body, LATEST_HEAD)
                    os.ftruncate(fd, LATEST_HEAD + len(body))
                    os.pwrite(fd, head, 0)
                    written = True
            finally:
                os.close(fd)
        if not written:  # no copy there yet, or one in the older form: a whole new file, renamed into place
            tmp = target.with_name(target.name + f".{os.getpid()}.tmp")
            with open(tmp, "wb") as fh:
                fh.write(head)
                fh.write(body)
            os.replace(tmp, target)
        new_key = (head, key[1]) if target == self.slots[0] else (key[0], head)
        self._cache = (new_key, counter, text, 1 - held)  # not read back on the next call

    def drop_older(self) -> None:
        """Write the latest version over the copy of the version before it too (deleted words then
        stay in neither copy)."""
        got = self._load()
        if got is not None and self._cache is not None:
            other = self.slots[1 - self._cache[3]]
            if other.exists():
                self._write_latest(got[0], got[1])

    def hold(self, text: str) -> None:
        """Make ``text`` the latest version without writing the file (it could not be written
        without overwriting a save made meanwhile); the next reconcile merges it into the file."""
        got = self._load()
        self.folder.mkdir(parents=True, exist_ok=True)
        self._write_latest(got[0] if got else 0, text)

    def _prune(self) -> None:
        """Keep the last ``KEEP_VERSIONS`` lines, from the whole line they start after."""
        lines = self.log.read_text(encoding="utf-8").splitlines(keepends=True)
        cut = max(0, len(lines) - KEEP_VERSIONS)
        while cut > 0 and '"bullets":' not in lines[cut]:
            cut -= 1
        tmp = self.log.with_name(self.log.name + f".{os.getpid()}.tmp")
        tmp.write_text("".join(lines[cut:]), encoding="utf-8")
        os.replace(tmp, self.log)
        self._tail = None

    def base_for(self, rev: int | None) -> dict[str, str] | None:
        """Bullet hashes of the version a hand save marked ``rev`` started from: the latest one
        carrying that marker (memfold's own, or a hand save of it memfold read later)."""
        if rev is None or not self.log.exists():
            return None
        head = f'{{"rev":{rev},'
        lines = self.log.read_text(encoding="utf-8").splitlines()
        for at in range(len(lines) - 1, -1, -1):
            if not lines[at].startswith(head):
                continue
            try:
                row: dict[str, Any] = json.loads(lines[at])
            except json.JSONDecodeError:
                continue
            if row.get("rev") == rev:
                return _hashes_at(lines, at)
        return None


class GuardedFile:
    """One memory file of one namespace, written so that hand edits made meanwhile are merged,
    not overwritten. Call under the namespace's lock (it keeps other memfold writers out; editors
    are handled by the merge)."""

    def __init__(self, space: Any, rel: str):  # space: UserSpace (not imported: it imports us)
        self.space = space
        self.rel = rel
        self.path: Path = space.path(rel)
        self.versions = Versions(space.dir / ".edits", rel)
        # the file as this object last wrote it (inode, time, size) and the latest version's file then
        self._wrote: tuple[tuple[int, int, int], tuple[bytes, bytes] | None] | None = None
        self._written: tuple[str, bytes] | None = None  # the text this object wrote last, and its bytes

    def read(self) -> tuple[str | None, os.stat_result | None]:
        """The file's text and its stat. When it is still the very file this object wrote last (same
        inode, time and size) and no other process recorded a version since, that text is not read
        again: an add costs the same whatever the file's size. (A save that slipped past the stat
        is still seen: every write compares the file it replaces with the text it started from.)"""
        if self._wrote is not None:
            try:
                st = os.stat(self.path)
            except FileNotFoundError:
                st = None
            if st is not None and (st.st_ino, st.st_mtime_ns, st.st_size) == self._wrote[0] and \
                    self.versions.key() == self._wrote[1]:
                last = self.versions.last()
                if last is not None:
                    return last, st
            self._wrote = None
        return read_settled(self.path, expect_marker=self.versions.last() is not None)

    def is_own(self, text: str | None) -> bool:
        return text is not None and text == self.versions.last()

    def adopt(self) -> tuple[str | None, tuple[int, int] | None]:
        """The file as it is now, with what memfold wrote since the revision a hand save started
        from put back (merged and written). Returns its text and the (mtime_ns, size) that text
        had, or (None, None) when there is no file."""
        text, st = self.read()
        if text is None or st is None:
            return None, None
        state = (st.st_mtime_ns, st.st_size)
        last = self.versions.last()
        if text == last:
            return text, state
        if last is None:  # nothing remembered (first write, or .edits/ removed): take the file as it is
            self.versions.reset()
            self.versions.record(text, own=False, accept=True)
            return text, state
        rev = split_marker(text)[1]
        if rev is not None and rev >= self.versions.next_rev():
            # a revision newer than any memfold finished recording: its own write, interrupted
            # (killed) before the latest text was kept; not a hand save from an older copy
            self.versions.record(text, own=True, accept=True)
            return text, state
        base = self.versions.base_for(rev)
        self.versions.record(text, own=False, accept=False)
        merged = None if base is None else merge3(base, last, text, self.space.language, self.rel.startswith("memory/"))
        if merged is None or merged == split_marker(text)[0]:
            # nothing of memfold's is missing, or no base (no marker, or one too old to remember):
            # the hand save stands as it is
            self.versions.hold(text)
            return text, state
        return self.publish(merged, expected=text)

    def publish(self, text: str, expected: str | None, backup_keep: int | None = None
                ) -> tuple[str, tuple[int, int] | None]:
        """Write ``text`` (its marker renewed) in place of ``expected``, the text it was made
        from. When the file turns out to have been saved by someone else in between, that save
        is merged with ``text`` and written again. Returns the text memfold now holds as the
        latest version and the (mtime_ns, size) it has on disk, None when the index or the file
        still lacks something: a save merged here (to index), or one made again before memfold
        could write the merge (the merge is kept and put into that save by the next reconcile)."""
        body = split_marker(text)[0]
        clean = True
        on_disk: os.stat_result | None = None  # after a first try: what we wrote, to see a later save before swapping
        marked = expected is not None and split_marker(expected)[1] is not None
        for _ in range(PUBLISH_TRIES):
            out, data = marked_utf8(body, self.versions.next_rev())
            made = None
            if backup_keep is not None and self.path.exists():
                made = self.space.backup(backup_keep)
                backup_keep = None
            try:
                old, st = atomic_swap(self.path, data, functools.partial(self._read_old, expected, marked),
                                      None if on_disk is None else functools.partial(_same_file, self.path, on_disk))
            except ChangedMeanwhile:
                break
            if made is not None:
                self.space.backup_taken(made)
            # remembered once written (a failed write changes nothing); other memfold processes
            # wait for the lock, so none looks for this revision before it is recorded
            self.versions.record(out, own=True, accept=True, data=data)
            self._wrote = ((st.st_ino, st.st_mtime_ns, st.st_size), self.versions.held_key())
            self._written = (out, data)
            if old is None or old == expected:
                return out, (st.st_mtime_ns, st.st_size) if clean else None
            # someone saved between our read and our write: merge their save with what we wrote
            clean = False
            body = self._merge_save(old, out, expected)
            expected, on_disk, marked = out, st, True
        # saved again before we could write the merge: keep the merge as memfold's latest version;
        # the next reconcile merges it into whatever is on disk then
        self.versions.hold(body)
        return body, None

    def _read_old(self, expected: str | None, marked: bool, path: Path) -> str:
        """The file a write replaced: ``expected`` itself when its bytes are the ones this object
        wrote as ``expected`` (no decoding, no comparing of texts), else read as any file is."""
        if expected is not None and self._written is not None and self._written[0] is expected:
            try:
                if path.read_bytes() == self._written[1]:
                    return expected
            except FileNotFoundError:
                pass
        return read_settled(path, expect_marker=marked)[0] or ""

    def _merge_save(self, theirs: str, ours: str, expected: str | None) -> str:
        """``theirs``, a hand save, with what ``ours`` changed since the version it started from
        (``expected``, what we read before, when its marker names none we remember)."""
        base = self.versions.base_for(split_marker(theirs)[1])
        self.versions.record(theirs, own=False, accept=False)
        if base is None:
            base = bullet_hashes(expected) if expected is not None else {}
        return merge3(base, ours, theirs, self.space.language, self.rel.startswith("memory/"))


def _latest_head(seq: int, counter: int, body: bytes) -> bytes:
    """The fixed-size first line of a copy of the latest version: its sequence number (the copy
    with the higher one is the newer), the revision counter, the length and checksum of the text
    after it, and a token of this write (a new header for every write, so a reader that holds the
    text of a header knows the copy still holds that text)."""
    line = LATEST_MAGIC + f" {seq} {counter} {len(body)} {zlib.crc32(body):08x} {os.urandom(6).hex()}".encode()
    return line.ljust(LATEST_HEAD - 1) + b"\n"


def _slot_key(path: Path) -> bytes:
    """The header of a copy of the latest version (b"" when there is none)."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(LATEST_HEAD)
            return head if head.startswith(LATEST_MAGIC) else _older_key(head, os.fstat(fh.fileno()))
    except FileNotFoundError:
        return b""


def _slot_seq(head: bytes) -> int:
    """The sequence number a copy's header names: 0 for the older form, -1 for no copy or a header
    that cannot be read."""
    if not head:
        return -1
    if not head.startswith(LATEST_MAGIC):
        return 0
    try:
        return int(head.split()[1])
    except (ValueError, IndexError):
        return -1


def _read_latest(path: Path) -> tuple[bytes, int, str] | None:
    """(header, counter, text) of a copy of the latest version; None when there is none, or when it
    is not whole: a write cut short, a header naming another length or checksum than the text's."""
    try:
        with open(path, "rb") as fh:
            st = os.fstat(fh.fileno())
            data = fh.read()
    except FileNotFoundError:
        return None
    try:
        if not data.startswith(LATEST_MAGIC):  # the older form: a counter line, then the text (written whole)
            first, _, rest = data.partition(b"\n")
            return _older_key(data[:LATEST_HEAD], st), int(first), rest.decode("utf-8")
        head, body = data[:LATEST_HEAD], data[LATEST_HEAD:]
        fields = head.split()
        counter, length, crc = int(fields[2]), int(fields[3]), int(fields[4], 16)
        if len(head) != LATEST_HEAD or len(body) != length or zlib.crc32(body) != crc:
            return None
        return head, counter, body.decode("utf-8")
    except (ValueError, IndexError, UnicodeDecodeError):
        return None


def _older_key(head: bytes, st: os.stat_result) -> bytes:
    """A key for a copy of the latest version of the older form (replaced whole by every write)."""
    return head + f" {st.st_ino} {st.st_mtime_ns} {st.st_size}".encode()


def _stat_key(path: Path) -> tuple[int, int, int] | None:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return st.st_ino, st.st_mtime_ns, st.st_size


def _hashes_at(lines: list[str], at: int) -> dict[str, str] | None:
    """The bullet hashes of the version of log line ``at``: the whole line before it, with the
    changes of the lines after that one applied; None when a line of that run cannot be read."""
    start = at
    rows: list[dict[str, Any]] = []
    while start >= 0:
        try:
            row = json.loads(lines[start])
        except json.JSONDecodeError:
            return None
        if not isinstance(row, dict):
            return None
        rows.append(row)
        if "bullets" in row:
            break
        start -= 1
    else:
        return None  # the whole line was pruned away
    hashes = dict(rows[-1].get("bullets") or {})
    for row in reversed(rows[:-1]):
        for key in row.get("del") or []:
            hashes.pop(key, None)
        hashes.update(row.get("add") or {})
    return hashes


def _same_file(path: Path, st: os.stat_result) -> bool:
    try:
        now = os.stat(path)
    except FileNotFoundError:
        return False
    return (now.st_ino, now.st_mtime_ns, now.st_size) == (st.st_ino, st.st_mtime_ns, st.st_size)
