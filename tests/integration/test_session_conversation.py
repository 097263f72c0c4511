"""Sessions: buffer, rolling summary, triggers, force compression, resume, presets,
relevant-history mode, the task scratchpad and summary → long-term extraction (SPEC §7)."""

from __future__ import annotations

from pathlib import Path

import pytest

from memfold import ConfigError, InvalidInputError, Memory
from memfold.engine.conversation.session import NOTICE
from memfold.text.tokens import count_tokens

from ..conftest import run_cli


def _talk(session, n: int, start: int = 0) -> list:
    updates = []
    for i in range(start, start + n):
        if i % 2 == 0:
            updates.append(session.add_message("user", f"Question {i}: what do you think about topic {i}?"))
        else:
            updates.append(session.add_message("assistant", f"Answer {i}: topic {i - 1} is a fine topic."))
    return updates


def test_thirty_messages_fold_and_resume_identically(mem: Memory, root: Path, embedder) -> None:
    pol = mem.policy()
    assert (pol.session_summary_message_threshold, pol.session_summary_token_percent,
            pol.session_summary_keep_count) == (20, 75, 4)
    s = mem.session("s1", agent_id="a")
    notices = []
    s.on_notice = notices.append
    updates = _talk(s, 30)
    folds = [i for i, u in enumerate(updates) if u.summarized]
    assert folds == [20]  # the 21st message crosses "more than 20"
    assert updates[20].notice == NOTICE and updates[20].reason == "messages" and updates[20].folded == 17
    assert notices == [NOTICE]
    assert all(u.notice is None for i, u in enumerate(updates) if i != 20)
    assert s.summary and "Question 0" in s.summary and "Answer 15" in s.summary
    # keep_count + the messages since the last fold stay verbatim
    assert len(s.messages) == 4 + 9
    assert s.messages[0]["content"].startswith("Question 17") or s.messages[0]["content"].startswith("Answer 17")
    assert s.messages[-1]["content"].startswith("Answer 29")
    built = s.context("And what about topic 30?")
    assert built.tokens <= pol.context_window and built.tokens <= built.budget
    msgs = built.messages
    assert msgs[0]["role"] == "system" and "## Conversation summary" in msgs[0]["content"]
    assert msgs[-1] == {"role": "user", "content": "And what about topic 30?"}
    assert [m["content"] for m in msgs[1:-1]] == [m["content"] for m in s.messages]
    assert built.tokens == sum(count_tokens(m["content"]) + 4 for m in msgs) + 3

    # restart: a new Memory on the same workspace resumes buffer and summary
    before = (s.messages, s.summary, s.info["total_messages"], s.info["folds"])
    mem.close()
    again = Memory(root=root, embedder=embedder)
    try:
        r = again.session("s1", agent_id="a")
        assert (r.messages, r.summary, r.info["total_messages"], r.info["folds"]) == before
        assert r.build_context("And what about topic 30?")[1:] == msgs[1:]
        assert again.sessions() == ["s1"]
    finally:
        again.close()
    # and a new process sees the same session
    res = run_cli(root, "sessions", "--json")
    assert res.returncode == 0, res.stderr
    assert '"total_messages": 30' in res.stdout and '"messages": 13' in res.stdout


def test_token_trigger_and_force_compression(mem: Memory) -> None:
    s = mem.session("tok", policy={"context_window": 2048, "session_summary_keep_count": 2})
    big = "The quarterly numbers look stable across all the regions we track. " * 33  # ~400 tokens
    ups = [s.add_message("user" if i % 2 == 0 else "assistant", f"{i}: {big}") for i in range(4)]
    # 75% of 2048 = 1536 tokens: the 4th message crosses it; all but the last 2 are folded
    assert [u.summarized for u in ups] == [False, False, False, True]
    assert ups[3].reason == "tokens" and ups[3].folded == 2 and not ups[3].forced
    assert len(s.messages) == 2 and s.token_count() <= 2048
    # one message larger than the window: the oldest half is dropped (force compression)
    huge = "Every sentence here is long and carries nothing worth keeping at all. " * 140  # ~1800 tokens
    up = s.add_message("user", huge)
    assert up.summarized and up.forced and up.dropped >= 1
    assert s.messages[-1]["content"] == huge
    assert s.info["dropped_messages"] == up.dropped
    built = s.context("short question")
    assert built.tokens <= built.budget <= 2048
    assert built.history_used == 0  # the huge message does not fit next to the system prompt


def test_token_trigger_with_fewer_messages_than_keep_count(mem: Memory) -> None:
    s = mem.session("few", policy={"context_window": 2048})  # keep_count 4
    text = "Numbers for the regional report are stable and unremarkable this quarter. " * 45  # ~600 tokens
    ups = [s.add_message("user" if i % 2 == 0 else "assistant", f"{i}: {text}") for i in range(3)]
    assert [u.summarized for u in ups] == [False, False, True]
    assert ups[2].reason == "tokens" and ups[2].folded == 2 and not ups[2].forced
    assert len(s.messages) == 1 and s.messages[0]["content"].startswith("2:")
    assert s.token_count() <= 2048 * 0.75


def test_on_demand_summary_and_presets(mem: Memory) -> None:
    s = mem.session("od")
    _talk(s, 6)
    up = s.summarize()
    assert up.summarized and up.reason == "manual" and up.folded == 2 and len(s.messages) == 4
    again = s.summarize()
    assert again.folded == 0 and again.notice is None  # nothing more to fold, and nothing lost
    assert len(s.messages) == 4
    chat = mem.session("preset", preset="chatagent")
    assert (chat.policy.session_summary_message_threshold, chat.policy.session_summary_token_percent) == (50, 80)
    assert not any(u.summarized for u in _talk(chat, 50))
    assert _talk(chat, 1, start=50)[0].summarized
    with pytest.raises(ConfigError, match="unknown session preset"):
        mem.session("x", preset="nope")
    with pytest.raises(ConfigError, match="session_summary_keep_count"):
        mem.session("x", policy={"session_summary_keep_count": -1})
    with pytest.raises(InvalidInputError):
        s.add_message("robot", "hi")
    with pytest.raises(InvalidInputError, match="belongs to agent"):
        mem.session("od", agent_id="other")


def test_relevant_history_mode(mem: Memory) -> None:
    s = mem.session("rel", policy={"session_relevant_history_limit": 1, "session_relevant_fallback_keep": 2})
    pairs = [("My cat Misty loves tuna and sleeps on the sofa.", "Misty sounds like a happy cat."),
             ("How do I bake sourdough bread at home?", "Feed the starter, then bake at 250 degrees."),
             ("What is the capital of Australia?", "Canberra is the capital of Australia.")]
    for u, a in pairs:
        s.add_message("user", u)
        s.add_message("assistant", a)
    used = [m["content"] for m in s.build_context("What does my cat Misty like to eat?")[1:-1]]
    assert used == list(pairs[0])
    # nothing relevant: the last fallback_keep messages
    used = [m["content"] for m in s.build_context("Quantum chromodynamics lattice gauge")[1:-1]]
    assert used == list(pairs[2])
    none = mem.session("rel0", policy={"session_relevant_history_limit": 2, "session_relevant_fallback_keep": 0})
    none.add_message("user", "Tell me about volcanoes.")
    assert len(none.build_context("Quantum chromodynamics lattice gauge")) == 2


def test_task_scratchpad_keeps_only_question_and_answer(mem: Memory) -> None:
    s = mem.session("task")
    s.add_message("user", "Hi there")
    with s.task("What is the weather in Paris?") as task:
        task.thought("I should call the weather tool")
        task.action("weather", {"city": "Paris"})
        task.observation("18°C, light rain")
        ctx = task.context()
        assert ctx[-4]["content"] == "What is the weather in Paris?"
        assert [m["content"] for m in ctx[-3:]] == ['Thought: I should call the weather tool',
                                                     'Action: weather({"city": "Paris"})',
                                                     'Observation: 18°C, light rain']
        task.finish("It is 18°C with light rain in Paris.")
    assert task.closed and task.steps == []
    assert [m["content"] for m in s.messages] == ["Hi there", "What is the weather in Paris?",
                                                  "It is 18°C with light rain in Paris."]
    with pytest.raises(InvalidInputError, match="ended"):
        task.thought("too late")
    with s.task("A task that fails") as failing:
        failing.thought("thinking")
    assert len(s.messages) == 3  # a task without an answer leaves nothing


def test_folded_messages_reach_long_term_memory(mem: Memory, root: Path) -> None:
    s = mem.session("facts", agent_id="helper", policy={"session_summary_message_threshold": 6,
                                                         "session_summary_keep_count": 2})
    s.add_message("user", "My favorite color is teal.")
    s.add_message("assistant", "Noted, teal it is.")
    s.add_message("user", "Remember that my dentist appointment is on June 12.")
    for i in range(4):
        s.add_message("assistant" if i % 2 == 0 else "user", f"Small talk number {i}.")
    assert s.info["folds"] == 1
    text = (root / "default" / "MEMORY.md").read_text(encoding="utf-8")
    assert "My favorite color is teal" in text and "dentist appointment is on June 12" in text
    found = mem.get_all(memory_type="preference")  # "my favorite X is …" is a preference
    assert any(r.source_session_id == "facts" and r.agent_id == "helper" for r in found)
    # what the session saved for its agent is pinned
    assert any("teal" in p for p in mem.recent_memories("helper"))


def test_memory_off_session_does_not_extract(mem: Memory, root: Path) -> None:
    s = mem.session("off", memory_enabled=False, policy={"session_summary_message_threshold": 3,
                                                          "session_summary_keep_count": 1})
    for text in ("My favorite color is teal.", "ok", "I like jazz.", "fine"):
        s.add_message("user", text)
    assert s.summary and s.info["folds"] >= 1
    assert mem.get_all() == [] and not (root / "default" / "MEMORY.md").exists()
