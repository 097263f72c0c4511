"""What the command line reads and prints besides the engine calls: text from stdin, export files,
readable lines for records, results and statistics."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from ..errors import InvalidInputError, NotFoundError

STDIN = "-"
EXPORT_SHAPE = ("the file must hold JSON lines of memory records as written by 'memfold export' "
                "(or one JSON array of such records)")


def text_argument(text: str, what: str = "the memory text") -> str:
    """``text``, or everything on standard input when it is ``-`` (a long text cannot be an argument)."""
    if text != STDIN:
        return text
    if sys.stdin is None or sys.stdin.isatty():
        raise InvalidInputError(f"'-' reads {what} from standard input, but nothing is piped in "
                                "(e.g. memfold add - < note.txt)")
    data = sys.stdin.buffer.read()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInputError(f"standard input is not UTF-8 text: {exc}") from None


def read_records(path: Path) -> list[dict[str, Any]]:
    """The records of an export file: JSON lines of objects, or one JSON array of objects."""
    from ..engine.write.conversations import read_jsonl

    try:
        with open(path, encoding="utf-8") as fh:
            head = fh.read(4096).lstrip("\ufeff \t\r\n")
    except FileNotFoundError:
        raise InvalidInputError(f"{path} does not exist") from None
    except (UnicodeDecodeError, IsADirectoryError) as exc:
        raise InvalidInputError(f"{path} cannot be read as UTF-8 text: {exc}") from None
    if head.startswith("["):  # a JSON array (pretty-printed or not)
        try:
            rows = json.loads(Path(path).read_text(encoding="utf-8-sig"))
        except json.JSONDecodeError as exc:
            raise InvalidInputError(f"{path} starts like a JSON array but is not valid JSON ({exc}); "
                                    f"{EXPORT_SHAPE}") from None
        where = "item"
    else:
        try:
            rows = read_jsonl(path)
        except InvalidInputError as exc:
            raise InvalidInputError(f"{exc}; {EXPORT_SHAPE}") from None
        where = "line"
    for n, row in enumerate(rows, 1):
        if not isinstance(row, dict):
            kind = {list: "an array", str: "a string", int: "a number", float: "a number", bool: "a boolean"}.get(
                type(row), "null" if row is None else type(row).__name__)
            raise InvalidInputError(f"{path}: {where} {n} is {kind}, not a memory record; {EXPORT_SHAPE}")
        if "id" not in row or "content" not in row:
            missing = " and ".join(k for k in ("id", "content") if k not in row)
            raise InvalidInputError(f"{path}: {where} {n} has no {missing}; {EXPORT_SHAPE}")
    return rows


def record_line(r: Any) -> str:
    """One memory on one line; an archived one is marked, with what superseded it."""
    mark = ""
    if not r.is_active:
        mark = f" [archived, superseded by {r.superseded_by}]" if r.superseded_by else " [archived]"
    return f"{r.id} [{r.kind}]{mark} {r.content}"


def superseded(memory: Any, user_id: str, added: Any) -> list[tuple[Any, Any, str]]:
    """(new, old, relation) for every memory an ``add`` archived because a new one replaced it."""
    out = []
    for new in added:
        for rel in memory.relations(new.id, user_id):
            if rel.get("source_id") != new.id:
                continue
            try:
                old = memory.get(rel["target_id"], user_id)
            except NotFoundError:
                continue
            if old.superseded_by == new.id:
                out.append((new, old, str(rel.get("relation") or "")))
    return out


def superseded_line(new: Any, old: Any, relation: str) -> str:
    verb = "merged into it" if relation == "refines" else "replaced"
    return f"  {verb}: {old.id} [{old.kind}] {old.content} (archived, superseded by {new.id})"


def _num(v: Any) -> str:
    return f"{v:,}" if isinstance(v, int) and not isinstance(v, bool) else str(v)


def _flat(v: Any) -> str:
    if isinstance(v, dict):
        return ", ".join(f"{k} {_flat(x)}" if not isinstance(x, dict) else f"{k} ({_flat(x)})"
                         for k, x in v.items()) or "none"
    if isinstance(v, (list, tuple)):
        return ", ".join(_flat(x) for x in v) or "none"
    if v is None:
        return "-"
    return _num(v)


def stats_lines(s: dict[str, Any]) -> list[str]:
    """``memfold stats`` as lines a person reads (``--json`` prints the dict itself)."""
    s = dict(s)
    lines = [f"user: {s.pop('user_id', '?')}"]
    if "active" in s:
        lines.append(f"memories: {_num(s.pop('total', 0))} in all: {_num(s.pop('active'))} active "
                     f"({_num(s.pop('episodic', 0))} of them conversation turns), {_num(s.pop('archived', 0))} archived")
    if "by_type" in s:
        by_type = s.pop("by_type") or {}
        lines.append("by type: " + (", ".join(f"{k} {_num(v)}" for k, v in sorted(by_type.items())) or "none"))
    if "avg_importance" in s:
        avg = s.pop("avg_importance")
        lines.append(f"average importance: {avg:.2f}" if isinstance(avg, (int, float)) else "average importance: -")
    if "memory_md_chars" in s:
        lines.append(f"MEMORY.md: {_num(s.pop('memory_md_chars'))} characters, {_num(s.pop('backups', 0))} backups")
    if "files" in s:
        lines.append("files: " + (", ".join(s.pop("files") or []) or "none"))
    if "embedder" in s or "index" in s:
        lines.append(f"embedder: {s.pop('embedder', '-')}; index: {s.pop('index', '-')}")
    usage = s.pop("llm_usage", None)
    if isinstance(usage, dict) and not (usage.get("operations") or usage.get("calls")):
        lines.append("LLM: no calls (extraction and merges by rules)")
    elif isinstance(usage, dict):
        u = dict(usage)
        lines.append(f"LLM: {_num(u.pop('operations', 0))} operations, {_num(u.pop('calls', 0))} calls, "
                     f"{_num(u.pop('failures', 0))} failures, {_num(u.pop('total_tokens', 0))} tokens "
                     f"({_num(u.pop('prompt_tokens', 0))} prompt, {_num(u.pop('completion_tokens', 0))} completion)")
        by_op = u.pop("by_operation", None) or {}
        for op, v in by_op.items():
            lines.append(f"  {op}: {_flat(v)}")
        u.pop("last", None)  # the last call in detail: in --json
        for k, v in u.items():
            lines.append(f"  {k}: {_flat(v)}")
    searches = s.pop("usage", None)
    if isinstance(searches, dict):
        lines.append(f"searches recorded: {_num(searches.get('searches', 0))}")
        if searches.get("most_used"):
            lines.append("most used memories:")
            lines += [f"  {u['count']}× {u['id']}: {' '.join(str(u['content']).split())[:100]}"
                      for u in searches["most_used"]]
        if searches.get("no_results"):
            lines.append("queries that found nothing:")
            lines += [f"  {q['count']}× {q['query'][:100]} (last {str(q['last'])[:10]})" for q in searches["no_results"]]
    for k, v in s.items():  # anything newer the engine reports
        lines.append(f"{k.replace('_', ' ')}: {_flat(v)}")
    return lines
