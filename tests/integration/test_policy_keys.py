"""Every policy key in the README does what the README says (issue 14 item 8): one test per key,
named ``test_key_<key>``, through the public API with the fast hash embedder. Keys whose work
is tested next to its feature are listed in ``TESTED_ELSEWHERE`` with that test; a key with
neither fails ``test_every_policy_key_has_a_test``."""

from __future__ import annotations

import importlib
import json
import math
import os
import time
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path

import pytest

from memfold import Memory
from memfold.config import load_settings
from memfold.engine.conversation.context import MESSAGE_OVERHEAD
from memfold.maintenance.evolution import EVOLVE_EVERY
from memfold.models import utcnow
from memfold.policy import Policy, policy_keys
from memfold.text.tokens import count_tokens

from ..support.hash_embedder import HashEmbedder

# key -> the helper branch that builds what it does (the merger adds test_key_<key> and removes it)
# keys whose behaviour is tested next to the feature: key -> (module, test function)
TESTED_ELSEWHERE = {
    "long_term_compress_char_threshold": ("test_maintenance_compress",
                                          "test_threshold_zero_or_not_exceeded_means_no_compression"),
    "old_memory_days": ("test_maintenance_compress", "test_old_memory_policy_keys"),
    "old_memory_access_below": ("test_maintenance_compress", "test_old_memory_policy_keys"),
    "old_memory_merge_days": ("test_maintenance_compress", "test_old_memory_policy_keys"),
    "memory_tidy_percent": ("test_maintenance_tidy", "test_tidy_instruction_appears_when_memory_approaches_the_limit"),
    "enabled": ("test_tools", "test_memory_off_in_the_config_and_on_for_one_user"),
    "min_score": ("test_relevance_floor", "test_floor_is_a_policy_key"),
    "session_key_weight": ("test_session_keys", "test_key_session_key_weight"),
    "score_bonus_time": ("test_rank_cues", "test_key_score_bonus_time_in_chinese"),
    "query_speaker_mask": ("test_rank_speakers", "test_mask_moves_the_speakers_own_turn_up"),
    "usage_max_entries": ("test_usage", "test_the_record_is_bounded_by_count_and_age"),
    "usage_max_age_days": ("test_usage", "test_the_record_is_bounded_by_count_and_age"),
    "word_match_weight": ("test_rank_wordvec", "test_word_match_moves_a_memory_in_other_words_up"),
    "e5_weight": ("test_search_profile", "test_search_uses_the_second_model"),
    "session_ttl_minutes": ("test_session_end", "test_an_abandoned_session_is_ended_when_another_one_opens"),
}
ONLY_SCORE = {"score_weight_similarity": 0.0, "score_weight_time": 0.0, "score_weight_importance": 0.0}


@contextmanager
def memory(root: Path, **policy):
    m = Memory(root=root, embedder=HashEmbedder(), policy=policy)
    try:
        yield m
    finally:
        m.close()


@pytest.mark.parametrize("key", policy_keys())
def test_every_policy_key_has_a_test(key: str):
    if key in TESTED_ELSEWHERE:
        module, name = TESTED_ELSEWHERE[key]
        assert callable(getattr(importlib.import_module(f"tests.integration.{module}"), name, None)), (key, module, name)
        return
    assert callable(globals().get(f"test_key_{key}")), f"no test_key_{key} in {__name__}"


# ---- retrieval ------------------------------------------------------------------------------
def test_key_retrieve_limit(root: Path):
    """memories returned by a query"""
    with memory(root) as m:
        for i in range(14):
            m.add(f"apple orchard fact {i}: row {i} has {i + 3} trees", "u", infer=False)
        assert len(m.retrieve("apple orchard", "u").hits) == 10
    with memory(root, retrieve_limit=3) as m:
        assert len(m.retrieve("apple orchard", "u").hits) == 3
        assert len(m.search("apple orchard", "u")) == 3


def test_key_recent_days(root: Path):
    """days of daily notes added to a retrieval"""
    now = utcnow()
    with memory(root) as m:
        for back in (0, 2, 5):
            m.add_note(f"note written {back} days ago", "u", when=now - timedelta(days=back))
        assert [n.text for n in m.retrieve(None, "u").recent_notes] == ["- note written 2 days ago",
                                                                        "- note written 0 days ago"]
    with memory(root, recent_days=6) as m:
        assert len(m.retrieve("anything", "u").recent_notes) == 3
    with memory(root, recent_days=0) as m:
        assert m.retrieve(None, "u").recent_notes == ()


# ---- sessions -------------------------------------------------------------------------------
def test_key_session_summary_message_threshold(root: Path):
    """messages in a session that trigger a summary"""
    with memory(root, session_summary_message_threshold=4) as m:
        s = m.session("s", "u", memory_enabled=False)
        for i in range(4):
            assert not s.add_message("user", f"message {i}").summarized
        up = s.add_message("user", "message 4")
        assert up.summarized and up.reason == "messages"


def test_key_session_summary_token_percent(root: Path):
    """% of context_window that triggers a summary"""
    text = "the quick brown fox jumps over the lazy dog " * 12  # about 110 tokens a message
    base = {"context_window": 2048, "session_summary_message_threshold": 1000}
    with memory(root) as m:
        low = m.session("low", "u", memory_enabled=False, policy={**base, "session_summary_token_percent": 20})
        high = m.session("high", "u", memory_enabled=False, policy={**base, "session_summary_token_percent": 90})
        ups = [low.add_message("user", text) for _ in range(4)]  # 4 x ~114 tokens > 20 % of 2048
        assert not any(u.summarized for u in ups[:3]) and ups[3].summarized and ups[3].reason == "tokens"
        assert not any(high.add_message("user", text).summarized for _ in range(4))


def test_key_session_summary_keep_count(root: Path):
    """messages kept verbatim after a summary"""
    with memory(root) as m:
        for keep in (1, 3):
            s = m.session(f"k{keep}", "u", memory_enabled=False,
                          policy={"session_summary_message_threshold": 5, "session_summary_keep_count": keep})
            for i in range(6):
                s.add_message("user", f"message number {i}")
            assert [x["content"] for x in s.messages] == [f"message number {i}" for i in range(6 - keep, 6)]


def _turns(s) -> None:
    for q, a in (("Where is the Kyoto hotel booked?", "The Sakura hotel in Kyoto."),
                 ("What is my dentist's phone number?", "Dentist phone: 555 0101."),
                 ("Which bike did I buy last spring?", "A blue gravel bike.")):
        s.add_message("user", q)
        s.add_message("assistant", a)


def test_key_session_relevant_history_limit(root: Path):
    """relevant past turns injected per query (0 = off)"""
    with memory(root) as m:
        off = m.session("off", "u", memory_enabled=False, policy={"session_summary_message_threshold": 100})
        _turns(off)
        assert off.context("Which hotel in Kyoto again?").history_used == 6  # 0 = off: the recent messages
        on = m.session("on", "u", memory_enabled=False,
                       policy={"session_summary_message_threshold": 100, "session_relevant_history_limit": 1})
        _turns(on)
        ctx = on.context("Which hotel in Kyoto again?")
        assert ctx.history_used == 2  # one turn: the question and its answer
        assert "Sakura" in json.dumps(ctx.messages) and "Dentist" not in json.dumps(ctx.messages)


def test_key_session_relevant_fallback_keep(root: Path):
    """recent messages kept when no turn is relevant"""
    pol = {"session_summary_message_threshold": 100, "session_relevant_history_limit": 2}
    with memory(root) as m:
        for keep in (0, 3):
            s = m.session(f"f{keep}", "u", memory_enabled=False, policy={**pol, "session_relevant_fallback_keep": keep})
            _turns(s)
            ctx = s.context("zebra crossing xylophone")
            assert ctx.history_used == keep
            assert [x["content"] for x in ctx.messages[1:-1]] == [x["content"] for x in s.messages[6 - keep:]][:keep]


def test_key_evolution_enabled(root: Path, llm_server):
    """let the LLM propose policy overrides"""
    llm_server.default_reply = None
    llm_server.script(json.dumps({"overrides": {"retrieve_limit": 12}}))
    llm = {"provider": "openai", "base_url": llm_server.base_url, "model": "scripted", "max_retries": 0}
    quiet = {"session_summary_message_threshold": 1000}
    for enabled in (False, True):
        settings = load_settings(root, llm=llm, memory={"evolution_enabled": enabled})
        with Memory(settings=settings, embedder=HashEmbedder()) as m:
            s = m.session(f"e{enabled}", "u", policy=quiet)
            for i in range(EVOLVE_EVERY):
                s.add_message("user", f"message {i}")
            m.evolution.join()  # the reflection runs in the background
            assert m.policy("u").retrieve_limit == (12 if enabled else 10)
    assert len(llm_server.chat_requests()) == 1


# ---- context --------------------------------------------------------------------------------
def test_key_memory_char_limit(root: Path):
    """cap on injected long-term text (head 70 % + tail 20 %)"""
    with memory(root) as m:
        for i in range(40):
            m.add(f"garden fact {i}: the {i}th rose bush was planted near the old stone wall", "u", infer=False)
    with memory(root, memory_char_limit=400, retrieve_limit=40) as m:
        ctx = m.session("s", "u").context("")
        assert ctx.truncated and ctx.memory_chars <= 400
        system = ctx.messages[0]["content"]
        assert "garden fact 0:" in system  # the head is kept
    with memory(root, memory_char_limit=100_000, retrieve_limit=40) as m:
        ctx = m.session("s2", "u").context("")
        assert not ctx.truncated and ctx.memory_chars > 2000


def test_key_max_recent_memories(root: Path):
    """length of an agent's pin list"""
    with memory(root, max_recent_memories=3) as m:
        for word in ("alpha", "bravo", "charlie", "delta", "echo"):
            m.add(f"the project codename is {word} for this quarter", "u", agent_id="planner", infer=False,
                  memory_type="fact")
        assert [x.split()[4] for x in m.recent_memories("planner", "u")] == ["charlie", "delta", "echo"]


def test_key_dedupe_threshold(root: Path, tmp_path: Path):
    """cosine at or above which a new memory is a near-duplicate"""
    a, b = "My favourite drink is green tea with honey", "My favourite drink is green tea with lemon"  # cosine 0.8
    with memory(tmp_path / "strict", dedupe_threshold=0.95) as m:
        m.add(a, "u", infer=False)
        m.add(b, "u", infer=False)
        assert sorted(r.content for r in m.get_all("u")) == [a, b]
    with memory(tmp_path / "loose", dedupe_threshold=0.75) as m:
        m.add(a, "u", infer=False)
        m.add(b, "u", infer=False)
        assert [r.content for r in m.get_all("u")] == [b]  # newest wins, the old one archived
        assert [r.content for r in m.get_all("u", include_archived=True) if not r.is_active] == [a]


# ---- ranking --------------------------------------------------------------------------------
def _two(m: Memory) -> None:
    m.add("the violin lesson is on friday at the music school", "u", infer=False, importance=0.2)
    m.add("violin", "u", infer=False, importance=0.9)


def _score_is(root: Path, weights, expect):
    with memory(root, **{**ONLY_SCORE, **weights}) as m:
        _two(m)
        hits = m.search("violin lesson friday", "u", record_access=False)
        for h in hits:
            assert h.score == pytest.approx(expect(h), abs=1e-6)
        return hits


def test_key_score_weight_similarity(root: Path):
    """weight of the fused similarity in the final score"""
    hits = _score_is(root, {"score_weight_similarity": 1.0}, lambda h: h.similarity)
    assert hits[0].record.content.startswith("the violin lesson")  # more of the query's words


def test_key_score_weight_importance(root: Path):
    """weight of the memory's importance"""
    hits = _score_is(root, {"score_weight_importance": 1.0}, lambda h: h.record.importance)
    assert hits[0].record.content == "violin"  # the important one first
    _score_is(root, {"score_weight_similarity": 0.5, "score_weight_importance": 0.25},
              lambda h: 0.5 * h.similarity + 0.25 * h.record.importance)


def _aged(m: Memory, days: float, content: str) -> None:
    at = (utcnow() - timedelta(days=days)).isoformat()
    m.import_records([{"id": f"aged{int(days)}", "user_id": "u", "memory_type": "fact", "content": content,
                       "created_at": at, "updated_at": at, "importance": 0.5}])


def test_key_score_weight_time(root: Path):
    """weight of exp(−days since last access / decay_tau_days)"""
    with memory(root, **{**ONLY_SCORE, "score_weight_time": 1.0}) as m:
        _aged(m, 60, "the violin was tuned")
        m.add("the violin was restrung", "u", infer=False, memory_type="fact")
        hits = m.search("violin", "u", record_access=False)
        assert hits[0].record.content == "the violin was restrung" and hits[0].score == pytest.approx(1.0, abs=1e-3)
        assert hits[1].score == pytest.approx(math.exp(-2), abs=1e-3)  # 60 days at tau 30
        m.search("tuned", "u", limit=1)  # an access makes it recent again
        assert m.search("violin", "u", record_access=False)[0].score == pytest.approx(1.0, abs=1e-3)


def test_key_decay_tau_days(root: Path):
    """time constant of the recency decay"""
    for tau in (10.0, 30.0, 120.0):
        with memory(root / str(tau), **{**ONLY_SCORE, "score_weight_time": 1.0, "decay_tau_days": tau}) as m:
            _aged(m, 30, "the cello was tuned")
            (hit,) = m.search("cello", "u", record_access=False)
            assert hit.score == pytest.approx(math.exp(-30 / tau), abs=1e-3)


def test_key_fusion_keyword_weight(root: Path):
    """share of the keyword score in the fused similarity (rest: vector)"""
    for w in (0.0, 0.55, 1.0):
        # score_bonus_time 0: "friday" is a time expression, and on a Friday the memories would gain the bonus
        with memory(root, fusion_keyword_weight=w, score_penalty_question=0.0, score_bonus_time=0.0) as m:
            if not m.get_all("u"):
                _two(m)
                m.add("friday music school parking", "u", infer=False)
            hits = m.search("violin lesson friday", "u", record_access=False)
            assert len(hits) == 3
            for h in hits:
                assert h.similarity == pytest.approx(w * h.keyword_score + (1 - w) * h.vector_score, abs=1e-6)


def test_key_candidate_pool_min(root: Path):
    """keyword and vector candidates fetched per side at least (else 2 × limit)"""
    with memory(root, dedupe_threshold=1.0) as m:  # 31 memories, none merged
        for i in range(30):
            m.add(f"tomato soup recipe {i}: tomato, tomato paste and tomato basil", "u", infer=False, importance=0.1)
        m.add("a note that mentions soup once among many other words about a long walk", "u", infer=False,
              importance=1.0)
        assert len(m.get_all("u")) == 31
    importance_only = {**ONLY_SCORE, "score_weight_importance": 1.0}
    with memory(root, **importance_only, candidate_pool_min=1) as m:  # 2 per side for limit 1
        assert m.search("tomato soup", "u", limit=1, record_access=False)[0].record.importance == 0.1
    with memory(root, **importance_only, candidate_pool_min=100) as m:  # every memory is a candidate
        assert m.search("tomato soup", "u", limit=1, record_access=False)[0].record.importance == 1.0


def test_key_score_bonus_speaker(root: Path):
    """similarity bonus when the query names the memory's speaker (0 = off)"""
    for bonus in (0.0, 0.2, 0.5):
        with memory(root, score_bonus_speaker=bonus) as m:
            if not m.get_all("u"):
                m.add("I adopted a grey cat", "u", infer=False, structured_data={"speaker": "Melanie"})
            (h,) = m.search("what did Melanie adopt", "u", record_access=False)
            fused = 0.55 * h.keyword_score + 0.45 * h.vector_score
            assert h.similarity == pytest.approx(fused + bonus, abs=1e-6)


def test_key_score_penalty_question(root: Path):
    """similarity penalty for a memory that is itself a question (0 = off)"""
    for penalty in (0.0, 0.1, 0.4):
        with memory(root, score_penalty_question=penalty) as m:
            if not m.get_all("u"):
                m.add("did you adopt a grey cat?", "u", infer=False)
            (h,) = m.search("grey cat adopted", "u", record_access=False)
            assert h.similarity == pytest.approx(0.55 * h.keyword_score + 0.45 * h.vector_score - penalty, abs=1e-6)


def test_key_query_last_line_weight(root: Path):
    """a multi-line query (conversation excerpt) is embedded whole plus this × its last line (0 = off)"""
    vector_only = {"fusion_keyword_weight": 0.0, "score_penalty_question": 0.0, "min_score": 0.0}

    def order(m: Memory, query: str) -> list[str]:
        return [h.record.content for h in m.search(query, "u", record_access=False)]

    with memory(root, **vector_only, query_last_line_weight=0.0) as m:
        m.add("bananas are yellow", "u", infer=False)
        m.add("cherries are red", "u", infer=False)
        m.add("about dates: they are brown", "u", infer=False)  # a third: scores are scaled over the candidates
        one = {h.record.content: h.vector_score
               for h in m.search("tell me about bananas\ntell me about cherries", "u", record_access=False)}
        two = {h.record.content: h.vector_score
               for h in m.search("tell me about cherries\ntell me about bananas", "u", record_access=False)}
        assert len(one) == 3 and one == pytest.approx(two)  # off: the order of the lines does not matter
    with memory(root, **vector_only, query_last_line_weight=4.0) as m:
        assert order(m, "tell me about bananas\ntell me about cherries")[0] == "cherries are red"
        assert order(m, "tell me about cherries\ntell me about bananas")[0] == "bananas are yellow"



KEYWORD_ONLY = {**ONLY_SCORE, "score_weight_similarity": 1.0, "fusion_keyword_weight": 1.0, "min_score": 0.0,
                "score_penalty_question": 0.0}


def _feedback_scenario(root: Path, user: str) -> None:
    target = "Rex chewed the slipper"

    def hits(m: Memory) -> list:
        return m.search("where does the dog play", user, limit=10, record_access=False)

    with memory(root, **KEYWORD_ONLY, keyword_feedback_weight=0.0) as m:
        for text in ("my dog Rex plays at the beach", "the dog Rex plays in the park every morning",
                     "Rex is a dog who plays fetch", target, "the train left at noon",
                     "a recipe for lentil soup", "the weather was cold in Oslo"):
            m.add(text, user, infer=False)
        off = {h.record.content: h.keyword_score for h in hits(m)}
        assert off.get(target, 0.0) == 0.0  # no query term: no keyword score
    with memory(root, **KEYWORD_ONLY, keyword_feedback_weight=0.5) as m:
        on = [h.record.content for h in hits(m)]
        assert on[3] == target  # "rex", shared by the three best hits, found it
        assert {h.record.content: h.keyword_score for h in hits(m)}[target] > 0
        excerpt = m.search("we talked about pets\nwhere does the dog play", user, limit=10, record_access=False)
        assert {h.record.content: h.keyword_score for h in excerpt}.get(target, 0.0) == 0.0  # questions only


def test_key_keyword_feedback_weight(root: Path):
    """pseudo-relevance feedback: the best hits' telling terms searched again with this weight (0 = off)"""
    _feedback_scenario(root, "u")
    assert Policy().keyword_feedback_weight == 0.3  # cross-validated (0.2 until issue 16 session 7)


def test_keyword_feedback_on_postgres(root: Path, pg_dsn: str, pg_server, monkeypatch: pytest.MonkeyPatch):
    """the same through the PostgreSQL backend (its own in-process keyword index)"""
    monkeypatch.setenv("MEMFOLD_INDEX__BACKEND", "postgres")
    monkeypatch.setenv("MEMFOLD_INDEX__DSN", pg_dsn)
    _feedback_scenario(root, f"kwfb-{os.getpid()}-{time.time_ns()}")


# ---- files and models ------------------------------------------------------------------------
def test_key_backup_keep(root: Path):
    """backups of MEMORY.md kept per user"""
    with memory(root, backup_keep=2) as m:
        r = m.add("the boat is moored at pier 4", "u", infer=False).added[0]
        for pier in range(5, 10):
            m.update(r.id, "u", content=f"the boat is moored at pier {pier}")
        backups = sorted((root / "u" / "backups").glob("*_MEMORY.md"), key=lambda p: p.stat().st_mtime_ns)
        assert len(backups) == 2 and m.stats("u")["backups"] == 2
        assert "pier 8" in backups[-1].read_text()  # the newest ones stay


def test_key_backup_max_age_days(root: Path):
    """backups older than this many days are deleted (0 = no age limit)"""
    with memory(root) as m:
        r = m.add("the boat is moored at pier 4", "u", infer=False).added[0]
        m.update(r.id, "u", content="the boat is moored at pier 5")
        m.update(r.id, "u", content="the boat is moored at pier 6")
    old, new = sorted((root / "u" / "backups").glob("*_MEMORY.md"), key=lambda p: p.stat().st_mtime_ns)
    forty_days = time.time() - 40 * 86400
    os.utime(old, (forty_days, forty_days))
    with memory(root, backup_max_age_days=0) as m:
        m.get_all("u")  # the first use of a namespace prunes
        assert old.exists()
    with memory(root, backup_max_age_days=30) as m:
        m.get_all("u")
        assert not old.exists() and new.exists()


def test_key_context_window(root: Path):
    """tokens the chat model accepts (session triggers, context budget)"""
    text = "the quick brown fox jumps over the lazy dog " * 20  # about 180 tokens
    quiet = {"session_summary_message_threshold": 1000}
    with memory(root) as m:
        big = m.session("big", "u", memory_enabled=False, policy={**quiet, "context_window": 32768})
        small = m.session("small", "u", memory_enabled=False, policy={**quiet, "context_window": 1024})
        for _ in range(6):
            big.add_message("user", text)
            small.add_message("user", text)
        assert big.info["folds"] == 0 and small.info["folds"] >= 1
        assert small.context("hello").budget == 1024 - 256 and big.context("hello").tokens < 32768
        with pytest.raises(Exception, match="context_window"):
            small.context(text * 8)  # a message larger than the window is refused, naming the key


def test_key_token_encoding(root: Path):
    """tokenizer for exact counts"""
    text = "我上周去了京都，住在樱花酒店。" * 3
    with memory(root) as m:
        counts = {}
        for enc in ("o200k_base", "cl100k_base"):
            s = m.session(enc, "u", memory_enabled=False, policy={"token_encoding": enc})
            s.add_message("user", text)
            counts[enc] = s.token_count()
            assert counts[enc] == count_tokens(text, enc) + MESSAGE_OVERHEAD
        assert counts["o200k_base"] != counts["cl100k_base"]

