"""Parsing and rendering of memory files (MEMORY.md, learnings.md, daily notes).

An entry is one dated bullet, optionally continued on lines indented by two spaces, that
ends in an invisible id comment carrying the fields the Markdown cannot show::

    - 2026-11-22: I prefer oat milk <!-- mf:k3v9q2m1x7 {"type":"pattern","importance":0.8} -->

Bullets without a comment (typed by a person) are entries too; they get an id on the
next write. Everything that is not an entry is kept byte for byte.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from ..models import MemoryType

SECTION_OF_TYPE = {
    MemoryType.EVENT: "events",
    MemoryType.PREFERENCE: "preferences",
    MemoryType.PATTERN: "preferences",
    MemoryType.TODO: "todos",
    MemoryType.FACT: "notes",
    MemoryType.NOTE: "notes",
    MemoryType.SKILL: "skills",
}
DEFAULT_TYPE_OF_SECTION = {
    "events": MemoryType.EVENT,
    "preferences": MemoryType.PREFERENCE,
    "todos": MemoryType.TODO,
    "notes": MemoryType.NOTE,
    "skills": MemoryType.SKILL,
}
HEADINGS = {
    "zh": {"events": "重要事件", "preferences": "偏好与习惯", "todos": "待办与承诺", "notes": "笔记", "skills": "技能"},
    "en": {"events": "Important Events", "preferences": "Preferences & Habits", "todos": "Todos & Commitments",
           "notes": "Notes", "skills": "Skills"},
}
_HEADING_TO_SECTION = {h.lower(): key for lang in HEADINGS.values() for key, h in lang.items()}

MEMORY_TEMPLATE = {
    "zh": """# 🧠 记忆

<!-- 重要的事情记在这里。这是你的长期记忆。 -->

## 重要事件

<!-- 值得记住的事情 -->

## 偏好与习惯

<!-- 从对话中观察到的主人的偏好 -->

## 待办与承诺

<!-- 答应过主人的事情、未完成的任务 -->

## 笔记

<!-- 其他值得记住的信息 -->

---

_记住重要的事，忘掉不重要的。定期整理，保持精炼。_
""",
    "en": """# 🧠 Memory

<!-- Important things go here. This is your long-term memory. -->

## Important Events

<!-- Things worth remembering -->

## Preferences & Habits

<!-- The user's preferences observed in conversation -->

## Todos & Commitments

<!-- Promises made to the user, unfinished tasks -->

## Notes

<!-- Other information worth remembering -->

---

_Remember what matters, forget what doesn't. Tidy regularly, keep it concise._
""",
}
LEARNINGS_TEMPLATE = {
    "zh": "# 📘 经验\n\n<!-- 成功的工具调用流程、技能与教训。 -->\n\n## 技能\n\n<!-- 验证过的做法 -->\n",
    "en": "# 📘 Learnings\n\n<!-- Proven tool-call workflows, skills and lessons. -->\n\n## Skills\n\n<!-- Approaches that worked -->\n",
}

_BULLET = re.compile(r"^[-*] (?!\[[ xX]\] ?$)(.*)$")
_DATE = re.compile(r"^(\d{4}-\d{2}-\d{2})(?:[ T](\d{2}:\d{2}))?\s*[:：]\s*")
_ID_COMMENT = re.compile(r"\s*<!--\s*mf:([A-Za-z0-9_-]{4,40})(?:\s+(\{.*\}))?\s*-->\s*$")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*$")


@dataclass(frozen=True)
class Entry:
    """One bullet of a memory file. ``start``/``end`` are line indexes (end exclusive)."""

    id: str | None
    section: str  # events | preferences | todos | notes | skills | other heading text
    date: str | None
    content: str
    meta: dict[str, Any] = field(default_factory=dict)
    start: int = 0
    end: int = 0

    @property
    def memory_type(self) -> MemoryType:
        if "type" in self.meta:
            try:
                return MemoryType.parse(self.meta["type"])
            except Exception:  # noqa: BLE001 - a hand-typed bad type falls back to the section's
                pass
        return DEFAULT_TYPE_OF_SECTION.get(self.section, MemoryType.NOTE)


_HEADING_LINE = re.compile(r"^#{1,2} (.+?)\s*$", re.M)
_TITLE_LANGUAGE = {"# 🧠 记忆": "zh", "# 🧠 memory": "en", "# 📘 经验": "zh", "# 📘 learnings": "en"}


def template_language(text: str) -> str | None:
    """The language ('en' | 'zh') of the template a memory file was made from, read from its title and
    section headings (the ones it still has after hand edits); None when none of them is left."""
    votes = {"en": 0, "zh": 0}
    for m in _HEADING_LINE.finditer(text):
        line = m.group(0).strip().lower()
        lang = _TITLE_LANGUAGE.get(line)
        if lang is None and line.startswith("## "):
            lang = next((code for code, heads in HEADINGS.items()
                         if line[3:].strip() in (h.lower() for h in heads.values())), None)
        if lang:
            votes[lang] += 1
    best = max(votes, key=lambda k: votes[k])
    return best if votes[best] and votes["en"] != votes["zh"] else None


def section_key(heading: str) -> str:
    return _HEADING_TO_SECTION.get(heading.strip().lower(), heading.strip())


def _spans(lines: list[str]):  # type: ignore[no-untyped-def]
    """Yield (section, start, end, parts) for every bullet entry of a file's lines."""
    section = "notes"
    in_comment = False
    i = 0
    while i < len(lines):
        line = lines[i]
        if in_comment:
            in_comment = "-->" not in line
            i += 1
            continue
        if line.lstrip().startswith("<!--") and "-->" not in line:
            in_comment = True
            i += 1
            continue
        h = _HEADING.match(line)
        if h and len(h.group(1)) >= 2:
            section = section_key(h.group(2))
            i += 1
            continue
        m = _BULLET.match(line)
        if not m:
            i += 1
            continue
        start = i
        parts = [m.group(1)]
        i += 1
        while i < len(lines) and lines[i].startswith("  ") and lines[i].strip():
            parts.append(lines[i][2:])
            i += 1
        yield section, start, i, parts


def parse(text: str) -> list[Entry]:
    """Every entry of a memory file: its bullets, and the paragraphs written by hand between them
    (text split at headings, bullets and blank lines), in file order."""
    lines = text.split("\n")
    entries = [_entry(parts, section, start, end) for section, start, end, parts in _spans(lines)]
    entries += [_paragraph(parts, section, start, end) for section, start, end, parts in _paragraph_spans(lines)]
    return sorted(entries, key=lambda e: e.start)


_TEMPLATE_TEXT = {ln.strip() for t in (*MEMORY_TEMPLATE.values(), *LEARNINGS_TEMPLATE.values())
                  for ln in t.split("\n") if ln.strip() and not ln.startswith(("#", "<!--", "---"))}
_RULE = re.compile(r"^\s*(?:-{3,}|\*{3,}|_{3,})\s*$")
_DAY_HEADING = re.compile(r"^(\d{4}-\d{2}-\d{2})\b")


def _paragraph_spans(lines: list[str]):  # type: ignore[no-untyped-def]
    """Yield (section, start, end, lines) for every paragraph written by hand: a run of text lines
    that are not a heading, a bullet (with its continuation lines), a comment or a rule. The
    templates' own text (their motto) is not memory."""
    section, in_comment = "notes", False
    start: int | None = None
    para: list[str] = []
    i = 0

    def flush(end: int):  # type: ignore[no-untyped-def]
        nonlocal start, para
        out = (section, start, end, para) if start is not None and "\n".join(para) not in _TEMPLATE_TEXT else None
        start, para = None, []
        return out

    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        if in_comment:
            in_comment = "-->" not in line
            i += 1
            continue
        is_text = bool(stripped) and not stripped.startswith("<!--") and not _HEADING.match(line) \
            and not _BULLET.match(line) and not _RULE.match(line)
        if not is_text:
            got = flush(i)
            if got:
                yield got
            if stripped.startswith("<!--") and "-->" not in stripped:
                in_comment = True
            h = _HEADING.match(line)
            if h and len(h.group(1)) >= 2:
                section = section_key(h.group(2))
            elif _BULLET.match(line):  # skip the bullet's continuation lines
                i += 1
                while i < len(lines) and lines[i].startswith("  ") and lines[i].strip():
                    i += 1
                continue
            i += 1
            continue
        if start is None:
            start = i
        para.append(line.strip())
        i += 1
    got = flush(i)
    if got:
        yield got


def paragraph_id(section: str, content: str) -> str:
    """The id of a hand-written paragraph: derived from its words (no id is written into the file,
    so the layout stays as written; a changed paragraph is a new memory)."""
    return "p" + hashlib.blake2b(f"{section}\n{content}".encode("utf-8"), digest_size=6).hexdigest()[:11]


def _paragraph(parts: list[str], section: str, start: int, end: int) -> Entry:
    content = "\n".join(parts).strip()
    date = None
    d = _DATE.match(content)
    if d:
        date, content = d.group(1), content[d.end():].strip()
    else:
        day = _DAY_HEADING.match(section)  # the seed-001 layout: "## 2026-11-02" then the day's text
        date = day.group(1) if day else None
    return Entry(id=paragraph_id(section, content), section=section, date=date, content=content, start=start, end=end)


def _entry(parts: list[str], section: str, start: int, end: int) -> Entry:
    last = parts[-1]
    mid, meta = None, {}
    c = _ID_COMMENT.search(last)
    if c:
        mid = c.group(1)
        if c.group(2):
            try:
                loaded = json.loads(c.group(2))
                meta = loaded if isinstance(loaded, dict) else {}
            except json.JSONDecodeError:
                meta = {}
        parts = parts[:-1] + [last[: c.start()]]
    first = parts[0]
    date = None
    d = _DATE.match(first)
    if d:
        date = d.group(1)
        first = first[d.end():]
    content = "\n".join([first] + parts[1:]).strip()
    return Entry(id=mid, section=section, date=date, content=content, meta=meta, start=start, end=end)


def clean_content(content: str) -> str:
    """Content as it can be stored in a bullet: trimmed lines, no comment delimiters."""
    content = content.replace("\r\n", "\n").replace("\r", "\n").replace("<!--", "<! --").replace("-->", "-- >")
    lines = [ln.rstrip() for ln in content.strip().split("\n")]
    return "\n".join(ln for ln in lines if ln.strip())


def render(entry_id: str, date: str, content: str, meta: dict[str, Any], lang: str = "en") -> list[str]:
    sep = "：" if lang == "zh" else ": "
    lines = clean_content(content).split("\n")
    comment = f"<!-- mf:{entry_id}"
    if meta:
        comment += " " + json.dumps(meta, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    comment += " -->"
    out = [f"- {date}{sep}{lines[0]}"] + [f"  {ln}" for ln in lines[1:]]
    out[-1] = f"{out[-1]} {comment}"
    return out


class _Memo:
    """A few results about recent file texts, keyed by the text: one write parses the same text
    more than once, and the next write starts from the text the last one made. Looked up by the
    text's length and its end (hashing a whole large file on every lookup would cost what the memo
    saves), then the text itself compared (the very object, as a rule)."""

    def __init__(self, size: int):
        self.size = size
        self._items: OrderedDict[tuple[int, str], tuple[str, Any]] = OrderedDict()
        self._lock = threading.Lock()

    @staticmethod
    def _key(text: str) -> tuple[int, str]:
        return len(text), text[-_MEMO_TAIL:]

    def get(self, text: str) -> Any:
        key = self._key(text)
        with self._lock:
            got = self._items.get(key)
            if got is None or (got[0] is not text and got[0] != text):
                return None
            self._items.move_to_end(key)
            return got[1]

    def put(self, text: str, value: Any) -> None:
        key = self._key(text)
        with self._lock:
            self._items[key] = (text, value)
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)


_MEMO_TAIL = 256  # characters of a text's end in its memo key

_LAST_ENDS = _Memo(8)  # text -> {section: (the line after its last bullet, where that line starts: character, byte)}
_UTF8 = _Memo(4)  # text -> its UTF-8 bytes, for texts made by ``insert_lines`` from one whose bytes were known


def remember_utf8(text: str, data: bytes) -> None:
    """Remember that ``data`` is ``text`` encoded as UTF-8 (the caller has it at hand): a text
    ``insert_lines`` makes from it gets its bytes by putting the new lines' bytes in, not by
    encoding the whole file again."""
    _UTF8.put(text, data)


def known_utf8(text: str) -> bytes | None:
    """The UTF-8 bytes remembered for ``text``, None when there are none."""
    got: bytes | None = _UTF8.get(text)
    return got
_INSERTED = _Memo(8)  # text -> (the text it was made from, the bullet lines inserted at the end of a section)


def _last_ends(text: str, lines: list[str]) -> dict[str, tuple[int, int, int]]:
    ends = _LAST_ENDS.get(text)
    if ends is None:
        last = {sec: end for sec, _, end, _ in _spans(lines)}  # the last bullet of each section wins
        starts, bstarts = [0], [0]
        for ln in lines:
            starts.append(starts[-1] + len(ln) + 1)
            bstarts.append(bstarts[-1] + (len(ln) if ln.isascii() else len(ln.encode("utf-8", "surrogatepass"))) + 1)
        ends = {sec: (end, starts[end], bstarts[end]) for sec, end in last.items()}
        _LAST_ENDS.put(text, ends)
    return dict(ends)


def _whole_bullets(new_lines: list[str]) -> bool:
    """Whether ``new_lines`` are complete bullets and nothing else (then, inserted right after a
    bullet, they change the reading of no other line of the file)."""
    at = 0
    for _, start, end, _ in _spans(new_lines):
        if start != at:
            return False
        at = end
    return at == len(new_lines) > 0


def inserted(text: str) -> tuple[str, list[str]] | None:
    """When ``text`` was made by ``insert_lines`` from a recent text by adding whole bullets after
    the last bullet of a section: that text and the lines inserted; else None."""
    got: tuple[str, list[str]] | None = _INSERTED.get(text)
    return got


def insert_lines(text: str, section: str, new_lines: list[str], lang: str) -> str:
    """``text`` with ``new_lines`` placed at the end of ``section`` (created when missing).

    Where the section has bullets, where they end is remembered for the text made (the next
    write neither parses nor splits the whole file again to find it)."""
    ends = _LAST_ENDS.get(text)
    lines: list[str] | None = None
    if ends is None:
        lines = text.split("\n")
        ends = _last_ends(text, lines)
    if section in ends and new_lines:
        at, pos, bpos = ends[section]
        joined = "\n".join(new_lines)
        # the same as joining the lines before ``at``, the new lines and the lines from ``at``
        if pos < len(text):
            # a fresh head grown in place (its buffer is resized, not copied again): one copy of the file, not two
            out = text[:pos]
            out += "".join((joined, "\n", text[pos:]))
        else:
            out = "".join((text, joined, "\n") if pos == len(text) else (text, "\n", joined))
        data = _UTF8.get(text)
        try:
            added = joined.encode("utf-8")
        except UnicodeEncodeError:  # not text a file can hold (encoding the whole text says so where it is written)
            added, data = joined.encode("utf-8", "surrogatepass"), None  # (its length in bytes still counts)
        if data is not None:  # the bytes of the text made: the new lines' bytes put in at the same place
            _UTF8.put(out, b"".join((data[:bpos], added, b"\n", data[bpos:])) if pos <= len(text)
                      else b"".join((data, b"\n", added)))
        if _whole_bullets(new_lines):
            k, grow, bgrow = len(new_lines), len(joined) + 1, len(added) + 1
            _LAST_ENDS.put(out, {sec: (end + k, start + grow, bstart + bgrow) if end > at else (end, start, bstart)
                                 for sec, (end, start, bstart) in ends.items()} | {section: (at + k, pos + grow, bpos + bgrow)})
            _INSERTED.put(out, (text, list(new_lines)))
        return out
    if section in ends:
        return text
    if lines is None:
        lines = text.split("\n")
    # find the heading of the section
    head = None
    for idx, line in enumerate(lines):
        h = _HEADING.match(line)
        if h and len(h.group(1)) >= 2 and section_key(h.group(2)) == section:
            head = idx
            break
    if head is None:
        title = HEADINGS.get(lang, HEADINGS["en"]).get(section, section)
        footer = next((idx for idx in range(len(lines) - 1, -1, -1) if lines[idx].strip() == "---"), None)
        block = [f"## {title}", ""] + new_lines + [""]
        if footer is None:
            while lines and not lines[-1].strip():
                lines.pop()
            return "\n".join(lines + [""] + block)
        return "\n".join(lines[:footer] + block + lines[footer:])
    # skip the heading's blank lines and comment block, then insert
    at = head + 1
    while at < len(lines) and not lines[at].strip():
        at += 1
    if at < len(lines) and lines[at].lstrip().startswith("<!--"):
        while at < len(lines) and "-->" not in lines[at]:
            at += 1
        at += 1
        return "\n".join(lines[:at] + [""] + new_lines + lines[at:])
    return "\n".join(lines[: head + 1] + [""] + new_lines + lines[head + 1 :])


def entry_lines(text: str, entry_id: str) -> tuple[int, int] | None:
    """Where the bullet whose id comment names ``entry_id`` is in ``text`` (start and end line, as
    ``parse`` gives them), or None when there is none.

    Found from the one place the id is written, without parsing the whole file; where that is not
    certain (the id written twice, a comment left open before it, a line that is not plainly a
    bullet's last line) the file is parsed."""
    mark = f"mf:{entry_id}"
    at = text.find(mark)  # not there: a paragraph written by hand (its id is made from its words), or none
    got = _entry_at(text, entry_id, at) if at != -1 and text.find(mark, at + 1) == -1 else None
    return got if got is not None else \
        next(((e.start, e.end) for e in parse(text) if e.id == entry_id), None)


def _entry_at(text: str, entry_id: str, at: int) -> tuple[int, int] | None:
    line_start = text.rfind("\n", 0, at) + 1
    line_end = text.find("\n", at)
    line_end = len(text) if line_end == -1 else line_end
    c = _ID_COMMENT.search(text, line_start, line_end)
    if c is None or c.group(1) != entry_id:
        return None
    after = text[line_end + 1: text.find("\n", line_end + 1) if text.find("\n", line_end + 1) != -1 else len(text)]
    if line_end < len(text) and after.startswith("  ") and after.strip():
        return None  # a continuation line after the comment: the bullet does not end with it
    n = 1
    pos = line_start
    while True:  # back over continuation lines to the bullet's first line
        end = text.find("\n", pos)
        line = text[pos: len(text) if end == -1 else end]
        if _BULLET.match(line):
            break
        if not (line.startswith("  ") and line.strip()) or pos == 0:
            return None
        pos = text.rfind("\n", 0, pos - 1) + 1
        n += 1
    if text.rfind("<!--", 0, pos) > text.rfind("-->", 0, pos):
        return None  # a comment opened before the bullet may still be open
    start = text.count("\n", 0, pos)
    return start, start + n


def replace_entry(text: str, entry: Entry | tuple[int, int], new_lines: list[str]) -> str:
    """``text`` with the lines of ``entry`` (an entry, or its start and end line) replaced by ``new_lines``."""
    start, end = (entry.start, entry.end) if isinstance(entry, Entry) else entry
    lines = text.split("\n")
    return "\n".join(lines[:start] + new_lines + lines[end:])


ARCHIVE_TITLE = {"zh": "# 归档\n", "en": "# Archive\n"}  # archive.md: finished todos, for people to read
_ARCHIVE_WHY = {"zh": {"completed": "已完成", "expired": "已过期 {day}"},
                "en": {"completed": "completed", "expired": "expired {day}"}}


def archive_why(why: str, lang: str = "en") -> str:
    """Why a todo left MEMORY.md in the user's language: ``completed`` or ``expired YYYY-MM-DD``
    (the tidy job's words) as 已完成 / 已过期 YYYY-MM-DD for a Chinese memory."""
    words = _ARCHIVE_WHY.get(lang, _ARCHIVE_WHY["en"])
    kind, _, day = why.partition(" ")
    return words[kind].format(day=day) if kind in words else why


_ARCHIVE_LINE = {"en": re.compile(r"^- (\d{4}-\d{2}-\d{2}): (.*) \((completed|expired \d{4}-\d{2}-\d{2})\) "
                                   r"<!-- mf:([A-Za-z0-9_-]{4,40}) -->$"),
                 "zh": re.compile(r"^- (\d{4}-\d{2}-\d{2})：(.*)（(已完成|已过期 \d{4}-\d{2}-\d{2})） "
                                   r"<!-- mf:([A-Za-z0-9_-]{4,40}) -->$")}
_WHY_BACK = {"已完成": "completed", "已过期": "expired"}


def archive_in(text: str, lang: str) -> str:
    """An archive.md written by memfold in the other language, retitled and its lines reworded in
    ``lang`` (lines a person wrote or changed stay as they are)."""
    other = "en" if lang == "zh" else "zh"
    if lang not in ARCHIVE_TITLE or not text.startswith(ARCHIVE_TITLE[other]):
        return text
    lines = text.split("\n")
    lines[0] = ARCHIVE_TITLE[lang].rstrip("\n")
    return "\n".join(archive_line_in(line, lang) for line in lines)


def archive_line_in(line: str, lang: str) -> str:
    """A line of archive.md in memfold's format of the other language, reworded in ``lang``
    (any other line as it is)."""
    other = "en" if lang == "zh" else "zh"
    m = _ARCHIVE_LINE[other].match(line) if lang in ARCHIVE_TITLE else None
    if not m:
        return line
    kind, _, day = m.group(3).partition(" ")
    why = _WHY_BACK.get(kind, kind) + (f" {day}" if day else "")
    return archive_line(m.group(1), m.group(2), m.group(4), why, lang)


def archive_line(date: str, content: str, entry_id: str, why: str, lang: str = "en") -> str:
    """One line of archive.md (the id comment lets a later delete take its words out too)."""
    text = " ".join(content.split())
    if lang == "zh":
        return f"- {date}：{text}（{archive_why(why, lang)}） <!-- mf:{entry_id} -->"
    return f"- {date}: {text} ({archive_why(why, lang)}) <!-- mf:{entry_id} -->"


def daily_header(date: str) -> str:
    return f"# {date}\n\n"
