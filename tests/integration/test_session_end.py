"""Session end (seeds 002, 003): closing a session, leaving its ``with`` block, ``/exit`` in
``memfold chat`` and the time to live send the unfolded turns to extraction, by rules without
an LLM and by the LLM when one is configured; never twice, never with memory off."""

from __future__ import annotations

import json
import threading
from datetime import timedelta
from pathlib import Path

import pytest

from memfold import Memory
from memfold.config import load_settings
from memfold.engine.conversation.session_end import DONE
from memfold.errors import SessionClosedError
from memfold.models import EPISODIC, utcnow

from ..conftest import run_cli
from ..support.openai_server import Reply, tool_call

TEA = "I like green tea"  # extracted when the session ends (an explicit "remember" is stored at once)


def _file_backed(mem: Memory, user: str = "default") -> list[str]:
    return [r.content for r in mem.get_all(user) if r.file != EPISODIC]


def _turns(mem: Memory, user: str = "default") -> list[str]:
    """The turns stored in the index (a listing leaves out those a memory stands for)."""
    return [r.content for r in mem.index.list_records(user) if r.file == EPISODIC]


def _age(mem: Memory, user: str, session_id: str, minutes: int) -> None:
    """Make a stored session look untouched for ``minutes`` (as if its owner had left)."""
    st = mem.index.get_state(user, "session", session_id)
    st["updated_at"] = (utcnow() - timedelta(minutes=minutes)).isoformat()
    mem.index.put_state(user, "session", session_id, st)


def test_close_extracts_the_unfolded_turns_by_rules(mem: Memory) -> None:
    s = mem.session("tea", "alice")
    s.add_message("user", TEA)
    s.add_message("assistant", "Noted!")
    assert not _file_backed(mem, "alice")  # not folded: nothing extracted yet
    res = s.close()
    assert res.extracted == 2 and not res.already_closed
    assert [r.content for r in res.added] == ["I like green tea"]
    assert "I like green tea" in mem.show("alice")
    assert s.closed and s.info["closed_at"]
    assert "I like green tea" in mem.recent_memories("default", "alice")  # pinned for the session's agent
    with pytest.raises(SessionClosedError, match="'tea'.*reopen"):
        s.add_message("user", "one more thing")
    assert s.close().already_closed  # ending twice does nothing
    assert _turns(mem, "alice").count(TEA) == 1


def test_reopen_continues_and_never_extracts_a_turn_twice(mem: Memory) -> None:
    s = mem.session("again")
    s.add_message("user", "Remember that my bike is blue")
    s.close()
    assert s.reopen() and not s.closed and not s.reopen()
    s.add_message("user", "Remember that my car is red")
    res = s.close()
    assert res.extracted == 1
    turns = _turns(mem)
    assert turns.count("Remember that my bike is blue") == 1 and turns.count("Remember that my car is red") == 1
    assert mem.session("again").closed  # persisted: another opener sees it ended


def test_only_turns_not_folded_are_extracted_at_the_end(mem: Memory) -> None:
    s = mem.session("fold", policy={"session_summary_message_threshold": 4, "session_summary_keep_count": 2})
    texts = [f"Remember that locker {n} holds box {n * 7}" for n in range(1, 6)]
    for t in texts:
        s.add_message("user", t)
    assert s.info["folded_messages"] == 3  # folded (and extracted) at the 5th message
    assert s.close().extracted == 2
    assert sorted(_turns(mem)) == sorted(texts)  # each turn stored once


def test_with_block_ends_the_session_even_on_an_error(mem: Memory) -> None:
    with mem.session("ctx", "bob") as s:
        s.add_message("user", "Remember that I prefer window seats")
    assert s.closed and "I prefer window seats" in mem.show("bob")
    with pytest.raises(RuntimeError):
        with mem.session("ctx2", "bob") as s2:
            s2.add_message("user", "Remember that I like jasmine tea")
            raise RuntimeError("the agent crashed")
    assert s2.closed and "I like jasmine tea" in mem.show("bob")


def test_memory_off_extracts_nothing_at_the_end_nor_later(mem: Memory) -> None:
    s = mem.session("off", memory_enabled=False)
    s.add_message("user", "Remember that I like black coffee")
    assert s.close().extracted == 0
    assert not _file_backed(mem) and not _turns(mem)
    s2 = mem.session("off2", memory_enabled=False)
    s2.add_message("user", "Remember that I like black coffee")
    s2.close()
    s3 = mem.session("off2")  # reopened with memory on: the turn said with memory off stays out
    s3.reopen()
    assert s3.close().extracted == 0 and not _file_backed(mem)


def test_memory_switched_off_for_the_user_while_a_session_runs(mem: Memory) -> None:
    s = mem.session("switch", "kim")
    s.add_message("user", "I like mint tea")  # said with memory on (extracted at the end)
    mem.set_memory_enabled(False, "kim")
    s.add_message("user", "Remember that I like black coffee")  # said with memory off
    assert s.close().extracted == 0 and not _file_backed(mem, "kim") and not _turns(mem, "kim")
    mem.set_memory_enabled(True, "kim")
    s.reopen()
    assert s.close().extracted == 0  # the turns were not extracted, but are done: never later either


def test_an_expired_session_is_ended_by_whoever_opens_it(root: Path, embedder) -> None:
    with Memory(root=root, embedder=embedder) as m:
        m.session("old", "carol").add_message("user", TEA)
        _age(m, "carol", "old", 2000)  # default session_ttl_minutes is 1440
    with Memory(root=root, embedder=embedder) as m:
        s = m.session("old", "carol")
        assert s.closed and s.info["closed_at"]
        assert "I like green tea" in m.show("carol")
        with pytest.raises(SessionClosedError, match="session_ttl_minutes"):
            s.add_message("user", "hello again")


def test_an_abandoned_session_is_ended_when_another_one_opens(root: Path, embedder) -> None:
    with Memory(root=root, embedder=embedder) as m:
        m.session("abandoned", "dan").add_message("user", "I like oolong tea")
        m.session("recent", "dan").add_message("user", "I like rooibos tea")
        _age(m, "dan", "abandoned", 90)
        _age(m, "dan", "recent", 30)
    with Memory(root=root, embedder=embedder, policy={"session_ttl_minutes": 60}) as m:
        m.session("new", "dan")
        assert m.index.get_state("dan", "session", "abandoned")["closed_at"]
        assert not m.index.get_state("dan", "session", "recent").get("closed_at")
        text = m.show("dan")
        assert "I like oolong tea" in text and "rooibos" not in text
    with Memory(root=root, embedder=embedder, policy={"session_ttl_minutes": 0}) as m:  # 0: never expires
        _age(m, "dan", "recent", 10**6)
        assert not m.session("recent", "dan").closed


def test_the_sweep_is_bounded_and_goes_on_where_it_stopped(mem: Memory, root: Path, monkeypatch) -> None:
    from memfold.engine.conversation import session_end
    from memfold.engine.conversation.ports import SessionPorts

    for n in range(5):
        mem.session(f"s{n}", "ivy").add_message("user", f"Remember that drawer {n} holds spoon {n + 10}")
        _age(mem, "ivy", f"s{n}", 3000)
    monkeypatch.setattr(session_end, "SWEEP_MAX", 3)
    monkeypatch.setattr(session_end, "SWEEP_END_MAX", 2)
    ports = SessionPorts(mem, mem, mem, mem.embedder, mem.index)
    ends = session_end.SessionEnds(lambda u: root / u, lambda: ports, interval=0)
    swept = [len(ends.sweep("ivy", 1440)) for _ in range(2)]
    closed = [bool(mem.index.get_state("ivy", "session", f"s{n}").get("closed_at")) for n in range(5)]
    assert swept == [2, 2] and closed == [True, True, True, True, False]  # in order, none skipped
    assert len(ends.sweep("ivy", 1440)) == 1
    assert all(mem.index.get_state("ivy", "session", f"s{n}")["closed_at"] for n in range(5))
    assert ends.sweep("ivy", 1440) == [] and ends.sweep("ivy", 0) == []


def test_a_session_expiring_while_held_is_ended_at_the_next_access(mem: Memory) -> None:
    s = mem.session("held", policy={"session_ttl_minutes": 5})
    s.add_message("user", TEA)
    _age(mem, "default", "held", 6)
    with pytest.raises(SessionClosedError):
        s.add_message("user", "are you there?")
    assert "I like green tea" in mem.show()
    state = mem.index.get_state("default", "session", "held")
    assert state["closed_reason"] == "ttl" and all(m[DONE] for m in state["messages"])


def test_two_memories_ending_one_session_at_once_extract_it_once(root: Path, embedder) -> None:
    with Memory(root=root, embedder=embedder) as m:
        s = m.session("race")
        for n in range(3):
            s.add_message("user", f"Remember that shelf {n} holds jar {n + 40}")
    mems = [Memory(root=root, embedder=embedder) for _ in range(2)]
    results: list = []
    try:
        sessions = [mm.session("race") for mm in mems]
        threads = [threading.Thread(target=lambda x=x: results.append(x.close())) for x in sessions]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sorted(r.extracted for r in results) == [0, 3]
        assert sorted(_turns(mems[0])) == [f"Remember that shelf {n} holds jar {n + 40}" for n in range(3)]
    finally:
        for mm in mems:
            mm.close()


def test_close_uses_the_llm_when_configured(root: Path, embedder, llm_server) -> None:
    answer = {"memories": [{"memory_type": "preference", "content": "The user likes green tea",
                            "structured_data": {"drink": "green tea"}, "importance_score": 0.8}]}
    llm_server.script(json.dumps(answer))
    cfg = dict(provider="openai", base_url=llm_server.base_url, model="scripted", timeout=5.0, max_retries=0)
    with Memory(settings=load_settings(root, llm=cfg), embedder=embedder) as m:
        s = m.session("llm", "erin", policy={"session_summary_message_threshold": 1000})
        s.add_message("user", TEA)
        s.add_message("assistant", "Sure, I will remember.")
        assert not llm_server.chat_requests()
        res = s.close()
        assert [r.content for r in res.added] == ["The user likes green tea"]
        assert "The user likes green tea" in m.show("erin")
        sent = llm_server.chat_requests()[-1]["body"]["messages"][-1]["content"]
        assert TEA in sent and "Sure, I will remember." in sent


def test_close_keeps_the_words_when_the_llm_fails(root: Path, embedder, llm_server) -> None:
    llm_server.script(Reply(status=500, content="down"))
    cfg = dict(provider="openai", base_url=llm_server.base_url, model="scripted", timeout=5.0, max_retries=0)
    with Memory(settings=load_settings(root, llm=cfg), embedder=embedder) as m:
        s = m.session("llmfail", "finn")
        s.add_message("user", "Remember that my locker code is on the blue card")
        res = s.close()
        assert res.warnings and s.closed
        notes = [r for r in m.get_all("finn") if r.file not in (EPISODIC, "MEMORY.md")]
        assert any("blue card" in r.content for r in notes)  # kept as a daily note, not lost


def test_chat_exit_stores_what_was_said(root: Path, llm_server) -> None:
    llm_server.default_reply = Reply(content="Noted, green tea it is.")
    res = run_cli(root, "chat", "-s", "tea", "--user", "gus", "--base-url", llm_server.base_url, "--model", "m",
                  input=f"{TEA}\n/exit\n")
    assert res.returncode == 0, res.stderr
    assert "remembered: I like green tea" in res.stdout and "ended" in res.stderr
    assert "I like green tea" in run_cli(root, "show", "--user", "gus").stdout
    listed = json.loads(run_cli(root, "sessions", "--user", "gus", "--json").stdout)
    assert listed[0]["closed_at"]
    again = run_cli(root, "chat", "-s", "tea", "--user", "gus", "--base-url", llm_server.base_url, "--model", "m",
                    input="What do I like?\n")
    assert again.returncode == 0, again.stderr
    assert "reopened" in again.stderr
    listed = json.loads(run_cli(root, "sessions", "--user", "gus", "--json").stdout)
    assert listed[0]["closed_at"] is None and listed[0]["total_messages"] == 4


def test_chat_exit_does_not_store_again_what_a_tool_call_stored(root: Path, embedder, llm_server) -> None:
    llm_server.script(Reply(tool_calls=[tool_call("memory_append", {"content": "I like green tea"}, "c1")]),
                      "Noted, green tea it is.")
    llm_server.default_reply = Reply(content="Sure.")
    res = run_cli(root, "chat", "-s", "tool", "--user", "hal", "--base-url", llm_server.base_url, "--model", "m",
                  input=f"{TEA}\nWhat time is it?\n/exit\n")
    assert res.returncode == 0, res.stderr
    assert "[memory_append] ok" in res.stderr and "remembered:" not in res.stdout
    shown = run_cli(root, "show", "--user", "hal").stdout
    assert shown.count("I like green tea") == 1, shown
    with Memory(root=root, embedder=embedder) as m:  # the turns are in the session; the stored memory once
        turns = _turns(m, "hal")
        assert "What time is it?" in turns and TEA not in turns  # the tool's turn was not extracted again


def test_an_explicit_remember_is_stored_at_once_and_seen_by_another_session(root: Path, embedder):
    """A model without tools cannot store "remember …" itself: the session stores it when the message
    is added, so a second session opened meanwhile finds it; the end extracts nothing twice."""
    with Memory(root=root, embedder=embedder, background=False) as m:
        s1 = m.session("first", "ivy")
        s1.add_message("user", "Remember that my bike is a red Gazelle")
        s1.add_message("assistant", "Noted.")
        s1.add_message("user", "I fly to Porto on Friday. 记住我的车位是B2-117")
        s2 = m.session("second", "ivy")
        system = s2.build_context("which bike do I have?")[0]["content"]
        assert "red Gazelle" in system
        assert any("B2-117" in r for r in _file_backed(m, "ivy"))
        s1.close()
        kept = _file_backed(m, "ivy")
        assert sum("Gazelle" in r for r in kept) == 1 and sum("B2-117" in r for r in kept) == 1, kept
        m.set_memory_enabled(False, "ivy")  # memory off: nothing is stored, at once or later
        s3 = m.session("third", "ivy")
        s3.add_message("user", "Remember that my locker is number 42")
        assert not any("locker" in r for r in _file_backed(m, "ivy"))
