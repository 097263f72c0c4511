"""Conversation files for ``memfold ingest``: a JSON list of messages, or LoCoMo-format
conversations (``sample_id``, ``conversation`` with ``session_N`` turns and dates)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ...errors import InvalidInputError
from ...limits import MAX_MESSAGES

_SESSION = re.compile(r"^session_(\d+)$")
# where a long turn may be cut, best first: a line break, a sentence end, a space
_BREAKS = (re.compile(r"\n+"), re.compile(r"(?<=[.!?…])\s+|(?<=[。！？；])\s*"), re.compile(r"\s+"))


def split_long(text: str, limit: int) -> list[str]:
    """``text`` in pieces of at most ``limit`` characters, cut at line breaks, else at sentence
    ends, else at spaces (a piece is at least a quarter of the limit), else anywhere."""
    pieces: list[str] = []
    rest = text.strip()
    while len(rest) > limit:
        window = rest[: limit + 1]
        cut = None
        for pattern in _BREAKS:
            ends = [m for m in pattern.finditer(window) if limit // 4 <= m.start() <= limit]
            if ends:
                cut = ends[-1]
                break
        head, rest = (rest[: cut.start()], rest[cut.end():]) if cut else (rest[:limit], rest[limit:])
        if head.strip():
            pieces.append(head.strip())
        rest = rest.strip()
    if rest:
        pieces.append(rest)
    return pieces


@dataclass(frozen=True)
class Conversation:
    """One conversation to ingest: its namespace (or None = the caller's) and its sessions of messages."""

    user_id: str | None
    sessions: list[list[dict[str, Any]]]

    @property
    def n_messages(self) -> int:
        return sum(len(s) for s in self.sessions)


def batches(sessions: list[list[dict[str, Any]]], size: int = MAX_MESSAGES) -> Iterator[list[dict[str, Any]]]:
    """The sessions as calls of at most ``size`` messages (the bound of one ``add``): a longer session
    is cut into consecutive batches; each batch's first turn starts its own context (it does not
    quote the last turn of the batch before)."""
    for session in sessions:
        for start in range(0, len(session), size):
            yield session[start: start + size]


def parse_locomo_date(text: str) -> datetime:
    """'1:56 pm on 8 May, 2023' -> an aware datetime."""
    for fmt in ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y", "%I:%M %p on %B %d, %Y"):
        try:
            return datetime.strptime(text.strip(), fmt).replace(tzinfo=timezone.utc)
        except ValueError:
            continue
    raise InvalidInputError(f"unrecognised LoCoMo session date {text!r}")


def locomo_sessions(conv: dict[str, Any]) -> list[list[dict[str, Any]]]:
    """The sessions of a LoCoMo ``conversation`` object as message lists, in session order;
    every turn becomes a user message named by its speaker, stamped with its session's date."""
    nums = sorted(int(m.group(1)) for k in conv if (m := _SESSION.match(k)))
    out = []
    for n in nums:
        turns = conv.get(f"session_{n}") or []
        date_text = conv.get(f"session_{n}_date_time")
        when = parse_locomo_date(date_text) if date_text else None
        msgs = []
        for t in turns:
            text = t.get("text", "")
            if t.get("blip_caption"):
                text = f"{text} [shares a photo: {t['blip_caption']}]"
            msgs.append({"role": "user", "content": text, "name": t.get("speaker"), "turn_id": t.get("dia_id"),
                         "timestamp": when.isoformat() if when else None})
        out.append(msgs)
    return out


def read_jsonl(path: Path) -> list[Any]:
    """The JSON values of a JSON-lines file (blank lines skipped); errors name the file and line."""
    rows = []
    try:
        with open(path, encoding="utf-8") as fh:
            for n, line in enumerate(fh, 1):
                if line.strip():
                    try:
                        rows.append(json.loads(line))
                    except json.JSONDecodeError as exc:
                        raise InvalidInputError(f"{path} line {n} is not JSON: {exc}") from exc
    except FileNotFoundError:
        raise InvalidInputError(f"{path} does not exist") from None
    except UnicodeDecodeError as exc:
        raise InvalidInputError(f"{path} is not UTF-8 text: {exc}") from exc
    except OSError as exc:
        raise InvalidInputError(unreadable(path, exc)) from None
    return rows


def unreadable(path: Path, exc: OSError) -> str:
    """Why a file cannot be read, in one line: a folder, no permission, or the system's words."""
    if isinstance(exc, IsADirectoryError) or Path(path).is_dir():
        return f"{path} is a folder, not a file"
    if isinstance(exc, PermissionError):
        return f"{path} cannot be read: permission denied"
    return f"{path} cannot be read: {exc.strerror or exc}"


def load_conversation_file(path: Path) -> list[Conversation]:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InvalidInputError(f"{path} does not exist") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InvalidInputError(f"{path} is not a JSON file: {exc}") from exc
    except OSError as exc:
        raise InvalidInputError(unreadable(path, exc)) from None
    if isinstance(data, dict) and "conversation" in data:
        data = [data]
    if isinstance(data, list) and data and all(isinstance(d, dict) and "conversation" in d for d in data):
        return [Conversation(str(d.get("sample_id") or f"conv-{i}"), locomo_sessions(d["conversation"]))
                for i, d in enumerate(data)]
    if isinstance(data, dict) and isinstance(data.get("messages"), list):
        data = data["messages"]
    if isinstance(data, list) and any(isinstance(m, dict) and "role" in m and "content" in m for m in data):
        return [Conversation(None, [data])]  # malformed messages: reported by add() by their index, skipped
    raise InvalidInputError(
        f"{path}: expected a JSON list of {{role, content}} messages or LoCoMo conversations")
