"""Files as an agent sees them: the text edit of seed 002 (``old_text`` → ``new_text``, an exact
and unique match in the caller's own ``MEMORY.md``, ``learnings.md`` or a daily note) and reading
a memory file or one of its sections.

An edit goes the way a hand edit goes (``UserStore.edit_text``): ``MEMORY.md`` is backed up, the
file written, and the changed lines indexed with an ``edit`` (or ``add``/``delete``) history entry
whose author is the tool. memfold's id comments (``<!-- mf:… -->``) and revision marker cannot be
forged or cut in half by an edit; removing a whole line with its comment deletes that memory."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from ...errors import InvalidInputError, NotFoundError, PathRefusedError, TextMatchError
from ...limits import MAX_CONTENT_CHARS, check_length
from ...models import FILE_MEMORY
from ...text.capacity import cap_text
from ...workspace.editsafe import split_marker
from ...workspace.userspace import UserSpace
from ..storage.guard import screen_text
from ..storage.store import UserStore

_ID_COMMENT = re.compile(r"[ \t]*<!--\s*mf:[^>]*?-->")
_FORGED = re.compile(r"<!--\s*(mf:|memfold-rev)")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*$", re.M)


@dataclass(frozen=True)
class TextEditResult:
    """What a text edit changed: the file and the ids of the memories added, updated and removed."""

    path: str
    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    redacted: bool = False  # a secret in new_text was replaced by [redacted]


@dataclass(frozen=True)
class FileView:
    """A memory file (or one section) as shown to an agent: no id comments, no revision marker."""

    path: str
    text: str
    exists: bool
    section: str | None = None
    truncated: bool = False
    sections: list[str] = field(default_factory=list)


def checked_path(space: UserSpace, path: object) -> str:
    """``path`` as a memory file of the user's own folder, or ``PathRefusedError`` saying why not
    (absolute, ``..``, a symlink leading out of the folder, not a memory file)."""
    if not isinstance(path, str) or not path.strip():
        raise PathRefusedError(f"path must be a non-empty string, got {path!r}", field="path")
    rel = path.strip()
    if any(ord(c) < 32 for c in rel):
        raise PathRefusedError(f"path {path!r} is refused: it has a control character (a memory file's path has none)")
    if rel.startswith(("/", "\\", "~")) or "\\" in rel or re.match(r"^[A-Za-z]:", rel):
        raise PathRefusedError(f"path {path!r} is refused: give a path inside your memory folder, "
                               "e.g. MEMORY.md, learnings.md or memory/YYYYMM/YYYYMMDD.md")
    parts = PurePosixPath(rel).parts
    if ".." in parts:
        raise PathRefusedError(f"path {path!r} is refused: '..' leads out of your memory folder")
    rel = "/".join(p for p in parts if p != ".")
    if rel == f"memory/{FILE_MEMORY}":  # where seed 001's agents keep it
        rel = FILE_MEMORY
    try:
        space.path(rel)  # resolves symlinks: one leading out of the folder is refused here
    except InvalidInputError as exc:
        raise PathRefusedError(f"path {path!r} is refused: {exc}") from None
    return rel


def edit_text(store: UserStore, path: str, old_text: str, new_text: str, author: str) -> TextEditResult:
    """Replace the one occurrence of ``old_text`` in a memory file by ``new_text``."""
    rel = checked_path(store.space, path)
    if not isinstance(old_text, str) or not isinstance(new_text, str):
        raise InvalidInputError("old_text and new_text must be strings")
    if not old_text:
        raise InvalidInputError("old_text must not be empty: copy the exact text to replace from the file", field="old_text")
    check_length("old_text", old_text, MAX_CONTENT_CHARS, "replace a shorter piece", "old_text")
    check_length("new_text", new_text, MAX_CONTENT_CHARS, "write a shorter text", "new_text")
    if old_text == new_text:
        raise InvalidInputError("old_text and new_text are the same; nothing to change")
    if _FORGED.search(new_text):
        raise InvalidInputError("new_text must not contain memfold's id comments (<!-- mf:... -->) or revision marker",
                                field="new_text")
    screened = screen_text(new_text, "new_text") if new_text.strip() else None
    new = screened.text if screened is not None else new_text

    def change(body: str) -> str:
        comments = [(m.start(), m.end()) for m in _ID_COMMENT.finditer(body)]
        hits = [i for i in _occurrences(body, old_text)  # words inside an id comment are not the file's text
                if not any(a <= i and i + len(old_text) <= b for a, b in comments)]
        if not hits:
            hint = (" (it spans memfold's hidden id comments: edit one line at a time)"
                    if old_text in _ID_COMMENT.sub("", body) else "; read the file again and copy the text exactly")
            raise TextMatchError(f"old_text was not found in {rel}{hint}; nothing was changed", "no_match")
        if len(hits) > 1:
            raise TextMatchError(f"old_text occurs {len(hits)} times in {rel}; include more of the surrounding text so "
                                 "it occurs once; nothing was changed", "ambiguous_match")
        start, end = hits[0], hits[0] + len(old_text)
        for a, b in comments:
            if a < end and start < b and not (start <= a and b <= end):
                raise InvalidInputError("old_text cuts one of memfold's hidden id comments in half; edit the words "
                                        "before it, or replace the whole line; nothing was changed")
        return body[:start] + new + body[end:]

    store.sync()  # a hand edit made before this call is indexed first, not counted as this edit's
    before = store.index.content_hashes(store.user_id, rel)
    store.edit_text(rel, change, by=author)
    after = store.index.content_hashes(store.user_id, rel)
    return TextEditResult(path=rel, added=[i for i in after if i not in before],
                          updated=[i for i in after if i in before and before[i] != after[i]],
                          removed=[i for i in before if i not in after],
                          redacted=bool(screened is not None and screened.redacted))


def read_view(store: UserStore, path: str | None, section: str | None, char_limit: int) -> FileView:
    """The file (``MEMORY.md`` by default) or one section of it, capped at ``char_limit`` characters."""
    rel = checked_path(store.space, FILE_MEMORY if path is None else path)
    try:
        raw = store.space.read(rel)
    except NotFoundError:
        return FileView(path=rel, text="", exists=False, section=section)
    text = _ID_COMMENT.sub("", split_marker(raw)[0])
    headings = [(m.start(), len(m.group(1)), m.group(2)) for m in _HEADING.finditer(text)]
    names = [h[2] for h in headings]
    if section is not None:
        want = _norm(section)
        found = next((i for i, h in enumerate(headings) if _norm(h[2]) == want), None)
        if found is None:
            raise NotFoundError(f"{rel} has no section {section!r}; its sections: {', '.join(names) or '(none)'}")
        pos, level, _ = headings[found]
        end = next((h[0] for h in headings[found + 1:] if h[1] <= level), len(text))
        text = text[pos:end]
    capped = cap_text(text.strip() + "\n", char_limit, store.space.language)
    return FileView(path=rel, text=capped.text, exists=True, section=section, truncated=capped.truncated,
                    sections=names)


def _occurrences(text: str, sub: str) -> list[int]:
    out, i = [], text.find(sub)
    while i >= 0:
        out.append(i)
        i = text.find(sub, i + 1)
    return out


def _norm(heading: str) -> str:
    """A heading compared without '#', emoji, punctuation and case."""
    return "".join(ch for ch in heading.lstrip("#").casefold() if ch.isalnum())
