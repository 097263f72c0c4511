"""The guard of every entry point of the engine (``Memory``, sessions, import): one place for
every input check.

Arguments: each check takes the value and the argument's name and returns the value in the form
the engine stores, or raises ``InvalidInputError`` naming the argument and what was given
("importance must be a number between 0 and 1, got 'high'"). Text loses NUL and other control
characters (tab and newline stay); a lone surrogate cannot be written as UTF-8 and is refused.

Secrets (seed 002 "不应该记的"; ``text/secrets.py`` finds them):

- Free text (a text given to ``add``, a conversation turn, a daily note, new content in
  ``update``, imported content, a session message) is stored with each secret replaced by the
  visible marker ``[redacted]``. A text, turn or note that is *mostly* a secret (nothing of
  substance outside the clauses holding it, e.g. "my wifi password is hunter2xyz") is refused:
  ``SecretRefusedError`` for a single text, ``AddResult.refused`` for a turn. Session messages are
  always kept, redacted, so that the conversation still reads.
- Fields a caller sets on purpose (``structured_data`` at any depth, ``source_ids``,
  ``agent_id``, ``session_id``) are not rewritten behind the caller's back: a secret in one of
  them raises ``SecretRefusedError`` naming the field, and nothing is stored."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any

from ...errors import ArgumentError, InvalidInputError, LimitExceededError, SecretRefusedError
from ...limits import ID, MAX_STRUCTURED_DEPTH, MESSAGE, MESSAGES, RESULTS, SOURCE_IDS, STRUCTURED_BYTES, Bound, json_bytes, over
from ...models import EPISODIC, FILE_LEARNINGS, FILE_MEMORY, MemoryRecord, MemoryType, utcnow
from ...text.memory_markdown import clean_content
from ...text.secrets import Screened, a_kind, find_secret_in_data, find_secrets, redact, redact_data, screen
from ...workspace.userspace import check_user_id

# C0 controls but tab, newline and carriage return; DEL; C1 controls
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
_ANY_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_SURROGATE = re.compile(r"[\ud800-\udfff]")
_DAILY = re.compile(r"^memory/\d{6}/\d{8}\.md$")


def _field(name: str) -> str:
    """The field an argument's name in a message belongs to ("source_ids[3]" -> "source_ids")."""
    name = name.strip().removeprefix("a key of ")
    return re.split(r"[\[ :]", name, maxsplit=1)[0] or name


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _no_surrogate(value: str, name: str) -> None:
    m = _SURROGATE.search(value)
    if m:
        raise InvalidInputError(f"{name} contains a lone surrogate (U+{ord(m.group()):04X}) at position {m.start()}, "
                                "which is not valid Unicode text", field=_field(name))


def text(value: Any, name: str) -> str:
    """A string with NUL and control characters (other than tab and newline) removed."""
    if not isinstance(value, str):
        raise InvalidInputError(f"{name} must be a string, got {type(value).__name__} {_shown(value)}", field=_field(name))
    _no_surrogate(value, name)
    return _CONTROL.sub("", value)


def memory_text(value: Any, name: str) -> str:
    """A text to remember (``text``): refused when nothing is left of it once trimmed (empty, or
    spaces and blank lines only), so that a call that stored nothing never looks like success."""
    value = text(value, name)
    if not clean_content(value):
        raise InvalidInputError(f"{name} is empty{' (only whitespace)' if value else ''}: there is nothing to remember",
                                field=_field(name))
    return value


def optional_text(value: Any, name: str) -> str | None:
    return None if value is None else text(value, name)


def ident(value: Any, name: str) -> str:
    """An id given by the caller (memory, agent, session): a non-empty string of at most 256
    characters without control characters or surrounding whitespace."""
    if not isinstance(value, str):
        raise InvalidInputError(f"{name} must be a string, got {type(value).__name__} {_shown(value)}", field=_field(name))
    _no_surrogate(value, name)
    if not value.strip():
        raise InvalidInputError(f"{name} must not be empty", field=_field(name))
    if _ANY_CONTROL.search(value):
        raise InvalidInputError(f"{name} must not contain control characters, got {_shown(value)}", field=_field(name))
    if value != value.strip():
        raise InvalidInputError(f"{name} must not start or end with whitespace, got {_shown(value)}", field=_field(name))
    over(ID, len(value), name, _field(name))
    return value


def optional_ident(value: Any, name: str) -> str | None:
    return None if value is None else ident(value, name)


def user(value: Any, name: str = "user_id") -> str:
    """A namespace id (rules in ``workspace.userspace.check_user_id``)."""
    return check_user_id(value, name)


def user_arg(value: Any, call: str, text_name: str | None = None) -> str:
    """The namespace id of a call whose second argument is ``user_id``: a sentence given there
    (``update(id, "I like dogs")``) is an ``ArgumentError`` (a ``TypeError``) saying where the
    text goes, never a complaint about an odd user id."""
    try:
        return check_user_id(value, "user_id")
    except InvalidInputError:
        if not (isinstance(value, str) and " " in value.strip()):
            raise
        where = (f"; to pass the text, name it: {call}(..., {text_name}={_shown(value)})" if text_name
                 else "; pass the namespace as user_id=...")
        raise ArgumentError(f"{call}(): {_shown(value)} was given as user_id (the argument after the "
                            f"{'memory id' if call in ('update', 'delete', 'get', 'history') else 'first one'}), "
                            f"and a user id has no spaces{where}", field="user_id") from None


def number(value: Any, name: str, low: float = 0.0, high: float = 1.0) -> float:
    """A real number in [low, high] (a bool, a string or NaN is refused)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or not low <= value <= high:
        raise InvalidInputError(f"{name} must be a number between {low:g} and {high:g}, got {_shown(value)}", field=_field(name))
    return float(value)


def optional_number(value: Any, name: str, low: float = 0.0, high: float = 1.0) -> float | None:
    return None if value is None else number(value, name, low, high)


def count(value: Any, name: str, minimum: int = 1) -> int:
    """A whole number at least ``minimum`` (a bool, a float or a string is refused)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise InvalidInputError(f"{name} must be a whole number of at least {minimum}, got {_shown(value)}", field=_field(name))
    return value


def optional_count(value: Any, name: str, minimum: int = 1) -> int | None:
    return None if value is None else count(value, name, minimum)


def results_limit(value: Any, name: str = "limit", bound: Bound = RESULTS) -> int | None:
    """How many results to return (None: the default): a whole number from 1 to the bound."""
    if value is None:
        return None
    value = count(value, name)
    over(bound, value, name, name)
    return value


def flag(value: Any, name: str) -> bool:
    if not isinstance(value, bool):
        raise InvalidInputError(f"{name} must be True or False, got {_shown(value)}", field=_field(name))
    return value


def memory_type(value: Any, name: str = "memory_type") -> MemoryType | None:
    if value is None or isinstance(value, MemoryType):
        return value
    if not isinstance(value, str):
        raise InvalidInputError(f"{name} must be a string, got {type(value).__name__} {_shown(value)}", field=_field(name))
    try:
        return MemoryType(value.strip().lower())
    except ValueError:
        allowed = ", ".join(t.value for t in MemoryType)
        raise InvalidInputError(f"{name}: unknown memory type {_shown(value)}; use one of: {allowed}",
                                field=_field(name)) from None


def _clean_json(value: Any, name: str, depth: int = 0) -> Any:
    if depth > MAX_STRUCTURED_DEPTH:
        top = _field(name)
        raise LimitExceededError(f"{top} is nested deeper than {MAX_STRUCTURED_DEPTH} levels (at {name})", field=top,
                                 limit=MAX_STRUCTURED_DEPTH, size=depth, size_bound=False)
    if value is None or isinstance(value, bool) or isinstance(value, int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidInputError(f"{name} holds {value!r}, which JSON cannot represent", field=_field(name))
        return value
    if isinstance(value, str):
        return text(value, name)
    if isinstance(value, (list, tuple)):
        return [_clean_json(v, f"{name}[{i}]", depth + 1) for i, v in enumerate(value)]
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise InvalidInputError(f"{name} has a key {_shown(k)} that is not a string", field=_field(name))
            out[text(k, f"a key of {name}")] = _clean_json(v, f"{name}[{k!r}]", depth + 1)
        return out
    raise InvalidInputError(f"{name} must hold only JSON values (objects, lists, strings, numbers, true/false, "
                            f"null), got {type(value).__name__} {_shown(value)}", field=_field(name))


def structured_data(value: Any, name: str = "structured_data") -> dict[str, Any] | None:
    """A JSON object (dict with string keys and JSON values), cleaned like text."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise InvalidInputError(f"{name} must be a JSON object (dict), got {type(value).__name__} {_shown(value)}",
                                field=_field(name))
    clean = _clean_json(value, name)
    over(STRUCTURED_BYTES, json_bytes(clean), name, _field(name), "keep large documents outside memory and store a "
                                                                  "reference")
    return clean


def id_list(value: Any, name: str) -> tuple[str, ...]:
    """A list of ids (source turn ids): strings, checked like ``ident``; a single string is refused."""
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
        raise InvalidInputError(f"{name} must be a list of strings, got {type(value).__name__} {_shown(value)}",
                                field=_field(name))
    over(SOURCE_IDS, len(value), name, _field(name))
    return tuple(ident(v, f"{name}[{i}]") for i, v in enumerate(value))


def timestamp(value: Any, name: str) -> datetime | None:
    """An ISO 8601 time (naive means UTC), or None."""
    if value in (None, ""):
        return None
    if isinstance(value, datetime):
        t = value
    elif isinstance(value, str):
        try:
            t = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise InvalidInputError(f"{name} must be an ISO 8601 time, got {_shown(value)}", field=_field(name)) from None
    else:
        raise InvalidInputError(f"{name} must be an ISO 8601 time, got {type(value).__name__} {_shown(value)}",
                                field=_field(name))
    return t if t.tzinfo else t.replace(tzinfo=timezone.utc)


def record_row(d: Any, where: str) -> MemoryRecord:
    """One row of an import (``MemoryRecord.to_dict`` form), every field checked as ``add`` and
    ``update`` check it; ``where`` names the row in errors ("record 3")."""
    if not isinstance(d, dict):
        raise InvalidInputError(f"{where} must be a JSON object, got {type(d).__name__}")
    for key in ("id", "content"):
        if key not in d:
            raise InvalidInputError(f"{where} has no {key!r}")

    def f(key: str) -> str:
        return f"{where}: {key}"

    content = clean_content(text(d["content"], f("content")))
    if not content:
        raise InvalidInputError(f"{where}: content is empty")
    file = d.get("file", FILE_MEMORY)
    if not isinstance(file, str) or not (file in (FILE_MEMORY, FILE_LEARNINGS, EPISODIC) or _DAILY.match(file)):
        raise InvalidInputError(f"{where}: file must be MEMORY.md, learnings.md, memory/YYYYMM/YYYYMMDD.md or '' "
                                f"(an episodic turn), got {_shown(file)}")
    created = timestamp(d.get("created_at"), f("created_at")) or utcnow()
    access = d.get("access_count", 0)
    return MemoryRecord(
        id=ident(d["id"], f("id")),
        user_id=user(d.get("user_id", "default"), f("user_id")),
        memory_type=memory_type(d.get("memory_type", "note"), f("memory_type")) or MemoryType.NOTE,
        content=content,
        created_at=created,
        updated_at=timestamp(d.get("updated_at"), f("updated_at")) or created,
        importance=number(d.get("importance", 0.5), f("importance")),
        confidence=number(d.get("confidence", 1.0), f("confidence")),
        access_count=count(access, f("access_count"), 0),
        last_accessed_at=timestamp(d.get("last_accessed_at"), f("last_accessed_at")),
        is_active=flag(d.get("is_active", True), f("is_active")),
        structured_data=structured_data(d.get("structured_data") or {}, f("structured_data")) or {},
        source_ids=id_list(d.get("source_ids") or [], f("source_ids")),
        agent_id=optional_ident(d.get("agent_id"), f("agent_id")),
        source_session_id=optional_ident(d.get("source_session_id"), f("source_session_id")),
        superseded_by=optional_ident(d.get("superseded_by"), f("superseded_by")),
        file=file,
        context=text(d.get("context") or "", f("context")),
    )


def message_list(value: Any, name: str = "data") -> Sequence[Any]:
    """A list of chat messages, at most ``MAX_MESSAGES`` of them, none longer than
    ``MAX_MESSAGE_CHARS`` (the write path checks each one's shape, and skips a malformed one)."""
    if isinstance(value, (str, bytes, dict)) or not isinstance(value, Sequence):
        raise InvalidInputError(f"{name} must be a text or a list of messages, got {type(value).__name__} "
                                f"{_shown(value)}", field=_field(name))
    over(MESSAGES, len(value), "messages in one call", "messages",
         "send a longer conversation in several calls (`memfold ingest` does)")
    for i, m in enumerate(value):
        content = m.get("content") if isinstance(m, dict) else getattr(m, "content", None)
        if isinstance(content, str):
            over(MESSAGE, len(content), f"message {i}", f"messages[{i}].content", "send long documents in parts")
    return value


# ---- secrets -------------------------------------------------------------------------
def screen_text(text: str, what: str = "the text") -> Screened:
    """``text`` screened; raises SecretRefusedError when it is mostly a secret."""
    s = screen(text)
    if s.mostly_secret:
        raise SecretRefusedError(f"refused: {what} contains {a_kind(s.kinds[0])} and little else; "
                                 "secrets are never stored")
    return s


def check_fields(what: str = "", **fields: Any) -> None:
    """Raise SecretRefusedError naming the first field that holds a secret (``what`` prefixes
    the message, e.g. "record 3")."""
    for name, value in fields.items():
        if value is None:
            continue
        got = find_secret_in_data(value, name)
        if got:
            where = f"{what}: {got[0]}" if what else got[0]
            raise SecretRefusedError(f"refused: {where} contains {a_kind(got[1])}; secrets are never stored",
                                     field=name)


def redacted_note(label: str, s: Screened) -> str:
    return f"{label}: {' and '.join(a_kind(k) for k in s.kinds)} redacted"


def redact_record(r: MemoryRecord) -> tuple[MemoryRecord, tuple[str, ...]]:
    """A record read from a hand-edited file with every secret redacted (content, structured data,
    source ids, agent, session), and the kinds found; the same record and () when it had none."""
    kinds = [f.kind for f in find_secrets(r.content)]
    for name, value in (("structured_data", r.structured_data), ("source_ids", r.source_ids),
                        ("agent_id", r.agent_id), ("source_session_id", r.source_session_id)):
        got = find_secret_in_data(value, name) if value else None
        if got:
            kinds.append(got[1])
    if not kinds:
        return r, ()
    clean = r.with_(content=redact(r.content), structured_data=redact_data(r.structured_data),
                    source_ids=tuple(redact(s) for s in r.source_ids),
                    agent_id=redact(r.agent_id) if r.agent_id else r.agent_id,
                    source_session_id=redact(r.source_session_id) if r.source_session_id else r.source_session_id)
    return clean, tuple(dict.fromkeys(kinds))
