"""The pure dedupe planner (``engine/write/dedupe.py``) with both deciders: the rule (newest wins)
and the LLM decider against the scripted OpenAI-compatible server."""

from __future__ import annotations

import json
from datetime import datetime, timezone

import numpy as np

from memfold.config import LLMSettings
from memfold.engine.llm.llm_calls import LLMCalls
from memfold.engine.write import dedupe
from memfold.engine.write.dedupe import Absorb, Candidate, KeepBoth, Merge, Neighbours, Origin, Replace, Verdict
from memfold.engine.write.merge import LlmDecider
from memfold.models import EPISODIC, MemoryRecord, MemoryType
from memfold.providers.chat import make_chat_model

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
X, Y = np.array([1.0, 0.0, 0.0], np.float32), np.array([0.0, 1.0, 0.0], np.float32)
NEAR_X = np.array([0.96, 0.28, 0.0], np.float32)  # cosine 0.96 with X


def record(rid: str, content: str, *, file: str = "MEMORY.md", src: tuple[str, ...] = (), importance: float = 0.5,
           active: bool = True) -> MemoryRecord:
    return MemoryRecord(id=rid, user_id="u", memory_type=MemoryType.FACT, content=content, created_at=T0,
                        updated_at=T0, importance=importance, source_ids=src, file=file, is_active=active)


def near(stored: list[MemoryRecord], rows: list[list[tuple[str, float]]]) -> Neighbours:
    return Neighbours(rows, {r.id: r for r in stored}, 0.85)


def test_rule_decider_plans_absorb_replace_and_new_records():
    old_tea = record("m1", "I like green tea", src=("s1",))
    old_job = record("m2", "I work at TechCorp")
    cands = [Candidate(record("c1", "i like green tea ", src=("s2",), importance=0.9), Origin.TEXT),
             Candidate(record("c2", "I work at TechCorp as an engineer"), Origin.EXTRACTED),
             Candidate(record("c3", "My cat is called Tom"), Origin.EXTRACTED)]
    vecs = np.stack([X, Y, np.array([0.0, 0.0, 1.0], np.float32)])
    plan = dedupe.plan(cands, vecs, near([old_tea, old_job], [[("m1", 0.99)], [("m2", 0.9)], []]),
                       dedupe.RuleDecider())
    assert [c.record.id for c in plan.store] == ["c2", "c3"] and plan.vectors.shape == (2, 3)
    absorb, replace = plan.actions
    assert isinstance(absorb, Absorb) and absorb.old is old_tea
    assert absorb.updated.id == "m1" and absorb.updated.source_ids == ("s1", "s2") and absorb.updated.importance == 0.9
    assert isinstance(replace, Replace) and replace.old is old_job and replace.new.id == "c2"
    assert replace.decision is dedupe.NEWEST_WINS and replace.decision.relation == "contradicts"
    assert not replace.decision.by_llm


def test_planner_within_one_call_and_across_kinds():
    turn = record("t1", "Haha, sounds great!", file=EPISODIC, src=("D1:1",))
    cands = [Candidate(record("c1", "I like green tea"), Origin.EXTRACTED),
             Candidate(record("c2", "I like green tea a lot"), Origin.EXTRACTED),  # near c1, other words
             Candidate(record("c3", "I like green tea", src=("s3",)), Origin.EXTRACTED),  # c1's words
             Candidate(record("c4", "Haha, sounds great!!"), Origin.EXTRACTED),  # near a turn: not its twin
             Candidate(record("c5", "haha, sounds good", file=EPISODIC, src=("D1:2",)), Origin.TURN)]
    vecs = np.stack([X, NEAR_X, X, Y, Y])
    plan = dedupe.plan(cands, vecs, near([turn], [[], [], [], [("t1", 0.95)], [("t1", 0.9)]]), dedupe.RuleDecider())
    assert [c.record.id for c in plan.store] == ["c1", "c2", "c4"]
    assert plan.store[0].record.source_ids == ("s3",)  # c3 absorbed into the earlier candidate c1
    absorb, both = plan.actions
    # an episodic turn close to a stored turn is absorbed, even with other words
    assert isinstance(absorb, Absorb) and absorb.old is turn and absorb.updated.source_ids == ("D1:1", "D1:2")
    assert isinstance(both, KeepBoth) and both.old.id == "c1" and both.new.id == "c2" and both.decision is None


def test_planner_ignores_archived_and_far_memories():
    archived = record("m1", "I like green tea", active=False)
    cands = [Candidate(record("c1", "I like green tea"), Origin.TEXT)]
    plan = dedupe.plan(cands, np.stack([X]), near([archived], [[("m1", 0.99)]]), dedupe.RuleDecider())
    assert [c.record.id for c in plan.store] == ["c1"] and plan.actions == []
    plan = dedupe.plan(cands, np.stack([X]), near([record("m2", "x")], [[("m2", 0.5)]]), dedupe.RuleDecider())
    assert plan.actions == []


def _decider(llm_server, embedder, max_calls: int = 8) -> LlmDecider:
    chat = make_chat_model(LLMSettings(provider="openai", base_url=llm_server.base_url, model="scripted",
                                       timeout=1.0, max_retries=0, backoff=0.01))
    return LlmDecider(LLMCalls(chat, max_calls), embedder, "en")


def test_llm_decider_merge_one_call_per_memory_and_changed_memories(llm_server, embedder):
    old = record("m1", "The user works at TechCorp", src=("s1",))
    merged_text = "The user is a data engineer at TechCorp"
    llm_server.script(json.dumps({"action": "merge", "reason": "adds the role", "merged_content": merged_text}))
    cands = [Candidate(record("c1", "The user works at TechCorp as a data engineer", src=("s2",)), Origin.TEXT),
             Candidate(record("c2", "The user works at TechCorp since 2020"), Origin.EXTRACTED),
             Candidate(record("c3", "The user lives in Berlin now"), Origin.KEPT)]
    width = embedder.embed(["x"]).shape[1]
    vecs = np.stack([np.pad(v, (0, width - 3)) for v in (X, NEAR_X, NEAR_X)])
    neighbours = near([old, record("m3", "The user lives in Berlin")], [[("m1", 0.9)], [("m1", 0.9)], [("m3", 0.9)]])
    decider = _decider(llm_server, embedder)
    assert decider.prepare(cands, neighbours) == []
    assert len(llm_server.chat_requests()) == 1  # one question about m1; none for a kept note (near m3)
    plan = dedupe.plan(cands, vecs, neighbours, decider)
    merge, both2, both3 = plan.actions
    assert isinstance(merge, Merge) and merge.old is old and merge.new.content == merged_text
    assert merge.incoming == cands[0].record.content and merge.new.source_ids == ("s1", "s2")
    assert merge.decision.by_llm and merge.decision.verdict is Verdict.MERGE and merge.decision.relation == "refines"
    assert np.allclose(plan.vectors[0], embedder.embed([merged_text])[0], atol=1e-5)  # the merged text's vector
    for both, cid in ((both2, "c2"), (both3, "c3")):
        assert isinstance(both, KeepBoth) and both.new.id == cid and both.decision is not None
        assert both.decision.verdict is Verdict.KEEP_BOTH and "no LLM decision" in both.decision.rule
    # the stored memory changed after the question: the answer does not apply to it
    changed = near([old.with_(content="The user works at Acme")], [[("m1", 0.9)]])
    (both,) = dedupe.plan(cands[:1], vecs[:1], changed, decider).actions
    assert isinstance(both, KeepBoth) and "changed meanwhile" in both.decision.rule


def test_llm_decider_replace_and_failures(llm_server, embedder):
    a, b = record("m1", "The meeting is on Friday"), record("m2", "My car is red")
    llm_server.script(json.dumps({"action": "replace", "reason": "moved"}), "not json at all")
    cands = [Candidate(record("c1", "The meeting is on Monday"), Origin.TEXT),
             Candidate(record("c2", "My car is blue"), Origin.EXTRACTED)]
    neighbours = near([a, b], [[("m1", 0.9)], [("m2", 0.9)]])
    decider = _decider(llm_server, embedder)
    warnings = decider.prepare(cands, neighbours)
    assert len(warnings) == 1 and "LLM merge answer unusable" in warnings[0] and "m2" in warnings[0]
    replace, both = dedupe.plan(cands, np.stack([X, Y]), neighbours, decider).actions
    assert isinstance(replace, Replace) and replace.old is a and replace.decision.by_llm
    assert replace.decision.reason == "moved" and replace.decision.relation == "contradicts"
    assert isinstance(both, KeepBoth) and both.old is b and not both.decision.by_llm
    # the call cap: no question beyond it, both kept and said so
    capped = _decider(llm_server, embedder, max_calls=1)
    capped.calls.calls = 1
    warnings = capped.prepare(cands[:1], near([a], [[("m1", 0.9)]]))
    assert len(warnings) == 1 and "max_calls_per_operation" in warnings[0]
    assert len(llm_server.chat_requests()) == 2
