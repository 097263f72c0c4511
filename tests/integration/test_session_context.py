"""The pin list (seed 000) and context building (SPEC §6): memory grouped by type, pins,
capacity truncation, memory on/off."""

from __future__ import annotations

from pathlib import Path

import pytest

from memfold import InvalidInputError, Memory

from ..conftest import run_cli


def _system(messages: list[dict]) -> str:
    assert messages[0]["role"] == "system"
    return messages[0]["content"]


def test_pin_list_keeps_the_last_ten_per_agent_and_persists(mem: Memory, root: Path, embedder) -> None:
    saved = [f"Requirement {i}: the report must use table style number {i}" for i in range(12)]
    for text in saved:
        res = mem.add(text, agent_id="a", memory_type="note")
        assert res.added
    assert mem.recent_memories("a") == saved[2:]
    assert mem.recent_memories("b") == []
    with pytest.raises(InvalidInputError, match="nothing to remember"):
        mem.add("   ", agent_id="a")
    assert mem.recent_memories("a") == saved[2:]
    mem.add("Requirement for agent b only", agent_id="b")
    assert mem.recent_memories("b") == ["Requirement for agent b only"]
    assert mem.recent_memories("a") == saved[2:]
    assert mem.recent_memories("a", user_id="someone-else") == []
    mem.add("A memory saved by nobody")
    assert "A memory saved by nobody" not in mem.recent_memories("a")
    mem.close()
    again = Memory(root=root, embedder=embedder)
    try:
        assert again.recent_memories("a") == saved[2:]
        s = again.session("s", agent_id="a")
        assert s.recent_memories == saved[2:]
    finally:
        again.close()


def test_pin_section_in_the_chinese_prompt_and_absent_when_empty(root: Path, embedder) -> None:
    m = Memory(root=root, embedder=embedder, language="zh")
    try:
        empty = _system(m.session("s0", agent_id="nobody").build_context("你好"))
        assert "用户的原始需求和要求" not in empty
        assert empty.startswith("你是一个拥有长期记忆的 AI 助手。")
        assert "MEMORY.md 是你的长期记忆" in empty
        m.add("报告必须用中文写", agent_id="writer")
        m.add("每段不超过三句话", agent_id="writer")
        s = m.session("s1", agent_id="writer")
        system = _system(s.build_context("帮我写一份周报"))
        assert "# 记忆" in system
        assert "## 用户的原始需求和要求\n报告必须用中文写\n每段不超过三句话" in system
        # the backward-compatible attribute can be read and written and has no effect
        assert s.pin_content == ""
        s.pin_content = "旧的 pin 内容"
        assert "旧的 pin 内容" not in _system(s.build_context("帮我写一份周报"))
        assert s.recent_memories == ["报告必须用中文写", "每段不超过三句话"]
        # without a session: the agent's pins and memory
        assert "每段不超过三句话" in _system(m.build_context("周报", agent_id="writer"))
    finally:
        m.close()


def test_memories_are_grouped_by_type(root: Path, embedder) -> None:
    # the relevance floor off: the pattern, skill and todo have nothing to do with the message and
    # would be left out (tests/integration/test_relevance_floor.py); here every section must show
    mem = Memory(root=root, embedder=embedder, policy={"min_score": 0})
    mem.add("I prefer green tea in the morning")
    mem.add("My daughter's name is Lily")
    mem.add("Deploys usually fail on Fridays", memory_type="pattern")
    mem.add("To rotate logs run logrotate -f /etc/logrotate.conf", memory_type="skill")
    mem.add("I need to call the bank next Monday")
    mem.add_note("Met Lily's teacher today")
    system = _system(mem.build_context("What tea do I like, and what is my daughter called?"))
    assert system.startswith("You are an AI assistant with long-term memory.")
    assert "# USER MEMORY" in system
    order = ["## User Preferences\n- I prefer green tea", "## Known Facts\n- My daughter's name is Lily",
             "## User Patterns", "## Proven Skills", "## Todos and Commitments", "## Recent notes"]
    positions = [system.find(o) for o in order]
    assert all(p >= 0 for p in positions), system
    assert positions == sorted(positions)
    assert "Met Lily's teacher today" in system
    assert "## User's original requirements" not in system  # the default agent saved nothing
    mem.close()


def test_a_long_memory_file_is_injected_as_at_most_5000_characters(mem: Memory, root: Path) -> None:
    mem.init()
    path = root / "default" / "MEMORY.md"
    lines = [f"- 2025-01-{1 + i % 28:02d} Project note {i:03d}: " + "details about the migration plan " * 16
             for i in range(40)]
    text = path.read_text(encoding="utf-8").replace("## Notes\n", "## Notes\n" + "\n".join(lines) + "\n", 1)
    path.write_text(text, encoding="utf-8")
    assert len(path.read_text(encoding="utf-8")) >= 20_000
    for query in ("", "migration plan project note"):
        built = mem.session(f"cap {len(query)}").context(query)  # a session shows the tidy instruction once
        system = _system(built.messages)
        block = system[system.index("# USER MEMORY"): system.index("MEMORY.md is your long-term memory")].strip()
        assert built.truncated and built.memory_chars <= 5000 and len(block) <= 5000
        assert "[… memory truncated:" in block
        assert "over its capacity of 5000 characters" in system  # the tidy instruction
    full = _system(mem.session("cap").build_context(""))
    assert "Project note 000" in full and "Project note 039" in full  # head 70% and tail 20%
    assert "mf:" not in full  # id comments are not injected
    small = Memory(root=root, embedder=mem.embedder, policy={"memory_char_limit": 20_000})
    try:
        built = small.session("cap").context("migration plan project note")
        assert not built.truncated and "over its capacity" not in _system(built.messages)
    finally:
        small.close()


def test_memory_off_reads_and_injects_nothing(mem: Memory) -> None:
    rec = mem.add("I prefer green tea in the morning", agent_id="a").added[0]
    before = mem.get(rec.id).access_count
    s = mem.session("off", agent_id="a", memory_enabled=False)
    system = _system(s.build_context("What tea do I prefer?"))
    assert "green tea" not in system and "USER MEMORY" not in system and "MEMORY.md" not in system
    assert "original requirements" not in system
    assert system == "You are a helpful AI assistant."
    assert mem.get(rec.id).access_count == before  # nothing was read
    on = _system(mem.session("on", agent_id="a").build_context("What tea do I prefer?"))
    assert "green tea" in on and mem.get(rec.id).access_count == before + 1


def test_context_budget_and_base_prompt(mem: Memory) -> None:
    s = mem.session("b", policy={"context_window": 1024})
    for i in range(12):
        s.add_message("user" if i % 2 == 0 else "assistant", f"Message {i} " + "filler words " * 40)
    built = s.context("final question", base_prompt="You are Jarvis.")
    assert built.messages[0]["content"].startswith("You are Jarvis.")
    assert built.tokens <= built.budget == 1024 - 256
    assert 0 < built.history_used < built.history_available
    assert built.messages[-2]["content"] == s.messages[-1]["content"]  # the newest history is kept
    with pytest.raises(InvalidInputError, match="context_window"):
        s.build_context("word " * 2000)
    s.add_message("user", "final question")  # already in the buffer: not sent twice
    assert [m["content"] for m in s.build_context("final question")].count("final question") == 1


def test_cli_context_prints_the_messages(mem: Memory, root: Path) -> None:
    mem.add("I prefer green tea in the morning", agent_id="a")
    mem.add("I also like oolong tea")  # saved by no agent: retrieved, not pinned
    s = mem.session("cli", agent_id="a")
    s.add_message("user", "Hello!")
    s.add_message("assistant", "Hi, how can I help?")
    mem.close()
    res = run_cli(root, "context", "What tea do I like?", "--session", "cli", "--agent", "a")
    assert res.returncode == 0, res.stderr
    assert "----- system -----" in res.stdout and "## User Preferences\n- I also like oolong tea" in res.stdout
    assert res.stdout.count("I prefer green tea in the morning") == 1  # pinned, so not repeated above
    assert "## User's original requirements\nI prefer green tea in the morning" in res.stdout
    assert "----- assistant -----\nHi, how can I help?" in res.stdout
    assert res.stdout.rstrip().endswith("----- user -----\nWhat tea do I like?")
    assert "tokens of a" in res.stderr
    res = run_cli(root, "context", "What tea do I like?", "--json", "--no-memory")
    assert res.returncode == 0, res.stderr
    assert '"role": "system"' in res.stdout and "green tea" not in res.stdout


def test_forgotten_memories_leave_the_pin_list(mem: Memory) -> None:
    keep = mem.add("The report must be in English", agent_id="a").added[0]
    gone = mem.add("My locker code is in the blue notebook", agent_id="a").added[0]
    other = mem.add("Use short paragraphs", agent_id="b").added[0]
    mem.forget(gone.id)
    assert mem.recent_memories("a") == [keep.content]
    mem.delete(other.id)
    assert mem.recent_memories("b") == []
    assert "blue notebook" not in _system(mem.build_context("locker", agent_id="a"))


def test_pins_follow_hand_edits_and_deletions_of_memory_md(mem: Memory, root: Path) -> None:
    allergy = mem.add("Remember that I'm allergic to walnuts", agent_id="cook").added[0]
    mem.add("我每天早上喝一杯绿茶", agent_id="cook")
    memory_md = root / "default" / "MEMORY.md"
    memory_md.write_text(memory_md.read_text(encoding="utf-8").replace("walnuts", "hazelnuts"), encoding="utf-8")
    assert mem.recent_memories("cook") == ["I'm allergic to hazelnuts", "我每天早上喝一杯绿茶"]
    system = _system(mem.build_context("What snacks should I buy?", agent_id="cook"))
    assert "hazelnuts" in system and "walnuts" not in system
    assert system.count("allergic to hazelnuts") == 1  # shown once: the pin, not again as a fact
    s = mem.session("snacks", agent_id="cook")
    assert "walnuts" not in _system(s.build_context("Any snack ideas?"))
    # the bullet deleted by hand: its pin goes with it, the other stays
    text = memory_md.read_text(encoding="utf-8")
    memory_md.write_text("\n".join(line for line in text.splitlines() if allergy.id not in line) + "\n",
                         encoding="utf-8")
    assert mem.recent_memories("cook") == ["我每天早上喝一杯绿茶"]
    assert "nuts" not in _system(mem.build_context("What snacks should I buy?", agent_id="cook"))


def test_a_resumed_session_keeps_its_agent(mem: Memory) -> None:
    mem.add("Always answer in French", agent_id="writer")
    s = mem.session("w", agent_id="writer")
    s.add_message("user", "Bonjour")
    assert mem.session("w").agent_id == "writer"
    assert "Always answer in French" in _system(mem.build_context("Salut", session_id="w"))
    assert mem.session("fresh").agent_id == "default"
