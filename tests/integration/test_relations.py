"""Relations you can use: added, listed and removed through Python and the tools; `supports` left
by the write path where an LLM judges two near-duplicates distinct memories, with the pair's
cosine as strength; related memories shown with a hit; kept by a reindex; carried by export/import."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memfold import Memory
from memfold.config import load_settings
from memfold.errors import InvalidInputError, NotFoundError
from memfold.tools.dispatch import call

from ..support.openai_server import Reply


def three(mem: Memory) -> tuple[str, str, str]:
    mem.init("alice", "en")
    home = mem.add("I live in Lisbon", "alice").added[0].id
    office = mem.add("My office is by the Tagus river", "alice").added[0].id
    old = mem.add("I used to live in Porto", "alice").added[0].id
    return home, office, old


def test_relations_round_trip_through_python_and_the_tools(mem: Memory) -> None:
    home, office, old = three(mem)
    got = mem.relate(office, home, "supports", "alice", strength=0.8)
    assert (got["source_id"], got["target_id"], got["relation"], got["strength"]) == (office, home, "supports", 0.8)
    mem.relate(office, home, "supports", "alice", strength=0.7)  # again: its strength is replaced, not a copy
    assert [(r["relation"], r["strength"]) for r in mem.relations(home, "alice")] == [("supports", 0.7)]

    res = call(mem, "memory_relate", {"action": "add", "memory_id": home, "other_id": old, "relation": "refines",
                                      "strength": 0.6}, user_id="alice")
    assert res["ok"] and res["added"], res
    listed = call(mem, "memory_relate", {"memory_id": home}, user_id="alice")
    assert [(r["relation"], r["direction"], r["id"]) for r in listed["related"]] == [
        ("supports", "from", office), ("refines", "to", old)]  # strongest first
    assert listed["related"][0]["content"] == "My office is by the Tagus river"

    hits = mem.search("where do I live", "alice", related=True)
    by_id = {h.record.id: h for h in hits}
    assert [r["id"] for r in by_id[home].related] == [office, old]
    assert by_id[home].to_dict()["related"][0]["relation"] == "supports"
    assert all(h.related is None for h in mem.search("where do I live", "alice"))  # only when asked

    gone = call(mem, "memory_relate", {"action": "remove", "memory_id": home, "other_id": old}, user_id="alice")
    assert gone["removed"] == 1 and [r["id"] for r in gone["related"]] == [office]
    assert mem.unrelate(office, home, "contradicts", "alice") == 0  # another kind: nothing removed
    assert mem.unrelate(office, home, None, "alice") == 1
    assert mem.relations(home, "alice") == []


def test_bad_relations_are_refused_and_nothing_is_stored(mem: Memory) -> None:
    home, office, _ = three(mem)
    with pytest.raises(InvalidInputError, match="unknown relation 'likes'"):
        mem.relate(office, home, "likes", "alice")
    with pytest.raises(InvalidInputError, match="strength"):
        mem.relate(office, home, "supports", "alice", strength=1.5)
    with pytest.raises(InvalidInputError, match="itself"):
        mem.relate(home, home, "supports", "alice")
    with pytest.raises(NotFoundError, match="nope"):
        mem.relate(home, "nope", "supports", "alice")
    mem.init("bob")
    with pytest.raises(NotFoundError):  # another namespace's memory cannot be related to
        mem.relate(home, office, "supports", "bob")
    res = call(mem, "memory_relate", {"action": "add", "memory_id": home, "other_id": office}, user_id="alice")
    assert res["error"]["code"] == "invalid_input" and "relation" in res["error"]["message"]
    assert mem.relations(home, "alice") == []


def test_relations_survive_a_reindex_and_travel_with_export_and_import(mem: Memory, root: Path, embedder) -> None:
    home, office, old = three(mem)
    mem.relate(office, home, "supports", "alice", strength=0.8)
    mem.relate(home, old, "refines", "alice", strength=0.6)
    mem.reindex("alice")
    assert {(r["source_id"], r["relation"], r["strength"]) for r in mem.relations(home, "alice")} == {
        (office, "supports", 0.8), (home, "refines", 0.6)}
    rows = list(mem.export("alice"))
    assert {r["id"]: r.get("relations") for r in rows}[office] == [
        {"target_id": home, "relation": "supports", "strength": 0.8}]
    other = Memory(root=root.parent / "other", embedder=embedder)
    try:
        assert other.import_records(rows) == 3
        assert {(r["source_id"], r["target_id"], r["relation"], r["strength"])
                for r in other.relations(home, "alice")} == {(office, home, "supports", 0.8),
                                                              (home, old, "refines", 0.6)}
        bad = [dict(rows[0], relations=[{"target_id": home, "relation": "likes"}])]
        with pytest.raises(InvalidInputError, match="unknown relation"):
            other.import_records(bad)
    finally:
        other.close()
    mem.delete(office, "alice")  # a deleted memory takes its relations along
    assert [r["relation"] for r in mem.relations(home, "alice")] == ["refines"]


def test_an_llm_keep_both_leaves_supports_with_the_pairs_cosine(root: Path, llm_server, embedder) -> None:
    llm = dict(provider="openai", base_url=llm_server.base_url, model="scripted", timeout=5.0, max_retries=0)
    mem = Memory(settings=load_settings(root, llm=llm), embedder=embedder, policy={"dedupe_threshold": 0.75})
    try:
        old = mem.add("The user works at TechCorp", "alice").added[0]
        llm_server.script(json.dumps({"action": "keep_both", "reason": "both true, the second adds the role"}))
        new = mem.add("The user works at TechCorp as a data engineer", "alice").added[0]
        (rel,) = mem.relations(old.id, "alice")
        assert (rel["source_id"], rel["target_id"], rel["relation"]) == (new.id, old.id, "supports")
        cosine = float(embedder.embed([old.content])[0] @ embedder.embed([new.content])[0])
        assert 0.75 <= rel["strength"] < 1.0 and rel["strength"] == pytest.approx(cosine, abs=1e-3)
        llm_server.script(Reply("not json at all"))  # an unusable answer keeps both but says nothing of agreement
        third = mem.add("The user works at TechCorp in Berlin", "alice").added[0]
        assert [r["relation"] for r in mem.relations(third.id, "alice")] == []
    finally:
        mem.close()


def test_a_replace_relation_has_the_pairs_cosine_as_strength(root: Path, embedder) -> None:
    mem = Memory(root=root, embedder=embedder, policy={"dedupe_threshold": 0.75})
    try:
        old = mem.add("The user works at TechCorp", "alice").added[0]
        new = mem.add("The user works at TechCorp as a data engineer", "alice").added[0]  # newest wins: contradicts
        (rel,) = mem.relations(new.id, "alice")
        assert rel["relation"] == "contradicts" and rel["target_id"] == old.id
        cosine = float(embedder.embed([old.content])[0] @ embedder.embed([new.content])[0])
        assert rel["strength"] == pytest.approx(cosine, abs=1e-3) and rel["strength"] < 1.0
    finally:
        mem.close()
