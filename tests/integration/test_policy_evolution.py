"""Policy evolution (seed 001 §1.7; issue 14 item 6) against a scripted OpenAI-compatible server:
every 20 messages of a user's sessions one reflection; valid proposals are written after a
snapshot, the rest dropped with a log line; garbage, HTTP 500 or a timeout change nothing; no
LLM, no evolution; a running session keeps its policy, a new one reads the new file."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from memfold import Memory
from memfold.config import load_settings
from memfold.maintenance.evolution import EVOLVE_EVERY

from ..support.hash_embedder import HashEmbedder
from ..support.openai_server import Reply

QUIET = {"session_summary_message_threshold": 100_000}  # no summary folds: the only LLM call is evolution


def _memory(root: Path, server=None, **memory) -> Memory:
    llm = {"provider": "openai", "base_url": server.base_url, "model": "scripted", "max_retries": 0,
           "timeout": 1.0} if server else {}
    settings = load_settings(root, llm=llm, memory={"evolution_enabled": True, **memory})
    return Memory(settings=settings, embedder=HashEmbedder())


def _talk(session, n: int, start: int = 0, wait: bool = True) -> None:
    """``n`` messages; ``wait``: each followed by the end of a reflection it started (in the background)."""
    for i in range(start, start + n):
        session.add_message("user" if i % 2 == 0 else "assistant",
                            f"message {i}: what did I say about my trip to Kyoto and the hotel last week?")
        if wait:
            session._ports.after_message.join()


def _overrides(root: Path, user: str = "alice") -> dict | None:
    p = root / user / "policy_overrides.json"
    return json.loads(p.read_text()) if p.exists() else None


def _snapshots(root: Path, user: str = "alice") -> list[Path]:
    d = root / user / "policy_snapshots"
    return sorted(d.glob("*.json")) if d.is_dir() else []


def test_twenty_messages_one_reflection_overrides_written_after_a_snapshot(root: Path, llm_server):
    llm_server.script(json.dumps({"overrides": {"retrieve_limit": 15, "recent_days": 7},
                                  "reason": "the user keeps referring back to last week"}))
    with _memory(root, llm_server) as mem:
        running = mem.session("trip", "alice", policy=QUIET)
        _talk(running, EVOLVE_EVERY - 1)
        assert llm_server.chat_requests() == [] and _overrides(root) is None
        _talk(running, 1, start=EVOLVE_EVERY - 1)
        assert len(llm_server.chat_requests()) == 1
        prompt = llm_server.chat_requests()[0]["body"]["messages"][-1]["content"]
        assert "retrieve_limit = 10" in prompt and "recent_days = 3" in prompt  # the current policy
        assert "message 19: what did I say about my trip to Kyoto" in prompt  # the recent conversation
        assert "backup_keep" not in prompt  # not a key the LLM may change

        assert _overrides(root) == {"retrieve_limit": 15, "recent_days": 7}
        snaps = _snapshots(root)
        assert len(snaps) == 1 and json.loads(snaps[0].read_text()) == {}  # the state before, saved first
        # the running session keeps its policy; a new session (and the namespace) use the new one
        assert running.policy.retrieve_limit == 10 and running.policy.recent_days == 3
        fresh = mem.session("next", "alice", policy=QUIET)
        assert fresh.policy.retrieve_limit == 15 and fresh.policy.recent_days == 7
        assert mem.policy("alice").retrieve_limit == 15 and mem.policy("bob").retrieve_limit == 10
        last = mem.evolution.last("alice")
        assert last["last"]["status"] == "applied" and last["last"]["snapshot"] == snaps[0].stem
        assert mem.stats("alice")["llm_usage"]["by_operation"]["evolve"]["calls"] == 1
        # the next 19 messages ask nothing
        _talk(fresh, EVOLVE_EVERY - 1)
        assert len(llm_server.chat_requests()) == 1
    with _memory(root, llm_server) as mem:  # a new process reads the new policy
        assert mem.policy("alice").retrieve_limit == 15


def test_messages_of_all_the_users_sessions_count_together(root: Path, llm_server):
    llm_server.script(json.dumps({"overrides": {"retrieve_limit": 11}}))
    with _memory(root, llm_server) as mem:
        a, b = mem.session("a", "alice", policy=QUIET), mem.session("b", "alice", policy=QUIET)
        other = mem.session("c", "bob", policy=QUIET)
        _talk(a, EVOLVE_EVERY // 2)
        _talk(other, EVOLVE_EVERY - 1)
        assert llm_server.chat_requests() == []
        _talk(b, EVOLVE_EVERY - EVOLVE_EVERY // 2)
        assert len(llm_server.chat_requests()) == 1 and _overrides(root) == {"retrieve_limit": 11}
        assert _overrides(root, "bob") is None


def test_out_of_bounds_and_unknown_keys_are_dropped_with_a_log_line(root: Path, llm_server, caplog):
    llm_server.script(json.dumps({"overrides": {"retrieve_limit": 5000, "recent_days": 5, "backup_keep": 1,
                                                "favourite_colour": "blue", "dedupe_threshold": "high"}}))
    with _memory(root, llm_server) as mem, caplog.at_level(logging.WARNING, logger="memfold"):
        _talk(mem.session("s", "alice", policy=QUIET), EVOLVE_EVERY)
        assert _overrides(root) == {"recent_days": 5}
        log = caplog.text
        for key in ("retrieve_limit", "backup_keep", "favourite_colour", "dedupe_threshold"):
            assert f"dropped {key}=" in log, key
        assert "between 1 and 1000" in log
        assert set(mem.evolution.last("alice")["last"]["dropped"]) == {"retrieve_limit", "backup_keep",
                                                                       "favourite_colour", "dedupe_threshold"}


@pytest.mark.parametrize("reply", [
    Reply(content="I think the retrieve limit should be larger."),  # not JSON
    Reply(content='{"overrides": [15]}'),  # JSON of the wrong shape
    Reply(status=500, content="upstream exploded"),
    Reply(content='{"overrides": {"retrieve_limit": 15}}', delay=2.5),  # past the 1 s timeout
], ids=["garbage", "wrong-shape", "http-500", "timeout"])
def test_a_failed_reflection_changes_nothing_and_is_tried_again_later(root: Path, llm_server, reply, caplog):
    llm_server.script(reply, json.dumps({"overrides": {"retrieve_limit": 14}}))
    with _memory(root, llm_server) as mem, caplog.at_level(logging.WARNING, logger="memfold"):
        s = mem.session("s", "alice", policy=QUIET)
        _talk(s, EVOLVE_EVERY)
        assert _overrides(root) is None and _snapshots(root) == []
        assert mem.policy("alice").retrieve_limit == 10
        assert mem.evolution.last("alice")["last"]["status"] == "failed"
        assert "changed nothing" in caplog.text
        _talk(s, EVOLVE_EVERY, start=EVOLVE_EVERY)  # the next run
        assert _overrides(root) == {"retrieve_limit": 14}


def test_nothing_without_an_llm_or_when_disabled(root: Path, llm_server):
    with _memory(root) as mem:  # evolution on, no LLM configured
        assert mem.chat_model is None
        _talk(mem.session("s", "alice", policy=QUIET), 2 * EVOLVE_EVERY)
        assert _overrides(root) is None and _snapshots(root) == [] and mem.evolution.last("alice") == {}
    llm_server.default_reply = Reply(content=json.dumps({"overrides": {"retrieve_limit": 15}}))
    with _memory(root, llm_server, evolution_enabled=False) as mem:
        _talk(mem.session("s2", "alice", policy=QUIET), 2 * EVOLVE_EVERY)
        assert llm_server.chat_requests() == [] and _overrides(root) is None


def test_a_proposal_of_the_current_values_writes_nothing(root: Path, llm_server):
    llm_server.script(json.dumps({"overrides": {"retrieve_limit": 10}, "reason": "fine as it is"}))
    with _memory(root, llm_server) as mem:
        _talk(mem.session("s", "alice", policy=QUIET), EVOLVE_EVERY)
        assert len(llm_server.chat_requests()) == 1
        assert _overrides(root) is None and _snapshots(root) == []
        assert mem.evolution.last("alice")["last"]["status"] == "unchanged"


def test_chinese_prompt_for_a_chinese_memory(root: Path, llm_server):
    llm_server.script(json.dumps({"overrides": {"recent_days": 6}, "reason": "用户常提上周的事"}))
    with _memory(root, llm_server) as mem:
        mem.init("alice", "zh")
        s = mem.session("s", "alice", policy=QUIET)
        for i in range(EVOLVE_EVERY):
            s.add_message("user", f"第{i}条：我上周去了京都，住在樱花酒店。")
            mem.evolution.join()
        prompt = llm_server.chat_requests()[0]["body"]["messages"][-1]["content"]
        assert "当前策略" in prompt and "检索时拼接最近几天的每日笔记" in prompt and "樱花酒店" in prompt
        assert _overrides(root) == {"recent_days": 6}


def test_the_llm_is_asked_outside_the_user_lock(root: Path, llm_server):
    import threading
    import time

    from memfold.maintenance.policy_files import PolicyFiles
    from memfold.workspace.files import FileLock

    llm_server.script(Reply(content=json.dumps({"overrides": {"retrieve_limit": 13}}), delay=1.5))
    settings = load_settings(root, llm={"provider": "openai", "base_url": llm_server.base_url, "model": "scripted",
                                        "max_retries": 0, "timeout": 30.0}, memory={"evolution_enabled": True})
    with Memory(settings=settings, embedder=HashEmbedder()) as mem:
        s = mem.session("s", "alice", policy=QUIET)
        _talk(s, EVOLVE_EVERY - 1)
        worker = threading.Thread(target=_talk, args=(s, 1, EVOLVE_EVERY - 1, True))
        worker.start()
        while not llm_server.chat_requests():  # the reflection is waiting for its answer now
            time.sleep(0.01)
        for lock in (FileLock(root / "alice" / ".lock"), PolicyFiles.of(root, "alice").lock):
            assert lock.acquire_nowait(), lock.path  # writers of this user are not held up by the LLM
            lock.__exit__(None, None, None)
        mem.add("a memory written while the LLM thinks", "alice", infer=False)
        worker.join()
        assert _overrides(root) == {"retrieve_limit": 13}


def test_an_overrides_file_broken_by_hand_fails_the_reflection_not_the_conversation(root: Path, llm_server):
    llm_server.script(json.dumps({"overrides": {"retrieve_limit": 15}}))
    with _memory(root, llm_server) as mem:
        s = mem.session("s", "alice", policy=QUIET)
        s.add_message("user", "hello")
        (root / "alice").mkdir(exist_ok=True)
        (root / "alice" / "policy_overrides.json").write_text('{"recent_days": ', encoding="utf-8")
        _talk(s, EVOLVE_EVERY - 1)  # the 20th message: the reflection fails, add_message does not
        assert (root / "alice" / "policy_overrides.json").read_text() == '{"recent_days": '
        last = mem.evolution.last("alice")["last"]
        assert last["status"] == "failed" and "not valid JSON" in last["reason"]
        assert len(s.messages) == EVOLVE_EVERY


def test_evolution_with_the_postgresql_index(root: Path, llm_server, pg_dsn):
    """The counter and the outcome live in the index's state store: the same on PostgreSQL."""
    llm_server.script(json.dumps({"overrides": {"recent_days": 4}}))
    settings = load_settings(root, index={"backend": "postgres", "dsn": pg_dsn},
                             llm={"provider": "openai", "base_url": llm_server.base_url, "model": "scripted",
                                  "max_retries": 0}, memory={"evolution_enabled": True})
    with Memory(settings=settings, embedder=HashEmbedder()) as mem:
        s = mem.session("s", "alice", policy=QUIET)
        _talk(s, EVOLVE_EVERY - 5)
    with Memory(settings=settings, embedder=HashEmbedder()) as mem:  # the count survives a new process
        _talk(mem.session("s", "alice", policy=QUIET), 5)
        assert len(llm_server.chat_requests()) == 1 and _overrides(root) == {"recent_days": 4}
        assert mem.evolution.last("alice")["last"]["status"] == "applied"


def test_the_twentieth_message_does_not_wait_for_the_llm(root: Path, llm_server):
    """The reflection runs in the background: the message that made it due is saved and returned
    while the LLM is still thinking; the new policy is written once it answers."""
    import time

    llm_server.script(Reply(content=json.dumps({"overrides": {"retrieve_limit": 14}}), delay=3.0))
    settings = load_settings(root, llm={"provider": "openai", "base_url": llm_server.base_url, "model": "scripted",
                                        "max_retries": 0, "timeout": 30.0}, memory={"evolution_enabled": True})
    with Memory(settings=settings, embedder=HashEmbedder(), background=False) as mem:
        s = mem.session("s", "alice", policy=QUIET)
        _talk(s, EVOLVE_EVERY - 1)
        started = time.monotonic()
        _talk(s, 1, start=EVOLVE_EVERY - 1, wait=False)  # the 20th message
        returned = time.monotonic() - started
        assert _overrides(root) is None and len(s.messages) == EVOLVE_EVERY  # saved; the LLM has not answered
        assert returned < 2.5, returned  # not the 3 s of the LLM's answer
        mem.evolution.join()
        assert _overrides(root) == {"retrieve_limit": 14}
