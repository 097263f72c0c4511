"""mem0's documented examples run over memfold with only the import changed.

Each example below is mem0's own code from its documentation, with ``from mem0 import Memory``
replaced by ``from memfold.compat.mem0 import Memory`` (``_run`` does the replacement) and the
memory ids printed in mem0's sample outputs replaced by ids of this run. No LLM: ``infer=True``
goes through memfold's deterministic extraction."""

from __future__ import annotations

import asyncio
import textwrap
from pathlib import Path
from typing import Any

import pytest

from memfold.compat import mem0 as compat
from memfold.errors import ArgumentError


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("MEMFOLD_HOME", str(tmp_path / "home"))  # where Memory() with no config keeps its files
    return tmp_path / "home"


def _run(code: str, **names: Any) -> dict[str, Any]:
    """Run mem0 example code with only its import changed; returns the example's variables."""
    code = textwrap.dedent(code)
    assert "from mem0 import" in code
    code = code.replace("from mem0 import", "from memfold.compat.mem0 import")
    scope: dict[str, Any] = dict(names)
    exec(compile(code, "<mem0 example>", "exec"), scope)
    return scope


# https://docs.mem0.ai/open-source/python-quickstart (Basic Usage: store, retrieve, search, update,
# history, delete, reset)
QUICKSTART = """
from mem0 import Memory

m = Memory()

messages = [
    {"role": "user", "content": "I'm planning to watch a movie tonight. Any recommendations?"},
    {"role": "assistant", "content": "How about a thriller movies? They can be quite engaging."},
    {"role": "user", "content": "I'm not a big fan of thriller movies but I love sci-fi movies."},
    {"role": "assistant", "content": "Got it! I'll avoid thriller recommendations and suggest sci-fi movies in the future."}
]

# Store inferred memories (default behavior)
result = m.add(messages, user_id="alice", metadata={"category": "movie_recommendations"})

# Store memories with agent and run context
result2 = m.add(messages, user_id="alice", agent_id="movie-assistant", run_id="session-001", metadata={"category": "movie_recommendations"})

# Store raw messages without inference
result3 = m.add(messages, user_id="alice", metadata={"category": "movie_recommendations"}, infer=False)

# Get all memories
all_memories = m.get_all(user_id="alice")

# Get a single memory by ID
memory_id = all_memories["results"][0]["id"]
specific_memory = m.get(memory_id)

related_memories = m.search(query="What do you know about me?", user_id="alice")

result_update = m.update(memory_id=memory_id, data="I love India, it is my favorite country.")

history = m.history(memory_id=memory_id)

# Delete a memory by id
deleted = m.delete(memory_id=memory_id)
after_delete = m.get(memory_id)
# Delete all memories for a user
deleted_all = m.delete_all(user_id="alice")
left = m.get_all(user_id="alice")

m.add("I like hiking on weekends", user_id="bob")
m.reset() # Reset all memories
left_after_reset = m.get_all(user_id="bob")
"""


def test_the_python_quickstart_runs_with_only_the_import_changed(home: Path):
    v = _run(QUICKSTART)
    for res in (v["result"], v["result3"]):
        assert set(res) == {"results"} and res["results"]
        for item in res["results"]:
            assert item["event"] in ("ADD", "UPDATE") and item["id"] and item["memory"]
            assert item["metadata"]["category"] == "movie_recommendations"
    added = [i["memory"] for i in v["result"]["results"]]
    assert any("sci-fi" in t for t in added)  # memfold's rules extracted the preference
    assert any(i["memory_type"] == "preference" for i in v["result"]["results"])
    memories = v["all_memories"]["results"]
    assert memories and all(i["user_id"] == "alice" for i in memories)
    for item in memories:
        assert {"id", "memory", "hash", "metadata", "created_at", "updated_at", "user_id"} <= set(item)
    # the same messages again are near-duplicates: memfold folds them into what it stored (UPDATE events)
    assert v["result2"]["results"] and {i["event"] for i in v["result2"]["results"]} <= {"ADD", "UPDATE"}
    assert v["specific_memory"]["id"] == v["memory_id"] and v["specific_memory"]["memory"]
    found = v["related_memories"]["results"]
    assert found and all(isinstance(i["score"], float) for i in found)
    assert [i["score"] for i in found] == sorted((i["score"] for i in found), reverse=True)
    assert v["result_update"] == {"message": "Memory updated successfully!"}
    events = [(h["event"], h["new_memory"]) for h in v["history"]]
    assert events[0][0] == "ADD" and events[-1] == ("UPDATE", "I love India, it is my favorite country.")
    assert v["history"][-1]["previous_value"] == v["history"][-1]["old_memory"]
    assert v["deleted"] == {"message": "Memory deleted successfully!"} and v["after_delete"] is None
    assert v["deleted_all"] == {"message": "Memories deleted successfully!"} and v["left"] == {"results": []}
    assert v["left_after_reset"] == {"results": []}


# https://docs.mem0.ai/open-source/python-quickstart (v1: search with the user in the filters)
QUICKSTART_V1 = """
from mem0 import Memory

m = Memory()

messages = [
    {"role": "user", "content": "Hi, I'm Alex. I love basketball and gaming."},
    {"role": "assistant", "content": "Hey Alex! I'll remember your interests."}
]
m.add(messages, user_id="alex")

results = m.search("What do you know about me?", filters={"user_id": "alex"})
"""


def test_the_v1_quickstart_searches_with_the_user_in_the_filters(home: Path):
    v = _run(QUICKSTART_V1)
    found = v["results"]["results"]
    assert found and all(i["user_id"] == "alex" for i in found)
    assert any("basketball" in i["memory"] for i in found)


# https://docs.mem0.ai/open-source/features/metadata-filtering (every example of the page; the
# memories they search are added first)
SETUP = """
from mem0 import Memory

m = Memory()
m.add("I prefer window seats on long flights", user_id="alice",
      metadata={"category": "preferences", "priority": 6, "status": "active", "score": 0.9, "rating": 2})
m.add("Quarterly planning meeting is important", user_id="alice",
      metadata={"category": "work", "priority": 8, "status": "active", "title": "team meeting",
                "description": "Very IMPORTANT notes", "tags": ["urgent", "q3"], "confidence": 0.5})
m.add("Finished the tax return", user_id="alice",
      metadata={"category": "work", "priority": 9, "status": "completed", "archived": True})
m.add("Old spam about a prize", user_id="alice", metadata={"category": "archived", "status": "deleted"})
m.add("Ticket 12 about a broken login", agent_id="support_bot",
      metadata={"ticket_status": "open", "priority": "high", "created_date": "2024-03-01", "category": "bug"})
"""

FILTERING = """
# Search with simple metadata filters
simple = m.search(
    "What are my preferences?",
    user_id="alice",
    filters={"category": "preferences"}
)

# Greater than / Less than
compare = m.search(
    "recent activities",
    user_id="alice",
    filters={
        "score": {"gt": 0.8},
        "priority": {"gte": 5},
        "rating": {"lte": 3}
    }
)

# Equality operators
equality = m.search(
    "specific content",
    user_id="alice",
    filters={
        "status": {"eq": "active"},
        "archived": {"ne": True}
    }
)

# In / Not in operators
listed = m.search(
    "multi-category search",
    user_id="alice",
    filters={
        "category": {"in": ["food", "travel", "entertainment", "work"]},
        "status": {"nin": ["deleted", "archived"]}
    }
)

# Text matching operators
text = m.search(
    "content search",
    user_id="alice",
    filters={
        "title": {"contains": "meeting"},
        "description": {"icontains": "important"},
        "tags": {"contains": "urgent"}
    }
)

# Match any value for a field
wildcard = m.search(
    "all with category",
    user_id="alice",
    filters={
        "category": "*"
    }
)

# Logical AND
logical_and = m.search(
    "complex query",
    user_id="alice",
    filters={
        "AND": [
            {"category": "work"},
            {"priority": {"gte": 7}},
            {"status": {"ne": "completed"}}
        ]
    }
)

# Logical OR
logical_or = m.search(
    "flexible query",
    user_id="alice",
    filters={
        "OR": [
            {"category": "urgent"},
            {"priority": {"gte": 9}},
            {"deadline": {"contains": "today"}}
        ]
    }
)

# Logical NOT
logical_not = m.search(
    "exclusion query",
    user_id="alice",
    filters={
        "NOT": [
            {"category": "archived"},
            {"status": "deleted"}
        ]
    }
)

# Complex nested logic
nested = m.search(
    "advanced query",
    user_id="alice",
    filters={
        "AND": [
            {
                "OR": [
                    {"category": "work"},
                    {"category": "personal"}
                ]
            },
            {"priority": {"gte": 5}},
            {
                "NOT": [
                    {"status": "archived"}
                ]
            }
        ]
    }
)

# Find recent unresolved tickets
tickets = m.search(
    "pending support issues",
    agent_id="support_bot",
    filters={
        "AND": [
            {"ticket_status": {"ne": "resolved"}},
            {"priority": {"in": ["high", "critical"]}},
            {"created_date": {"gte": "2024-01-01"}},
            {
                "NOT": [
                    {"category": "spam"}
                ]
            }
        ]
    }
)

try:
    invalid = m.search(
        "test query",
        user_id="alice",
        filters={
            "invalid_operator": {"unknown": "value"}
        }
    )
except ValueError as e:
    print(f"Filter error: {e}")
    invalid = m.search(
        "test query",
        user_id="alice",
        filters={"category": "general"}
    )
"""


def _texts(res: dict[str, Any]) -> set[str]:
    return {i["memory"] for i in res["results"]}


def test_the_metadata_filtering_examples_select_what_the_page_says(home: Path):
    v = _run(SETUP + FILTERING)
    seats, meeting, taxes, spam = ("I prefer window seats on long flights", "Quarterly planning meeting is important",
                                   "Finished the tax return", "Old spam about a prize")
    assert _texts(v["simple"]) == {seats}
    assert _texts(v["compare"]) == {seats}
    assert _texts(v["equality"]) == {seats, meeting}
    assert _texts(v["listed"]) == {meeting, taxes}
    assert _texts(v["text"]) == {meeting}
    assert _texts(v["wildcard"]) == {seats, meeting, taxes, spam}
    assert _texts(v["logical_and"]) == {meeting}
    assert _texts(v["logical_or"]) == {taxes}
    assert _texts(v["logical_not"]) == {seats, meeting, taxes}
    assert _texts(v["nested"]) == {meeting, taxes}
    assert _texts(v["tickets"]) == {"Ticket 12 about a broken login"}
    assert v["invalid"] == {"results": []}


def test_mem0_argument_errors_are_value_errors(home: Path):
    m = compat.Memory()
    with pytest.raises(ValueError, match="at least one of user_id, agent_id or run_id"):
        m.add("I like tea")
    with pytest.raises(ValueError, match="unknown operator"):
        m.search("tea", user_id="u", filters={"k": {"like": "x"}})
    with pytest.raises(ValueError, match="user_id is 'u' but filters say 'v'"):
        m.get_all(user_id="u", filters={"user_id": "v"})
    assert m.get("no-such-id") is None
    m.close()


def test_from_config_reads_what_applies(tmp_path: Path, caplog: pytest.LogCaptureFixture):
    """mem0's configuration dict: the memfold section and an OpenAI-compatible LLM are read, a
    vector store memfold does not use is named in the log."""
    m = compat.Memory.from_config({
        "memfold": {"root": str(tmp_path / "ws")},
        "vector_store": {"provider": "qdrant", "config": {"host": "localhost", "port": 6333}},
        "llm": {"provider": "openai", "config": {"model": "gpt-4.1-nano", "openai_base_url": "http://127.0.0.1:9/v1"}},
    })
    assert m.native.settings.root == (tmp_path / "ws").resolve()
    assert m.native.settings.llm.model == "gpt-4.1-nano" and m.native.settings.llm.base_url == "http://127.0.0.1:9/v1"
    assert "vector_store 'qdrant' does not apply" in caplog.text
    m.close()
    with pytest.raises(ValueError, match="must be a dict"):
        compat.Memory.from_config("qdrant")  # type: ignore[arg-type]


# https://docs.mem0.ai/open-source/features/async-memory (the same calls, awaited)
ASYNC = """
import asyncio
from mem0 import AsyncMemory

async def main():
    memory = AsyncMemory()
    await memory.add([{"role": "user", "content": "I'm travelling to SF"}], user_id="alice")
    results = await memory.search("Where am I travelling?", user_id="alice")
    everything = await memory.get_all(user_id="alice")
    return results, everything

results, everything = asyncio.run(main())
"""


def test_the_async_memory_example_runs(home: Path):
    v = _run(ASYNC)
    assert any("SF" in i["memory"] for i in v["results"]["results"])
    assert v["everything"]["results"]


def test_many_concurrent_mem0_async_calls(home: Path):
    async def main() -> list[dict[str, Any]]:
        m = compat.AsyncMemory(max_workers=3)
        await asyncio.gather(*(m.add(f"note {i} about tea number {i}", user_id=f"u{i % 3}") for i in range(12)))
        found = await asyncio.gather(*(m.get_all(user_id=f"u{i}") for i in range(3)))
        m.close()
        return found
    found = asyncio.run(main())
    assert sorted(len(f["results"]) for f in found) == [4, 4, 4]


def test_native_update_with_a_text_where_the_user_goes_is_a_type_error(home: Path):
    m = compat.Memory()
    mid = m.add("I like cats", user_id="alice")["results"][0]["id"]
    with pytest.raises(TypeError, match=r"'I like dogs' was given as user_id .* content='I like dogs'"):
        m.native.update(mid, "I like dogs")
    with pytest.raises(ArgumentError):
        m.native.update(mid, content="a", data="b")
    assert m.native.update(mid, data="I like dogs").content == "I like dogs"
    m.close()


def test_from_config_with_pgvector_uses_the_postgresql_index(tmp_path: Path, pg_dsn: str):
    """mem0's ``vector_store`` of provider ``pgvector`` becomes memfold's PostgreSQL index; the
    metadata filtering examples select the same memories there."""
    m = compat.Memory.from_config({"memfold": {"root": str(tmp_path / "ws")},
                                   "vector_store": {"provider": "pgvector", "config": {"connection_string": pg_dsn}}})
    assert m.native.settings.index.backend == "postgres"
    m.add("Quarterly planning meeting is important", user_id="alice", metadata={"category": "work", "priority": 8})
    m.add("Buy oolong tea", user_id="alice", metadata={"category": "shopping", "priority": 2})
    found = m.search("meeting", user_id="alice", filters={"AND": [{"category": "work"}, {"priority": {"gte": 7}}]})
    assert [i["memory"] for i in found["results"]] == ["Quarterly planning meeting is important"]
    assert [i["memory"] for i in m.get_all(user_id="alice", filters={"priority": {"lt": 5}})["results"]] == [
        "Buy oolong tea"]
    m.close()
