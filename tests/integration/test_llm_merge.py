"""Merge decisions (seed 003 ``_merge_or_update``) through the scripted server: replace and
merge archive the old memory with superseded_by and a relation, keep_both keeps both, and a
misbehaving LLM changes nothing that was stored."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memfold import Memory
from memfold.config import load_settings
from memfold.models import EPISODIC

from ..support.openai_server import Reply

OLD, NEW = "The user works at TechCorp", "The user works at TechCorp as a data engineer"
MERGED = "The user is a data engineer at TechCorp"


def llm_memory(root: Path, server, embedder, **llm) -> Memory:
    cfg = dict(provider="openai", base_url=server.base_url, model="scripted", timeout=1.0, max_retries=0,
               backoff=0.01)
    cfg.update(llm)
    return Memory(settings=load_settings(root, llm=cfg), embedder=embedder, policy={"dedupe_threshold": 0.75})


def active_contents(mem: Memory) -> list[str]:
    return sorted(r.content for r in mem.get_all() if r.file != EPISODIC)


def test_merge_archives_the_old_memory_and_search_returns_only_the_merged_one(root, llm_server, embedder):
    mem = llm_memory(root, llm_server, embedder)
    old = mem.add(OLD).added[0]
    assert llm_server.chat_requests() == []  # nothing similar yet: no call
    llm_server.script(json.dumps({"action": "merge", "reason": "the new one adds the role",
                                  "merged_content": MERGED}))
    res = mem.add(NEW)
    assert not res.warnings
    merged = res.added[0]
    assert merged.content == MERGED
    # one merge call, carrying both memories and the seed's answer fields
    (req,) = llm_server.chat_requests()
    prompt = req["body"]["messages"][1]["content"]
    assert OLD in prompt and NEW in prompt
    for word in ("replace", "merge", "keep_both", "merged_content"):
        assert word in prompt
    archived = mem.get(old.id)
    assert not archived.is_active and archived.superseded_by == merged.id
    assert active_contents(mem) == [MERGED]
    text = mem.show()
    assert MERGED in text and OLD + " " not in text.replace(MERGED, "")
    # history shows both texts
    old_hist = mem.history(old.id)
    assert [e.action for e in old_hist] == ["add", "archive"]
    assert old_hist[-1].old_content == OLD and old_hist[-1].detail["superseded_by"] == merged.id
    assert old_hist[-1].detail["new_content"] == MERGED and old_hist[-1].detail["reason"]
    (new_hist,) = mem.history(merged.id)
    assert new_hist.action == "merge" and new_hist.old_content == OLD and new_hist.new_content == MERGED
    assert new_hist.detail["incoming"] == NEW and new_hist.detail["supersedes"] == old.id
    assert {(r["relation"]) for r in mem.relations(merged.id)} == {"refines"}
    hits = mem.search("Where does the user work?", limit=5)
    assert [h.record.id for h in hits if h.record.file != EPISODIC] == [merged.id]
    mem.close()


def test_replace_archives_the_old_memory_with_a_contradicts_relation(root, llm_server, embedder):
    mem = llm_memory(root, llm_server, embedder)
    old = mem.add("The user drinks oat milk").added[0]
    llm_server.script(json.dumps({"action": "replace", "reason": "newer", "merged_content": ""}))
    new = mem.add("The user drinks almond milk").added[0]
    assert new.content == "The user drinks almond milk"
    assert mem.get(old.id).superseded_by == new.id and not mem.get(old.id).is_active
    assert active_contents(mem) == ["The user drinks almond milk"]
    rel = mem.relations(new.id)
    assert rel and rel[0]["relation"] == "contradicts"
    assert mem.history(new.id)[0].action == "replace"
    mem.close()


def test_keep_both_keeps_both(root, llm_server, embedder):
    mem = llm_memory(root, llm_server, embedder)
    mem.add("The user drinks oat milk")
    llm_server.script(json.dumps({"action": "keep_both", "reason": "different drinks"}))
    mem.add("The user drinks almond milk")
    assert active_contents(mem) == ["The user drinks almond milk", "The user drinks oat milk"]
    mem.close()


@pytest.mark.parametrize("reply", [
    Reply("not json at all"),
    Reply('{"action": "destroy", "reason": "x"}'),
    Reply('{"action": "merge", "reason": "x"}'),  # merge without merged_content
    Reply('{"action": "merge", "reason": "x", "merged_content": "works at TechCorp, password is Tr0ub4dor&3"}'),
    Reply("down", status=500),
    Reply("slow", delay=1.5),
])
def test_a_misbehaving_llm_keeps_both_and_changes_nothing(root, llm_server, embedder, reply):
    mem = llm_memory(root, llm_server, embedder, timeout=0.4)
    old = mem.add(OLD).added[0]
    before = mem.show()
    llm_server.script(reply)
    res = mem.add(NEW)
    assert res.warnings and "kept both" in res.warnings[0]
    assert mem.get(old.id).is_active and mem.get(old.id).content == OLD
    assert active_contents(mem) == sorted([OLD, NEW])
    assert mem.relations(old.id) == []
    after = mem.show().splitlines()
    assert all(line in after for line in before.splitlines())  # the old bullet is untouched
    assert "Tr0ub4dor" not in mem.show()
    mem.close()


def test_without_an_llm_the_deterministic_rule_applies(root, embedder):
    mem = Memory(root=root, embedder=embedder, policy={"dedupe_threshold": 0.75})
    old = mem.add("The user drinks oat milk").added[0]
    new = mem.add("The user drinks almond milk").added[0]
    assert mem.get(old.id).superseded_by == new.id
    assert mem.history(old.id)[-1].detail["rule"] == "newest wins"
    assert mem.relations(new.id)[0]["relation"] == "contradicts"
    assert mem.stats()["llm_usage"]["calls"] == 0
    mem.close()


def test_same_words_need_no_call(root, llm_server, embedder):
    mem = llm_memory(root, llm_server, embedder)
    mem.add("The user drinks oat milk")
    res = mem.add("the user drinks oat milk")
    assert res.merged and not res.added
    assert llm_server.chat_requests() == []
    mem.close()


def test_at_most_one_merge_call_per_similar_memory(root, llm_server, embedder):
    mem = llm_memory(root, llm_server, embedder)
    old = mem.add("The user drinks oat milk").added[0]
    extracted = [{"memory_type": "preference", "content": "The user drinks almond milk", "structured_data": {},
                  "importance_score": 0.7},
                 {"memory_type": "preference", "content": "The user drinks almond milk in the morning",
                  "structured_data": {}, "importance_score": 0.7}]
    llm_server.script(json.dumps(extracted), json.dumps({"action": "replace", "reason": "switched"}))
    llm_server.default_reply = Reply(json.dumps({"action": "replace", "reason": "should not be asked"}))
    res = mem.add([{"role": "user", "content": "I switched to almond milk, I have it every morning."}])
    purposes = mem.stats()["llm_usage"]["last"]["purposes"]
    assert purposes == {"extract": 1, "merge": 1}
    assert len(llm_server.chat_requests()) == 2
    assert mem.get(old.id).superseded_by == next(r.id for r in res.added if r.content == extracted[0]["content"])
    assert "The user drinks almond milk in the morning" in active_contents(mem)
    mem.close()


def test_the_call_cap_keeps_both_and_says_so(root, llm_server, embedder):
    mem = llm_memory(root, llm_server, embedder, max_calls_per_operation=1)
    mem.add("The user drinks oat milk")
    llm_server.script(json.dumps([{"memory_type": "preference", "content": "The user drinks almond milk",
                                   "structured_data": {}, "importance_score": 0.7}]))
    llm_server.default_reply = Reply(json.dumps({"action": "replace", "reason": "must not be asked"}))
    res = mem.add([{"role": "user", "content": "Almond milk from now on."}])
    assert len(llm_server.chat_requests()) == 1
    assert any("max_calls_per_operation" in w for w in res.warnings)
    assert active_contents(mem) == ["The user drinks almond milk", "The user drinks oat milk"]
    mem.close()


def test_the_call_cap_stops_the_extraction_retry(root, llm_server, embedder):
    mem = llm_memory(root, llm_server, embedder, max_calls_per_operation=1)
    llm_server.script("garbage", json.dumps({"memories": []}))
    res = mem.add([{"role": "user", "content": "I keep bees on my balcony."}])
    assert len(llm_server.chat_requests()) == 1
    assert "max_calls_per_operation" in res.warnings[0]
    assert any("bees" in r.content for r in res.added if r.file.startswith("memory/"))
    mem.close()
