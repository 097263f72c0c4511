"""A workspace root and the per-user folders in it (SPEC §2)."""

from __future__ import annotations

import os
import re
import shutil
import time
import unicodedata
from collections.abc import Collection
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path

from ..errors import InvalidInputError, NotFoundError
from ..models import FILE_LEARNINGS, FILE_MEMORY
from ..text import memory_markdown as md
from ..text.forgetting import QUOTE_MIN
from .files import FileLock, atomic_write

ARCHIVE_FILE = "archive.md"  # finished todos the tidy job took out of MEMORY.md, for people to read (not indexed)
_DAILY = re.compile(r"^memory/(\d{6})/(\d{8})\.md$")


_WINDOWS_RESERVED = {"con", "prn", "aux", "nul", "conin$", "conout$",
                     *(f"com{i}" for i in "123456789¹²³"), *(f"lpt{i}" for i in "123456789¹²³")}
USER_ID_MAX_CHARS = 128
USER_ID_MAX_BYTES = 255  # in UTF-8: the longest file name most file systems allow (at least 255 UTF-16 units too)
USER_ID_PUNCTUATION = "_.@-"
_PLAIN_ID = re.compile(rf"[A-Za-z0-9][A-Za-z0-9_.@-]{{0,{USER_ID_MAX_CHARS - 1}}}", re.ASCII)
_RULES = (f"a user id is 1-{USER_ID_MAX_CHARS} letters or digits of any script (小明, José, Ærø) and "
          f"{', '.join(repr(c) for c in USER_ID_PUNCTUATION)}, starting with a letter or digit")


def _id_char(c: str) -> bool:
    """A letter, digit or combining mark of any script (the marks of Devanagari, Thai… words), or
    one of the punctuation characters allowed between them."""
    return c in USER_ID_PUNCTUATION or unicodedata.category(c)[0] in "LNM"


def check_user_id(user_id: str, name: str = "user_id") -> str:
    """A namespace id, which is a folder name on every system: letters and digits of any script,
    '_', '-', '.', '@', starting with a letter or digit, at most ``USER_ID_MAX_CHARS`` characters
    and ``USER_ID_MAX_BYTES`` bytes of UTF-8; no '..', not ending with '.', not a reserved device
    name of Windows (CON, NUL, COM1…), no control or invisible formatting characters (bidi marks,
    zero-width joiners). Returns the id in Unicode normal form C, the form every folder name and
    index row uses (so "José" typed with a combining accent is the same user as "José")."""
    if not isinstance(user_id, str):
        raise InvalidInputError(f"{name} must be a string, got {type(user_id).__name__} {user_id!r}", field=name)
    if (_PLAIN_ID.fullmatch(user_id) and ".." not in user_id and user_id[-1] != "."
            and user_id.split(".")[0].lower() not in _WINDOWS_RESERVED):
        return user_id  # the common case (ASCII letters and digits), at regex speed: ids are checked at every call
    if not user_id.isascii() and any(0xD800 <= ord(c) <= 0xDFFF for c in user_id):
        raise InvalidInputError(f"invalid {name} {user_id!r}: it contains a lone surrogate, which is not valid text",
                                field=name)
    uid = user_id if user_id.isascii() else unicodedata.normalize("NFC", user_id)
    problem = None
    if not uid:
        problem = "it is empty"
    elif uid != uid.strip():
        problem = "it starts or ends with whitespace"
    elif any(unicodedata.category(c) == "Cc" for c in uid):
        problem = "it contains a control character"
    elif any(unicodedata.category(c) == "Cf" for c in uid):
        problem = "it contains an invisible formatting character (a bidi mark or zero-width character)"
    elif any(c in "/\\" for c in uid):
        problem = "it contains a path separator"
    elif ".." in uid:
        problem = "it contains '..'"
    elif uid.endswith("."):
        problem = "it ends with '.'"
    elif uid.split(".")[0].lower() in _WINDOWS_RESERVED:
        problem = f"{uid.split('.')[0]!r} is a reserved device name on Windows"
    elif len(uid) > USER_ID_MAX_CHARS:
        problem = f"it is {len(uid)} characters long; {_RULES}"
    elif len(uid.encode("utf-8")) > USER_ID_MAX_BYTES:
        problem = (f"it is {len(uid.encode('utf-8'))} bytes long in UTF-8, more than the {USER_ID_MAX_BYTES} "
                   "a folder name may have")
    elif unicodedata.category(uid[0])[0] not in "LN":
        problem = f"it starts with {uid[0]!r}; {_RULES}"
    else:
        bad = next((c for c in uid if not _id_char(c)), None)
        if bad is not None:
            problem = f"{bad!r} is not allowed; {_RULES}"
    if problem:
        raise InvalidInputError(f"invalid {name} {user_id!r}: {problem}", field=name)
    return uid


def daily_rel(day: date) -> str:
    return f"memory/{day:%Y%m}/{day:%Y%m%d}.md"


def daily_date(rel: str) -> date | None:
    m = _DAILY.match(rel)
    return datetime.strptime(m.group(2), "%Y%m%d").date() if m else None


@dataclass(frozen=True)
class FileStat:
    mtime_ns: int
    size: int


class UserSpace:
    """The folder of one namespace: MEMORY.md, learnings.md, daily notes, backups."""

    def __init__(self, root: Path, user_id: str, language: str = "en"):
        self.user_id = check_user_id(user_id)
        self.dir = root / self.user_id
        self.language = language
        self.lock = FileLock(self.dir / ".lock")
        self.backup_max_age_days = 0.0  # backups older than this are deleted (0: kept until pruned by count)

    # ---- paths -------------------------------------------------------------------
    def path(self, rel: str) -> Path:
        """Absolute path of a workspace-relative memory file; refuses anything outside the folder."""
        if not rel or rel.startswith(("/", "\\")) or "\\" in rel:
            raise InvalidInputError(f"invalid memory file path {rel!r}")
        if any(ord(c) < 32 for c in rel):  # a NUL byte cannot be in a path; no control character is in a memory file's
            raise InvalidInputError(f"memory file path {rel!r} has a control character")
        p = (self.dir / rel).resolve()
        base = self.dir.resolve()
        if base not in p.parents:
            raise InvalidInputError(f"path {rel!r} is outside the memory folder of user {self.user_id!r}")
        if rel not in (FILE_MEMORY, FILE_LEARNINGS) and not _DAILY.match(rel):
            raise InvalidInputError(
                f"{rel!r} is not a memory file; use MEMORY.md, learnings.md or memory/YYYYMM/YYYYMMDD.md"
            )
        return p

    @property
    def exists(self) -> bool:
        return (self.dir / FILE_MEMORY).exists() or (self.dir / FILE_LEARNINGS).exists()

    def memory_files(self) -> list[str]:
        """Relative paths of all memory files that exist, MEMORY.md first."""
        base = os.fspath(self.dir)  # plain strings: every search checks these (engine/storage/store.py, sync)
        out = [rel for rel in (FILE_MEMORY, FILE_LEARNINGS) if os.path.exists(os.path.join(base, rel))]
        mem = self.dir / "memory"
        if os.path.isdir(os.path.join(base, "memory")):
            for p in sorted(mem.glob("[0-9]" * 6 + "/" + "[0-9]" * 8 + ".md")):
                out.append(p.relative_to(self.dir).as_posix())
        return out

    def stat(self, rel: str) -> FileStat | None:
        try:
            st = (self.dir / rel).stat()
        except FileNotFoundError:
            return None
        return FileStat(st.st_mtime_ns, st.st_size)

    # ---- reading and writing -------------------------------------------------------
    def init(self, language: str | None = None) -> bool:
        """Create MEMORY.md and learnings.md from the templates; False when they existed."""
        lang = language or self.language
        created = False
        with self.lock:
            for rel, template in ((FILE_MEMORY, md.MEMORY_TEMPLATE), (FILE_LEARNINGS, md.LEARNINGS_TEMPLATE)):
                p = self.dir / rel
                if not p.exists():
                    atomic_write(p, template[lang])
                    created = True
        return created

    def read(self, rel: str) -> str:
        p = self.path(rel)
        try:
            return p.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise NotFoundError(f"{rel} does not exist for user {self.user_id!r}") from None
        except UnicodeDecodeError as exc:
            raise InvalidInputError(f"{p} is not valid UTF-8: {exc}") from exc
        except PermissionError:
            raise InvalidInputError(f"{p} cannot be read: permission denied") from None
        except IsADirectoryError:
            raise InvalidInputError(f"{p} is a folder, not a memory file") from None

    def read_or_template(self, rel: str) -> str:
        p = self.path(rel)
        if p.exists():
            return self.read(rel)
        if rel == FILE_MEMORY:
            return md.MEMORY_TEMPLATE[self.language]
        if rel == FILE_LEARNINGS:
            return md.LEARNINGS_TEMPLATE[self.language]
        d = daily_date(rel)
        return md.daily_header(d.isoformat() if d else rel)

    def write(self, rel: str, text: str, *, backup: bool, keep: int = 20) -> None:
        """Atomically replace a memory file; with ``backup`` the old MEMORY.md is copied first."""
        p = self.path(rel)
        with self.lock:
            made = self.backup(keep) if backup and rel == FILE_MEMORY and p.exists() else None
            atomic_write(p, text if text.endswith("\n") else text + "\n")
            if made is not None:
                self.backup_taken(made)

    def keep_old(self, rel: str) -> Path | None:
        """Before a write that may have to be undone: a hard link to the file as it is (no data is
        copied, so it works on a full disk), or None when the file does not exist."""
        p = self.path(rel)
        if not p.exists():
            return None
        old = p.with_name(f".{p.name}.undo")
        old.unlink(missing_ok=True)
        os.link(p, old)
        return old

    def undo(self, rel: str, kept: Path | None) -> None:
        """Put back the file ``keep_old`` kept (a rename: no space needed), or remove a new file."""
        p = self.path(rel)
        if kept is None:
            p.unlink(missing_ok=True)
        else:
            if rel == FILE_MEMORY:  # the backup of the undone write is this very file (a second name of it)
                self._drop_backups_of(kept)
            os.replace(kept, p)
            os.utime(p)  # a new time: the next sync compares the file with the index, whatever it holds

    def backup(self, keep: int) -> Path:
        """Keep MEMORY.md as it is now in ``backups/`` before it is replaced: a second name of the file
        (a hard link: nothing is copied, so a backup costs the same whatever the file's size). Every
        write of MEMORY.md puts a new file in its place (atomically, by rename), so the backup keeps
        the replaced version unchanged; where links are refused the file is copied."""
        src = self.dir / FILE_MEMORY
        bdir = self.dir / "backups"
        try:
            bdir.mkdir(parents=True, exist_ok=True)
        except (FileExistsError, NotADirectoryError):
            raise InvalidInputError(f"cannot back up MEMORY.md: {bdir} is not a folder; move that file away "
                                    "(nothing was changed)") from None
        held = self.backups()
        for b in reversed(held):  # a write killed after its backup: this version is kept already
            if _same_inode(b, src):
                return b
        stamp = datetime.now().strftime("%Y%m%d_%H%M%S")
        dest = bdir / f"{stamp}_MEMORY.md"
        n = 1
        while dest.exists():
            dest = bdir / f"{stamp}_{n}_MEMORY.md"
            n += 1
        try:
            os.link(src, dest)
        except OSError:  # a file system without hard links: a copy made by the kernel, renamed into place
            tmp = bdir / f".{dest.name}.{os.getpid()}.tmp"
            try:
                shutil.copyfile(src, tmp)
                os.replace(tmp, dest)
            finally:
                tmp.unlink(missing_ok=True)
        self.prune_backups(keep, held + [dest])
        return dest

    def backup_taken(self, backup: Path) -> None:
        """After MEMORY.md was replaced: the backup's time becomes the time it was taken (as a second
        name of the replaced file it still had that version's time), for its place among the backups
        and its age."""
        if not _same_inode(backup, self.dir / FILE_MEMORY):
            try:
                os.utime(backup)
            except FileNotFoundError:
                pass

    def _drop_backups_of(self, file: Path) -> None:
        """Remove the backups that are other names of ``file`` (put back in place of MEMORY.md, it
        would change with them)."""
        for b in self.backups():
            if _same_inode(b, file):
                b.unlink(missing_ok=True)

    def backups(self) -> list[Path]:
        bdir = self.dir / "backups"
        return sorted(bdir.glob("*_MEMORY.md"), key=lambda p: p.stat().st_mtime_ns) if bdir.is_dir() else []

    def prune_backups(self, keep: int, held: list[Path] | None = None) -> None:
        """Keep the newest ``keep`` backups, none older than ``backup_max_age_days`` (``held``: the
        backups, oldest first, when the caller has just listed them)."""
        fresh = held is not None  # the last one was just taken: too new to expire, whatever its time says
        held = self.backups() if held is None else held
        for old in held[:-keep] if keep > 0 else []:
            old.unlink(missing_ok=True)
        if self.backup_max_age_days > 0:
            oldest = time.time() - self.backup_max_age_days * 86400
            for old in (held[-keep:] if keep > 0 else held)[: -1 if fresh else None]:
                try:
                    if old.stat().st_mtime < oldest:
                        old.unlink(missing_ok=True)
                except FileNotFoundError:
                    pass

    # ---- deleted means deleted -----------------------------------------------------
    def purge_backups(self, ids: Collection[str], texts: Collection[str]) -> tuple[int, int]:
        """Take deleted memories out of every backup: their bullets (by id, or by identical words)
        are removed and the backup rewritten with its old time; a backup that still holds one of
        ``texts`` (of ``QUOTE_MIN`` characters or more) somewhere MEMORY.md itself does not is deleted.
        Returns (rewritten, deleted)."""
        texts = {t for t in texts if t}
        live_path = self.dir / FILE_MEMORY
        live = live_path.read_text(encoding="utf-8") if live_path.exists() else ""
        rewritten = dropped = 0
        with self.lock:
            for p in self.backups():
                try:
                    text = p.read_text(encoding="utf-8")
                except (FileNotFoundError, UnicodeDecodeError):
                    continue
                new = text
                for e in sorted(md.parse(text), key=lambda e: e.start, reverse=True):
                    if e.id in ids or e.content in texts:
                        new = md.replace_entry(new, e, [])
                if any(len(t) >= QUOTE_MIN and t in new and t not in live for t in texts):
                    p.unlink(missing_ok=True)
                    dropped += 1
                elif new != text:
                    st = p.stat()
                    atomic_write(p, new)
                    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))  # its age and place in the order stay
                    rewritten += 1
            arch = self.dir / ARCHIVE_FILE  # the archive's lines of them go too
            if arch.exists():
                text = arch.read_text(encoding="utf-8")
                lines = [ln for ln in text.split("\n")
                         if not any(f"mf:{i} " in ln for i in ids) and not any(t in ln for t in texts)]
                if "\n".join(lines) != text:
                    atomic_write(arch, "\n".join(lines))
                    rewritten += 1
        return rewritten, dropped

    def remove_leftovers(self) -> int:
        """Delete temp files of atomic writes that never finished (a crash mid-write), in the user's
        folder, its backups and daily-note folders. Every write there holds the user lock, so under
        it no temp file belongs to a live writer."""
        if not self.dir.is_dir():
            return 0
        n = 0
        with self.lock:
            for folder in [self.dir, self.dir / "backups", *sorted((self.dir / "memory").glob("[0-9]" * 6))]:
                for tmp in folder.glob(".*.tmp") if folder.is_dir() else []:
                    tmp.unlink(missing_ok=True)
                    n += 1
        return n


_USER_FILES = (FILE_MEMORY, FILE_LEARNINGS, "memory", "policy_overrides.json", "policy_snapshots")


def _valid_user_dir(name: str) -> bool:
    """A folder whose name is a user id as memfold writes it (in normal form C)."""
    try:
        return check_user_id(name) == name
    except InvalidInputError:
        return False


class Workspace:
    """The root folder: config.toml, index.db and one folder per user."""

    def __init__(self, root: Path, language: str = "en"):
        self.root = root
        self.language = language
        self._users: dict[str, UserSpace] = {}

    def user(self, user_id: str) -> UserSpace:
        us = self._users.get(user_id)
        if us is None:
            user_id = check_user_id(user_id)
            us = self._users.get(user_id) or UserSpace(self.root, user_id, self.language)
            self._users[user_id] = us
        return us

    @property
    def exists(self) -> bool:
        """There is a workspace here: the root folder holds an index, a settings file or a user's
        folder with memory or policy files in it (what ``memfold init`` and every write leave behind)."""
        r = self.root
        if not r.is_dir():
            return False
        if any((r / name).exists() for name in ("index.db", "config.toml", "config.json")):
            return True
        return any(p.is_dir() and _valid_user_dir(p.name) and any((p / f).exists() for f in _USER_FILES)
                   for p in r.iterdir())

    def user_ids(self) -> list[str]:
        if not self.root.is_dir():
            return []
        return sorted(
            p.name for p in self.root.iterdir()
            if p.is_dir() and _valid_user_dir(p.name) and ((p / FILE_MEMORY).exists() or (p / FILE_LEARNINGS).exists()
                                                      or (p / "memory").is_dir())
        )


def _same_inode(a: Path, b: Path) -> bool:
    try:
        sa, sb = os.stat(a), os.stat(b)
    except FileNotFoundError:
        return False
    return (sa.st_dev, sa.st_ino) == (sb.st_dev, sb.st_ino)
