"""Filters over stored memories: a checked tree of conditions that the index turns into SQL.

The form is a JSON object. Each key names a field and holds a value (equality), ``"*"`` (the field
is there, whatever its value) or an object of operators — ``eq ne gt gte lt lte in nin contains
icontains`` — all of which must hold. ``AND`` / ``OR`` hold lists of such objects; ``NOT`` holds a
list of which none may match. Keys side by side must all match::

    {"AND": [{"topic": "travel"}, {"importance": {"gte": 0.7}}, {"NOT": [{"status": "done"}]}]}

Fields: ``memory_type`` (or ``type``), ``importance``, ``confidence``, ``access_count``,
``created_at``, ``updated_at`` (ISO 8601 dates or datetimes), ``agent_id``, ``session_id``,
``content``; any other key is a key of the memory's ``structured_data`` (``structured_data.<key>``
or ``metadata.<key>`` say so explicitly, for a key named like a field). ``ne`` and ``nin`` also
match a memory that lacks the key. ``contains`` on a text is a substring test; on a list, one of
its items equals the value (``icontains``: ignoring case)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Union

from .errors import InvalidInputError
from .models import MemoryType

MAX_CONDITIONS = 64  # conditions in one filter
MAX_DEPTH = 8  # nesting of AND / OR / NOT
MAX_LIST = 1000  # values of one ``in`` / ``nin``
MAX_VALUE_CHARS = 1000  # one text value
MAX_KEY_CHARS = 128

OPERATORS = ("eq", "ne", "gt", "gte", "lt", "lte", "in", "nin", "contains", "icontains")
ORDER_OPS = ("gt", "gte", "lt", "lte")
LOGICAL = ("AND", "OR", "NOT")

# field name -> kind; the index maps each to its column
COLUMNS = {"memory_type": "type", "importance": "number", "confidence": "number", "access_count": "number",
           "created_at": "date", "updated_at": "date", "agent_id": "text", "session_id": "text", "content": "text"}
ALIASES = {"type": "memory_type"}
DATA_PREFIXES = ("structured_data.", "metadata.")
_KIND_OPS = {
    "type": ("eq", "ne", "in", "nin"),
    "number": ("eq", "ne", "gt", "gte", "lt", "lte", "in", "nin"),
    "date": ("eq", "ne", "gt", "gte", "lt", "lte"),
    "text": ("eq", "ne", "in", "nin", "contains", "icontains"),
    "data": OPERATORS,
}

Scalar = Union[str, int, float, bool, None, datetime]


@dataclass(frozen=True)
class Cond:
    """One test of one field. ``field`` is a column name of ``COLUMNS`` or ``data:<key>``;
    ``op`` one of ``OPERATORS`` or ``exists``; ``value`` checked for the field's kind (a tuple for in/nin)."""

    field: str
    op: str
    value: Any

    @property
    def data_key(self) -> str | None:
        return self.field[5:] if self.field.startswith("data:") else None


@dataclass(frozen=True)
class Logic:
    """``op`` AND (all parts match), OR (one does) or NOT (none does)."""

    op: str
    parts: tuple["Filter", ...]


Filter = Union[Cond, Logic]


def parse(value: Any, name: str = "filters") -> Filter | None:
    """A filter from its JSON form, checked (``InvalidInputError`` names the problem and where); None for none."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise InvalidInputError(f"{name} must be a JSON object (dict), got {type(value).__name__}", field=name)
    count = [0]
    try:
        f = _node(value, name, 0, count)
    except InvalidInputError as exc:  # every problem of a filter is the filter's
        exc.field = exc.field or name
        raise
    return None if isinstance(f, Logic) and f.op == "AND" and not f.parts else f


def _node(obj: dict[str, Any], where: str, depth: int, count: list[int]) -> Filter:
    if depth > MAX_DEPTH:
        raise InvalidInputError(f"{where}: AND / OR / NOT are nested deeper than {MAX_DEPTH} levels")
    parts: list[Filter] = []
    for key, val in obj.items():
        if not isinstance(key, str):
            raise InvalidInputError(f"{where} has a key {key!r} that is not a string")
        here = f"{where}.{key}"
        bare = key.lstrip("$")
        if bare.upper() in LOGICAL and bare in (bare.upper(), bare.lower()):
            op = bare.upper()
            items = [val] if op == "NOT" and isinstance(val, dict) else val
            if not isinstance(items, list) or not all(isinstance(x, dict) for x in items):
                raise InvalidInputError(f"{here} must be a list of objects (conditions)")
            parts.append(Logic(op, tuple(_node(x, f"{here}[{i}]", depth + 1, count) for i, x in enumerate(items))))
        else:
            parts.extend(_conditions(key, val, here, count))
    return parts[0] if len(parts) == 1 else Logic("AND", tuple(parts))


def _field(key: str, where: str) -> tuple[str, str]:
    """The canonical field name and its kind."""
    for prefix in DATA_PREFIXES:
        if key.startswith(prefix):
            key = key[len(prefix):]
            break
    else:
        name = ALIASES.get(key, key)
        if name in COLUMNS:
            return name, COLUMNS[name]
    if not key or len(key) > MAX_KEY_CHARS or any(c in key for c in '"\\') or any(ord(c) < 32 for c in key):
        raise InvalidInputError(f"{where}: a structured_data key must be 1-{MAX_KEY_CHARS} characters without "
                                "quotes, backslashes or control characters")
    return f"data:{key}", "data"


def _conditions(key: str, val: Any, where: str, count: list[int]) -> list[Cond]:
    field, kind = _field(key, where)
    if isinstance(val, dict):
        if not val:
            raise InvalidInputError(f"{where}: an empty object of operators; use one of {', '.join(OPERATORS)}")
        pairs = list(val.items())
    elif val == "*":
        pairs = [("exists", True)]
    else:
        pairs = [("eq", val)]
    out = []
    for op, v in pairs:
        count[0] += 1
        if count[0] > MAX_CONDITIONS:
            raise InvalidInputError(f"the filter has more than {MAX_CONDITIONS} conditions")
        op = op.lower().lstrip("$") if isinstance(op, str) else op
        if op == "exists":
            out.append(Cond(field, "exists", True))
            continue
        if op not in OPERATORS:
            raise InvalidInputError(f"{where}: unknown operator {op!r}; use one of {', '.join(OPERATORS)}")
        if op not in _KIND_OPS[kind]:
            raise InvalidInputError(f"{where}: {op!r} does not apply to {field} (use {', '.join(_KIND_OPS[kind])})")
        if op in ("in", "nin"):
            if not isinstance(v, (list, tuple)) or not v:
                raise InvalidInputError(f"{where}.{op} must be a non-empty list of values")
            if len(v) > MAX_LIST:
                raise InvalidInputError(f"{where}.{op} holds {len(v)} values; at most {MAX_LIST}")
            out.append(Cond(field, op, tuple(_value(x, kind, op, f"{where}.{op}[{i}]") for i, x in enumerate(v))))
        else:
            out.append(Cond(field, op, _value(v, kind, op, f"{where}.{op}")))
    return out


def _value(v: Any, kind: str, op: str, where: str) -> Scalar:
    if isinstance(v, str) and len(v) > MAX_VALUE_CHARS:
        raise InvalidInputError(f"{where}: a value of {len(v)} characters; at most {MAX_VALUE_CHARS}")
    if kind == "type":
        try:
            return MemoryType.parse(v).value if isinstance(v, str) else _bad(v, "a memory type name", where)
        except InvalidInputError as exc:
            raise InvalidInputError(f"{where}: {exc}") from None
    if kind == "number":
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            return _bad(v, "a number", where)
        return v
    if kind == "date":
        return _date(v, where)
    if kind == "text" or op in ("contains", "icontains"):
        if op in ("contains", "icontains") and kind == "data" and isinstance(v, (int, float)) and not isinstance(v, bool):
            return v  # an item of a list of numbers
        return v if isinstance(v, str) else _bad(v, "a string", where)
    # structured data: a JSON scalar; the order operators compare numbers with numbers, texts with texts
    if op in ORDER_OPS:
        if isinstance(v, bool) or v is None or not isinstance(v, (int, float, str)):
            return _bad(v, "a number or a string", where)
    elif not (v is None or isinstance(v, (str, int, float, bool))):
        return _bad(v, "a string, number, true/false or null", where)
    if isinstance(v, float) and not math.isfinite(v):
        return _bad(v, "a finite number", where)
    return v


def _date(v: Any, where: str) -> datetime:
    if isinstance(v, datetime):
        t = v
    elif isinstance(v, str):
        try:
            t = datetime.fromisoformat(v.strip().replace("Z", "+00:00"))
        except ValueError:
            raise InvalidInputError(f"{where}: {v!r} is not an ISO 8601 date or time (e.g. 2024-05-01)") from None
    else:
        return _bad(v, "an ISO 8601 date or time", where)  # type: ignore[return-value]
    return t if t.tzinfo else t.replace(tzinfo=timezone.utc)


def _bad(v: Any, what: str, where: str) -> Any:
    raise InvalidInputError(f"{where} must be {what}, got {type(v).__name__} {v!r}")


def conditions(f: Filter) -> list[Cond]:
    """Every condition of a filter (depth first)."""
    if isinstance(f, Cond):
        return [f]
    return [c for p in f.parts for c in conditions(p)]
