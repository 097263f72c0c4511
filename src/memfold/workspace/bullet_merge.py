"""Memory files at the level of bullets: the revision marker memfold ends each file with, a
hash per bullet (matched by id, or by its words when typed without one), and the three-way
merge of a hand save with what memfold wrote since the version the editor started from."""

from __future__ import annotations

import functools
import hashlib
import re
import threading
from dataclasses import dataclass

from ..text import memory_markdown as md

MARKER_TEXT = "<!-- memfold-rev "  # how every revision marker line starts
_MARKER = re.compile(r"^<!-- memfold-rev (\d+) -->\s*$")
MARKER_BYTES = re.compile(rb"\n<!-- memfold-rev \d+ -->[ \t\r]*(\n|$)")

_SPLIT_LOCK = threading.Lock()
_SPLIT: list[tuple[str, tuple[str, int | None]]] = []  # the last few texts split (the very objects) and their parts


def split_marker(text: str) -> tuple[str, int | None]:
    """The text without its revision marker lines, and the revision the last one names."""
    with _SPLIT_LOCK:  # one write splits the same text (object) several times: the last few are remembered
        for seen, parts in _SPLIT:
            if seen is text:
                return parts
    parts = _split_marker(text)
    with _SPLIT_LOCK:
        _SPLIT[:] = [(text, parts), (parts[0], (parts[0], None))][: 1 if parts[1] is None else 2] + _SPLIT[:4]
    return parts


def _split_marker(text: str) -> tuple[str, int | None]:
    at = text.find(MARKER_TEXT)
    if at == -1:
        return text, None
    if (at == 0 or text[at - 1] == "\n") and text.find(MARKER_TEXT, at + 1) == -1:  # one marker line
        end = text.find("\n", at)
        m = _MARKER.match(text[at:] if end == -1 else text[at:end])
        if m:
            return text[:at] + ("" if end == -1 else text[end + 1:]), int(m.group(1))
    rev = None
    keep = []
    for line in text.split("\n"):
        m = _MARKER.match(line)
        if m:
            rev = int(m.group(1))
        else:
            keep.append(line)
    return "\n".join(keep), rev


def grown_unmarked(parent: str, child: str, added: str) -> None:
    """``child`` is ``parent`` with the text ``added`` put in between two of its lines: when
    ``parent`` is a text split here without a marker and ``added`` holds none, ``child`` holds none
    either, and splitting it later returns it as it is without searching the whole file for one."""
    if MARKER_TEXT in added:
        return
    with _SPLIT_LOCK:
        if not any(seen is parent and parts[1] is None and parts[0] is parent for seen, parts in _SPLIT):
            return
        _SPLIT[:] = [(child, (child, None))] + _SPLIT[:5]


def with_marker(body: str, rev: int) -> str:
    body = split_marker(body)[0]
    plain = body if body.endswith("\n") else body + "\n"
    out = f"{plain}<!-- memfold-rev {rev} -->\n"
    if plain is body:  # split again later (to record it, to write the next version): the very body comes back
        with _SPLIT_LOCK:
            _SPLIT[:] = [(out, (body, rev)), (body, (body, None))] + _SPLIT[:4]
    return out


def marked_utf8(body: str, rev: int) -> tuple[str, bytes]:
    """``with_marker(body, rev)`` and its UTF-8 bytes: the bytes remembered for ``body`` (made from
    the bytes of the text it grew from) with the marker's appended, else encoded whole, and then
    remembered for ``body`` (the next text grown from it is not encoded whole either)."""
    out = with_marker(body, rev)
    body = split_marker(body)[0]
    tail = out[len(body):].encode("utf-8")  # a line break where the body lacked one, and the marker line
    known = md.known_utf8(body)
    if known is not None:
        return out, known + tail
    data = out.encode("utf-8")
    md.remember_utf8(body, data[: len(data) - len(tail)])
    return out, data


def _hash(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=10).hexdigest()


@dataclass(frozen=True)
class _Bullet:
    key: str  # "i:<id>" for a bullet with an id, "r:<hash of its words>" for one typed without
    hash: str  # of its lines exactly as written
    lines: list[str]
    section: str
    parts: list[str]
    start: int
    end: int

    @property
    def content(self) -> str:
        return md._entry(self.parts, self.section, self.start, self.end).content


@functools.lru_cache(maxsize=6)  # a write parses the same text more than once; callers do not mutate the result
def _bullets(body: str) -> dict[str, _Bullet]:
    lines = body.split("\n")
    out: dict[str, _Bullet] = {}
    for section, start, end, parts in md._spans(lines):
        c = md._ID_COMMENT.search(parts[-1])
        b = _Bullet("", "", lines[start:end], section, parts, start, end)
        key = f"i:{c.group(1)}" if c else f"r:{_hash(b.content)}"
        n = 1
        while (key if n == 1 else f"{key}#{n}") in out:
            n += 1
        key = key if n == 1 else f"{key}#{n}"
        out[key] = _Bullet(key, _hash("\n".join(b.lines)), b.lines, section, parts, start, end)
    return out


_HASHES = md._Memo(4)  # body -> its bullet hashes


def bullet_hashes(text: str) -> dict[str, str]:
    """The hash of every bullet of ``text`` by its key. A text that ``insert_lines`` made from a
    recent one by adding whole bullets gets that one's hashes and the new bullets' (the other
    bullets read the same in both), not a parse of the whole file."""
    body = split_marker(text)[0]
    got: dict[str, str] | None = _HASHES.get(body)
    if got is None:
        got = _derived(body)
        if got is None:
            got = {k: b.hash for k, b in _bullets(body).items()}
        _HASHES.put(body, got)
    return dict(got)


def added_since(prev: dict[str, str], text: str) -> dict[str, str] | None:
    """The bullets ``text`` added to the text whose hashes are ``prev``, when ``insert_lines`` made
    it from that text by adding whole bullets (nothing else changed); else None."""
    made = md.inserted(split_marker(text)[0])
    if made is None:
        return None
    before: dict[str, str] | None = _HASHES.get(made[0])
    if before is None or before != prev:
        return None
    added = {k: b.hash for k, b in _bullets("\n".join(made[1])).items()}
    if any(k in before for k in added) or any(not k.startswith("i:") for k in added):
        return None
    return added


def _derived(body: str) -> dict[str, str] | None:
    made = md.inserted(body)
    if made is None:
        return None
    parent, new_lines = made
    before: dict[str, str] | None = _HASHES.get(parent)
    if before is None:
        return None
    added = {k: b.hash for k, b in _bullets("\n".join(new_lines)).items()}
    if any(k in before for k in added) or any(not k.startswith("i:") for k in added):
        return None  # a repeated id or a bullet without one: its key depends on the rest of the file
    return {**before, **added}


def merge3(base: dict[str, str], ours: str, theirs: str, lang: str, append_only: bool) -> str:
    """``theirs`` (a hand-saved text) with the changes memfold made from ``base`` (bullet hashes
    of the version the editor started from) to ``ours`` (what memfold wrote since) put back.

    Bullets are matched by id, bullets without an id by their words. A bullet memfold added is
    inserted unless theirs has it; one memfold removed or changed is removed or replaced only
    where theirs still has the base version (otherwise the editor's version stands); an id
    memfold gave a typed bullet goes onto that bullet if the editor left it unchanged."""
    ob, tb = _bullets(split_marker(ours)[0]), _bullets(split_marker(theirs)[0])
    lines = split_marker(theirs)[0].split("\n")
    replace: dict[int, tuple[int, list[str]]] = {}
    inserts: list[tuple[str, list[str]]] = []
    used: set[str] = set()
    stamped: set[str] = set()  # typed bullets of base that memfold gave an id to

    def put(t: _Bullet, new_lines: list[str]) -> None:
        used.add(t.key)
        replace[t.start] = (t.end, new_lines)

    for key, o in ob.items():
        b = base.get(key)
        if b == o.hash:
            continue
        t = tb.get(key)
        if b is not None:  # memfold changed it: replace where the editor left the base version
            if t is not None and t.hash == b and key not in used:
                put(t, o.lines)
            continue
        if t is not None:
            continue
        typed = f"r:{_hash(o.content)}"
        if key.startswith("i:") and typed in base and typed not in ob:  # memfold gave a typed bullet its id
            stamped.add(typed)
            tt = tb.get(typed)
            if tt is not None and tt.hash == base[typed] and typed not in used:
                put(tt, o.lines)
            continue
        tt = tb.get(typed)
        if key.startswith("i:") and tt is not None and typed not in base and typed not in used:
            put(tt, o.lines)  # the editor typed the same words: one bullet, with memfold's id
            continue
        inserts.append((o.section, o.lines))
    for key, b in base.items():
        if key in ob or key in stamped:
            continue
        t = tb.get(key)
        if t is not None and t.hash == b and key not in used:  # memfold removed it, the editor did not touch it
            put(t, [])
    for start in sorted(replace, reverse=True):
        end, new_lines = replace[start]
        lines[start:end] = new_lines
    text = "\n".join(lines)
    for section, new_lines in inserts:
        if append_only:
            text = text.rstrip("\n") + "\n" + "\n".join(new_lines) + "\n"
        else:
            text = md.insert_lines(text, section, new_lines, lang)
    return text
