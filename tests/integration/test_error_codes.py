"""One error per failure, with a stable ``code`` and the ``field`` at fault, the same in Python
(the exception), in a tool's error result and in the table every surface maps it with
(``errors.CODES``: HTTP status, MCP code, the class a client raises)."""

from __future__ import annotations

import pytest

from memfold import Memory
from memfold import limits as L
from memfold.errors import (
    CODES,
    InvalidInputError,
    LimitExceededError,
    MemfoldError,
    NotFoundError,
    SecretRefusedError,
    code_of,
)
from memfold.tools import call


def _raised(fn) -> MemfoldError:  # type: ignore[no-untyped-def]
    with pytest.raises(MemfoldError) as got:
        fn()
    return got.value


def test_python_errors_carry_their_code_and_field(mem: Memory) -> None:
    mem.add("I keep my bike in the garage", user_id="alice")
    cases = [
        (lambda: mem.search("q" * (L.MAX_QUERY_CHARS + 1), user_id="alice"), LimitExceededError, "limit_exceeded",
         "query"),
        (lambda: mem.search("bike", user_id="alice", limit=L.MAX_RESULTS + 1), LimitExceededError, "out_of_range",
         "limit"),
        (lambda: mem.add("a note", user_id="alice", importance="high"), InvalidInputError, "invalid_input",
         "importance"),
        (lambda: mem.add("an agent", user_id="alice", agent_id="bad\x00id"), InvalidInputError, "invalid_input",
         "agent_id"),
        (lambda: mem.add("x", user_id="alice/../bob"), InvalidInputError, "invalid_input", "user_id"),
        (lambda: mem.get("m-nosuchid", user_id="alice"), NotFoundError, "not_found", "memory_id"),
        (lambda: mem.add("with data", user_id="alice", structured_data={"token": "sk-live-abcdefabcdef0123456789abcd"}),
         SecretRefusedError, "secret_refused", "structured_data"),
        (lambda: mem.search("bike", user_id="alice", filters={"importance": {"gte": "high"}}), InvalidInputError,
         "invalid_input", "filters"),
    ]
    for fn, cls, code, field in cases:
        exc = _raised(fn)
        assert isinstance(exc, cls) and (exc.code, exc.field) == (code, field), (code, type(exc), exc.code, exc.field,
                                                                                 str(exc))
        assert code_of(exc).code == code
    assert [r.content for r in mem.get_all("alice")] == ["I keep my bike in the garage"]  # nothing refused was stored


def test_a_tool_call_gives_the_same_code_and_field(mem: Memory) -> None:
    mem.add("I keep my bike in the garage", user_id="alice")
    for args, code, field in (
            ({"query": "q" * (L.MAX_QUERY_CHARS + 1)}, "limit_exceeded", "query"),
            ({"query": "bike", "limit": L.MAX_TOOL_RESULTS + 1}, "out_of_range", "limit"),
            ({"query": "bike", "limit": "many"}, "invalid_input", "limit"),
            ({}, "invalid_input", "query")):
        got = call(mem, "memory_search", args, user_id="alice")
        assert got["ok"] is False and (got["error"]["code"], got["error"]["field"]) == (code, field), got
    got = call(mem, "memory_relate", {"memory_id": "m-nosuchid"}, user_id="alice")
    assert got["error"]["code"] == "not_found", got
    got = call(mem, "memory_fly", {}, user_id="alice")
    assert (got["error"]["code"], got["error"]["field"]) == ("unknown_tool", "name")


def test_one_table_maps_every_code() -> None:
    for code, row in CODES.items():
        assert row.code == code and 400 <= row.http_status < 600 and row.mcp_code < 0 and row.meaning
        assert issubclass(row.error, MemfoldError)
    # a class's own code is a row of the table (the surfaces find their status there)
    for cls in {row.error for row in CODES.values()}:
        if cls not in (LimitExceededError,):
            assert cls.code in CODES, cls
    assert CODES["limit_exceeded"].http_status == 413 and CODES["out_of_range"].http_status == 422
    assert CODES["not_found"].http_status == 404 and CODES["invalid_input"].http_status == 422


def test_the_errors_page_lists_every_code() -> None:
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "errors.md").read_text(encoding="utf-8")
    for code, row in CODES.items():
        assert f"| `{code}` |" in text and f"| {row.http_status} |" in text, code
