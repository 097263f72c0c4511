"""Every input a client controls has one bound, in one table (``memfold.limits``): an input over it
is refused before any work with ``LimitExceededError`` naming the field (Python), an error result
with the field (tools, MCP), and nothing is stored; ``memfold ingest`` sends a long conversation
in batches of the bound instead of refusing it; ``docs/limits.md`` lists the same numbers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memfold import Memory
from memfold import limits as L
from memfold.errors import LimitExceededError, TooLongError
from memfold.eval.fresh_words import FreshWords
from memfold.tools import call
from memfold.tools.models import MemoryReadInput, MemorySearchInput

from ..conftest import run_cli

DOCS = Path(__file__).resolve().parents[2] / "docs" / "limits.md"


def _nested(depth: int) -> dict:
    value: object = "leaf"
    for _ in range(depth):
        value = [value]
    return {"a": value}


def _refused(fn, field: str, limit: int) -> LimitExceededError:  # type: ignore[no-untyped-def]
    with pytest.raises(LimitExceededError) as got:
        fn()
    assert got.value.field == field and got.value.limit == limit, (got.value.field, got.value.limit, str(got.value))
    assert f"{limit:,}" in str(got.value)
    return got.value


def test_each_bound_is_refused_naming_its_field_and_nothing_is_stored(mem: Memory, root: Path) -> None:
    mem.add("I keep my bike in the garage", user_id="alice")
    before = (root / "alice" / "MEMORY.md").read_text(encoding="utf-8")
    turn = {"role": "user", "content": "hello there"}
    e = _refused(lambda: mem.add([turn] * (L.MAX_MESSAGES + 1), user_id="alice"), "messages", L.MAX_MESSAGES)
    assert e.size == L.MAX_MESSAGES + 1 and e.size_bound
    _refused(lambda: mem.add([{"role": "user", "content": "x" * (L.MAX_MESSAGE_CHARS + 1)}], user_id="alice"),
             "messages[0].content", L.MAX_MESSAGE_CHARS)
    big = {"doc": "y" * L.MAX_STRUCTURED_BYTES}
    _refused(lambda: mem.add("a note with data", user_id="alice", structured_data=big), "structured_data",
             L.MAX_STRUCTURED_BYTES)
    e = _refused(lambda: mem.add("deep data", user_id="alice", structured_data=_nested(L.MAX_STRUCTURED_DEPTH + 1)),
                 "structured_data", L.MAX_STRUCTURED_DEPTH)
    assert not e.size_bound
    _refused(lambda: mem.add("many sources", user_id="alice", source_ids=[f"t{i}" for i in range(L.MAX_SOURCE_IDS + 1)]),
             "source_ids", L.MAX_SOURCE_IDS)
    _refused(lambda: mem.add("an agent", user_id="alice", agent_id="a" * (L.MAX_ID_CHARS + 1)), "agent_id",
             L.MAX_ID_CHARS)
    rid = mem.get_all("alice")[0].id
    _refused(lambda: mem.update(rid, user_id="alice", structured_data=big), "structured_data", L.MAX_STRUCTURED_BYTES)
    _refused(lambda: mem.search("bike", user_id="alice", limit=L.MAX_RESULTS + 1), "limit", L.MAX_RESULTS)
    _refused(lambda: mem.get_all("alice", limit=L.MAX_RESULTS + 1), "limit", L.MAX_RESULTS)
    _refused(lambda: mem.search("q" * (L.MAX_QUERY_CHARS + 1), user_id="alice"), "query", L.MAX_QUERY_CHARS)
    assert isinstance(LimitExceededError("x", field="f", limit=1, size=2), TooLongError)  # old handlers still catch it
    # nothing of any refused call was stored
    assert (root / "alice" / "MEMORY.md").read_text(encoding="utf-8") == before
    assert [r.content for r in mem.get_all("alice")] == ["I keep my bike in the garage"]
    # at the bound, everything is accepted
    ok = mem.add([turn] * 3 + [{"role": "user", "content": "my cat is called Miso"}], user_id="alice",
                 structured_data=None)
    assert ok.added
    at_bound = {"doc": "z" * (L.MAX_STRUCTURED_BYTES - 20)}
    assert mem.add("a note with data at the bound", user_id="alice", structured_data=at_bound,
                   source_ids=[f"t{i}" for i in range(L.MAX_SOURCE_IDS)]).added
    assert len(mem.search("bike", user_id="alice", limit=L.MAX_RESULTS)) >= 1


def test_tools_read_the_same_table_and_name_the_field(mem: Memory) -> None:
    assert MemorySearchInput.model_fields["limit"].metadata[-1].le == L.MAX_TOOL_RESULTS
    assert MemoryReadInput.model_fields["section"].metadata[-1].max_length == L.MAX_SECTION_CHARS
    got = call(mem, "memory_search", {"query": "bike", "limit": L.MAX_TOOL_RESULTS + 1}, user_id="alice")
    assert got["ok"] is False and got["error"]["field"] == "limit"
    got = call(mem, "memory_search", "x" * (L.MAX_ARGUMENT_CHARS + 1), user_id="alice")
    assert got["error"] == {"code": "limit_exceeded", "message": got["error"]["message"], "field": "arguments"}
    many = "\n".join(f"- fact number {i} about kites" for i in range(L.MAX_WRITE_LINES + 1))
    got = call(mem, "write_file", {"path": "MEMORY.md", "content": many}, user_id="alice")
    assert got["error"]["code"] == "limit_exceeded" and got["error"]["field"] == "content"
    assert f"{L.MAX_WRITE_LINES:,}" in got["error"]["message"]
    assert mem.get_all("alice") == []


def test_the_docs_table_lists_every_bound() -> None:
    text = DOCS.read_text(encoding="utf-8")
    for b in L.TABLE:
        assert f"{b.limit:,}" in text, b
        assert f"`{b.field}`" in text, b


def test_ingest_sends_a_long_conversation_in_batches(tmp_path: Path) -> None:
    n = L.MAX_MESSAGES + 5  # one more batch than one call may carry
    words = FreshWords(seed=5)  # facts with words never seen before: no turn is a near-duplicate of another
    convo = [{"role": "user", "content": words.fact("en")} for _ in range(n)]
    path = tmp_path / "long.json"
    path.write_text(json.dumps(convo), encoding="utf-8")
    root = tmp_path / "ws"
    out = run_cli(root, "ingest", str(path), "--user", "kites", "--no-extract", "--json")
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)["kites"]
    assert got["added"] > L.MAX_MESSAGES // 2 and got["refused"] == got["skipped"] == 0, got  # every batch taken
    with Memory(root=root) as mem:  # the turns of the last batch are there too
        last = [h.record.content for h in mem.search(convo[-1]["content"], "kites", limit=3)]
        assert convo[-1]["content"] in last or convo[-2]["content"] in last
