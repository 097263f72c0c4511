"""A checked filter (``memfold.filters``) as a SQL condition of either backend, with its parameters.

Every condition yields true or false, never NULL (a missing key is false), so that ``NOT`` and
``ne`` / ``nin`` match the memories that lack the key. Text comparisons are by code point on both
backends (SQLite's BINARY collation, PostgreSQL's ``"C"``); ``icontains`` lower-cases with the
database's ``lower()`` (PostgreSQL: every letter; SQLite: A-Z only)."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from ..filters import Cond, Filter, Logic

_SQL_OPS = {"eq": "=", "gt": ">", "gte": ">=", "lt": "<", "lte": "<="}
_SQLITE_COLS = {"memory_type": "memory_type", "importance": "importance", "confidence": "confidence",
                "access_count": "access_count", "created_at": "created_at", "updated_at": "updated_at",
                "agent_id": "agent_id", "session_id": "source_session_id", "content": "content"}
_PG_COLS = dict(_SQLITE_COLS, importance="importance_score")
_DATES = ("created_at", "updated_at")


def to_sql(f: Filter, dialect: str) -> tuple[str, list[Any]]:
    """``(condition, parameters)`` for ``dialect`` ``"sqlite"`` (``?`` placeholders) or ``"postgres"`` (``%s``)."""
    args: list[Any] = []
    return (_sqlite if dialect == "sqlite" else _pg)(f, args), args


def _logic(f: Logic, args: list[Any], each: Any) -> str:
    parts = [each(p, args) for p in f.parts]
    if not parts:
        return "(1=1)" if f.op != "OR" else "(1=0)"
    if f.op == "NOT":
        return f"(NOT ({' OR '.join(parts)}))"
    return "(" + f" {f.op} ".join(parts) + ")"


def _tree(f: Filter, args: list[Any], each: Any, data: Any, col: Any, false: str) -> str:
    """One dialect's SQL of a filter: logic and the derived operators (ne, nin, in) written through
    ``each``; a condition on a ``structured_data`` key through ``data``, on a column through ``col``;
    a comparison that meets a missing value is ``false``."""
    if isinstance(f, Logic):
        return _logic(f, args, each)
    if f.op == "ne":
        return f"(NOT {each(Cond(f.field, 'eq', f.value), args)})"
    if f.op == "nin":
        return f"(NOT {each(Cond(f.field, 'in', f.value), args)})"
    if f.op == "in":
        return "(" + " OR ".join(each(Cond(f.field, "eq", v), args) for v in f.value) + ")"
    key = f.data_key
    return f"COALESCE(({data(f, key, args) if key is not None else col(f, args)}), {false})"


# ---- SQLite --------------------------------------------------------------------------------------
def _sqlite(f: Filter, args: list[Any]) -> str:
    return _tree(f, args, _sqlite, _sqlite_data, _sqlite_col, "0")


def _sqlite_col(f: Cond, args: list[Any]) -> str:
    col = _SQLITE_COLS[f.field]
    if f.op == "exists":
        return f"{col} IS NOT NULL"
    if f.value is None:
        return f"{col} IS NULL"
    if f.op == "contains":
        args.append(f.value)
        return f"instr({col}, ?) > 0"
    if f.op == "icontains":
        args.append(f.value)
        return f"instr(lower({col}), lower(?)) > 0"
    if f.field in _DATES:
        args.append(_iso(f.value))
        return f"julianday({col}) {_SQL_OPS[f.op]} julianday(?)"
    args.append(f.value)
    return f"{col} {_SQL_OPS[f.op]} ?"


def _sqlite_data(f: Cond, key: str, args: list[Any]) -> str:
    path = f'$."{key}"'
    typ = "json_type(structured_data, ?)"
    val = "json_extract(structured_data, ?)"
    v = f.value
    if f.op == "exists":
        args.append(path)
        return f"coalesce({typ}, 'null') <> 'null'"
    if f.op in ("contains", "icontains"):
        low = f.op == "icontains" and isinstance(v, str)
        wrap = (lambda s: f"lower({s})") if low else (lambda s: s)
        item = "json_each.type = 'text'" if isinstance(v, str) else "json_each.type IN ('integer', 'real')"
        args.extend([path, path, v, path, v])
        text_test = (f"instr({wrap(val)}, {wrap('?')}) > 0" if isinstance(v, str) else "0")
        return (f"CASE {typ} WHEN 'text' THEN {text_test} WHEN 'array' THEN EXISTS (SELECT 1 FROM "
                f"json_each(structured_data, ?) WHERE {item} AND {wrap('json_each.value')} = {wrap('?')}) ELSE 0 END")
    if v is None:  # eq null: the key is missing or null
        args.append(path)
        return f"coalesce({typ}, 'null') = 'null'"
    if isinstance(v, bool):
        args.append(path)
        return f"{typ} = '{'true' if v else 'false'}'"
    kinds = "('integer', 'real')" if isinstance(v, (int, float)) else "('text')"
    args.extend([path, path, v])
    return f"CASE WHEN {typ} IN {kinds} THEN {val} {_SQL_OPS[f.op]} ? ELSE 0 END"


# ---- PostgreSQL ----------------------------------------------------------------------------------
def _pg(f: Filter, args: list[Any]) -> str:
    return _tree(f, args, _pg, _pg_data, _pg_col, "false")


def _pg_col(f: Cond, args: list[Any]) -> str:
    col = _PG_COLS[f.field]
    if f.op == "exists":
        return f"{col} IS NOT NULL"
    if f.value is None:
        return f"{col} IS NULL"
    if f.op == "contains":
        args.append(f.value)
        return f"strpos({col}, %s) > 0"
    if f.op == "icontains":
        args.append(f.value)
        return f"strpos(lower({col}), lower(%s)) > 0"
    args.append(f.value)
    if isinstance(f.value, str) and f.field not in _DATES:
        return f'{col} COLLATE "C" {_SQL_OPS[f.op]} %s'
    return f"{col} {_SQL_OPS[f.op]} %s"


def _pg_data(f: Cond, key: str, args: list[Any]) -> str:
    x = "(structured_data -> %s)"
    v = f.value
    if f.op == "exists":
        args.append(key)
        return f"coalesce(jsonb_typeof({x}), 'null') <> 'null'"
    if f.op in ("contains", "icontains"):
        if f.op == "icontains" and isinstance(v, str):
            args.extend([key, key, v, key, v])
            return (f"CASE jsonb_typeof({x}) WHEN 'string' THEN strpos(lower({x} #>> '{{}}'), lower(%s)) > 0 "
                    f"WHEN 'array' THEN EXISTS (SELECT 1 FROM jsonb_array_elements({x}) e "
                    "WHERE jsonb_typeof(e) = 'string' AND lower(e #>> '{}') = lower(%s)) ELSE false END")
        if isinstance(v, str):
            args.extend([key, key, v, key, json.dumps([v])])
            return (f"CASE jsonb_typeof({x}) WHEN 'string' THEN strpos({x} #>> '{{}}', %s) > 0 "
                    f"WHEN 'array' THEN {x} @> %s::jsonb ELSE false END")
        args.extend([key, key, json.dumps([v])])
        return f"CASE jsonb_typeof({x}) WHEN 'array' THEN {x} @> %s::jsonb ELSE false END"
    if v is None:
        args.append(key)
        return f"coalesce(jsonb_typeof({x}), 'null') = 'null'"
    if f.op == "eq":
        args.extend([key, json.dumps(v)])
        return f"{x} = %s::jsonb"
    if isinstance(v, (int, float)):
        args.extend([key, key, v])
        return f"CASE WHEN jsonb_typeof({x}) = 'number' THEN ({x})::numeric {_SQL_OPS[f.op]} %s ELSE false END"
    args.extend([key, key, v])
    return (f"CASE WHEN jsonb_typeof({x}) = 'string' THEN ({x} #>> '{{}}') COLLATE \"C\" {_SQL_OPS[f.op]} %s "
            "ELSE false END")


def _iso(v: Any) -> str:
    return v.isoformat() if isinstance(v, datetime) else str(v)
