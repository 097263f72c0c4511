"""Short user journeys (no LLM): what people say about themselves reaches MEMORY.md with its
type, command words never reach it, and "done: …" closes the open todo it names. Each journey
is a few calls through the library, the ``memfold`` command or the agent tools, and checks what
the user would see: the file, ``show``, ``context``, ``search``, the tool results."""

from __future__ import annotations

import json
from pathlib import Path

from memfold import Memory
from memfold.tools import MemoryTools

from ..conftest import run_cli


def _memory_md(root: Path, user: str) -> str:
    return (root / user / "MEMORY.md").read_text(encoding="utf-8")


def _section(text: str, heading: str) -> str:
    """The lines under ``## heading`` up to the next heading."""
    part = text.split(f"## {heading}", 1)[1]
    return part.split("\n## ", 1)[0]


def _user(*texts: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": t} for t in texts]


def _cli(root: Path, *args: str) -> str:
    r = run_cli(root, *args)
    assert r.returncode == 0, (args, r.stdout, r.stderr)
    return r.stdout


# ---- English ---------------------------------------------------------------------------------------
def test_en_family_habit_and_plan_from_a_short_conversation_reach_memory_md(mem: Memory, root: Path):
    mem.init("ana", language="en")
    mem.add([{"role": "user", "content": "My sister Anna lives in Berlin and works as a nurse."},
             {"role": "assistant", "content": "That sounds like a demanding job! How often do you see her?"},
             {"role": "user", "content": "Not often. I usually work from home on Fridays, so I call her then."},
             {"role": "user", "content": "I'm planning a trip to Kyoto in April."}], "ana")
    text = _memory_md(root, "ana")
    assert "My sister Anna lives in Berlin and works as a nurse" in _section(text, "Notes")
    assert "I usually work from home on Fridays, so I call her then" in _section(text, "Preferences & Habits")
    assert "I'm planning a trip to Kyoto in April" in _section(text, "Important Events")
    assert "How often" not in text  # the assistant's words are not the user's memories
    kinds = {r.content: r.memory_type.value for r in mem.get_all("ana")}
    assert kinds["My sister Anna lives in Berlin and works as a nurse"] == "fact"
    assert kinds["I usually work from home on Fridays, so I call her then"] == "pattern"
    assert kinds["I'm planning a trip to Kyoto in April"] == "event"


def test_en_remember_that_is_not_stored_by_add_or_by_a_conversation(mem: Memory, root: Path):
    (rec,) = mem.add("Remember that my passport expires in June 2027", "ben").added
    assert rec.content == "my passport expires in June 2027" and rec.memory_type.value == "fact"
    mem.add(_user("Please note: I'm allergic to shellfish."), "ben")
    text = _memory_md(root, "ben")
    assert "my passport expires in June 2027" in text and "I'm allergic to shellfish" in text
    assert "Remember that" not in text and "Please note" not in text
    top = mem.search("when does my passport expire", "ben", limit=1)[0]
    assert top.record.content == "my passport expires in June 2027"


def test_en_done_closes_the_todo_through_the_cli(root: Path):
    _cli(root, "init", "--user", "cy", "--lang", "en")
    _cli(root, "add", "I need to call the dentist about my tooth", "--user", "cy")
    assert "call the dentist" in _cli(root, "show", "--user", "cy")
    out = _cli(root, "add", "done: call the dentist", "--user", "cy")
    assert "completed" in out and "[todo] I need to call the dentist about my tooth" in out
    assert "dentist" not in _cli(root, "show", "--user", "cy")  # closed: out of MEMORY.md
    assert "I need to call the dentist about my tooth (completed)" in (root / "cy" / "archive.md").read_text()
    assert "done: call the dentist" not in _memory_md(root, "cy")  # the statement is not stored as a note


def test_en_a_conversation_through_the_cli_shows_up_in_the_context(root: Path, tmp_path: Path):
    conv = tmp_path / "conv.json"
    conv.write_text(json.dumps([
        {"role": "user", "content": "I'm allergic to peanuts."},
        {"role": "assistant", "content": "Thanks for telling me, I'll keep that in mind."},
        {"role": "user", "content": "I play tennis twice a week."}]), encoding="utf-8")
    _cli(root, "ingest", str(conv), "--user", "dee")
    shown = _cli(root, "show", "--user", "dee")
    assert "I'm allergic to peanuts" in shown and "I play tennis twice a week" in shown
    ctx = _cli(root, "context", "can you suggest a snack for me?", "--user", "dee")
    assert "I'm allergic to peanuts" in ctx


def test_en_questions_small_talk_and_requests_stay_out_of_memory_md(mem: Memory, root: Path):
    res = mem.add(_user("Hi there!", "What's the weather like in Berlin today?", "Thanks, that's really helpful.",
                        "Can you help me draft an email to my landlord?", "Tell me a joke."), "eve")
    assert res.added and all(r.file == "" for r in res.added)  # the turns only, in the index
    assert not (root / "eve" / "MEMORY.md").exists() or "Berlin" not in _memory_md(root, "eve")
    assert mem.get_all("eve", memory_type="fact") == [] and mem.get_all("eve", memory_type="todo") == []


def test_en_done_through_the_agent_tools(mem: Memory):
    mem.init("fay", language="en")
    tools = MemoryTools(mem, "fay")
    todo = tools.call("memory_append", {"content": "I have to renew my passport before the summer"})["stored"][0]
    assert todo["memory_type"] == "todo"
    res = tools.call("save_memory", {"content": "done: renew my passport", "memory_type": "todo"})
    assert res["ok"] and res["stored"] == [] and [c["id"] for c in res["completed"]] == [todo["id"]]
    assert "renew my passport" not in tools.call("memory_read", {})["text"]


# ---- Chinese ---------------------------------------------------------------------------------------
def test_zh_routine_health_and_work_from_a_short_conversation_reach_memory_md(mem: Memory, root: Path):
    mem.init("xiaoming", language="zh")
    mem.add([{"role": "user", "content": "我每天早上七点去跑步。"},
             {"role": "assistant", "content": "好习惯！跑完记得补充水分。"},
             {"role": "user", "content": "我对花生过敏，我在腾讯做产品经理。"}], "xiaoming")
    text = _memory_md(root, "xiaoming")
    assert "我每天早上七点去跑步" in _section(text, "偏好与习惯")
    notes = _section(text, "笔记")
    assert "我对花生过敏" in notes and "我在腾讯做产品经理" in notes
    assert "补充水分" not in text
    hits = mem.search("花生", "xiaoming", memory_type="fact", limit=3)
    assert hits and hits[0].record.content == "我对花生过敏"


def test_zh_plan_with_a_date_is_an_event_that_the_context_injects(mem: Memory, root: Path):
    mem.init("lihua", language="zh")
    mem.add(_user("我下个月要去上海出差。", "我计划四月份去京都旅行。"), "lihua")
    events = _section(_memory_md(root, "lihua"), "重要事件")
    assert "我下个月要去上海出差" in events and "我计划四月份去京都旅行" in events
    ctx = "\n".join(m["content"] for m in mem.build_context("我什么时候去上海？", "lihua"))
    assert "我下个月要去上海出差" in ctx


def test_zh_command_words_are_stripped_by_add_and_by_the_tools(mem: Memory, root: Path):
    mem.init("wang", language="zh")
    (rec,) = mem.add("请记住：我的车停在B2层", "wang").added
    assert rec.content == "我的车停在B2层"
    tools = MemoryTools(mem, "wang")
    saved = tools.call("memory_append", {"content": "记住我喜欢靠过道的座位"})["stored"][0]
    assert saved["content"] == "我喜欢靠过道的座位" and saved["memory_type"] == "preference"
    text = _memory_md(root, "wang")
    assert "我的车停在B2层" in text and "我喜欢靠过道的座位" in text and "请记住" not in text and "记住我" not in text


def test_zh_done_in_a_conversation_closes_the_open_todo(mem: Memory, root: Path):
    mem.init("zhao", language="zh")
    mem.add(_user("我要给王经理打电话。", "提醒我交电费。"), "zhao")
    todos = _section(_memory_md(root, "zhao"), "待办与承诺")
    assert "我要给王经理打电话" in todos and "提醒我交电费" in todos
    res = mem.add(_user("done: 给王经理打电话"), "zhao")
    assert [r.content for r in res.completed] == ["我要给王经理打电话"]
    todos = _section(_memory_md(root, "zhao"), "待办与承诺")
    assert "王经理" not in todos and "提醒我交电费" in todos  # only the todo it names is closed
    archived = mem.search("王经理 打电话", "zhao", include_archived=True, memory_type="todo")
    assert archived and archived[0].record.content == "我要给王经理打电话" and not archived[0].record.is_active


def test_zh_wanchengle_closes_a_todo_and_an_unknown_one_is_kept_with_a_note(root: Path):
    _cli(root, "init", "--user", "chen", "--lang", "zh")
    _cli(root, "add", "我必须在四月十五号之前报税", "--user", "chen")
    out = _cli(root, "add", "完成了报税", "--user", "chen")
    assert "completed" in out and "报税" in out
    assert "报税" not in _cli(root, "show", "--user", "chen")
    out = _cli(root, "add", "完成了：给花浇水", "--user", "chen")  # no open todo says so
    assert "no open todo matches" in out and "完成了：给花浇水" in _cli(root, "show", "--user", "chen")


def test_zh_questions_and_assistant_style_text_stay_out_of_memory_md(mem: Memory, root: Path):
    mem.init("sun", language="zh")
    mem.add(_user("你好！", "今天北京天气怎么样？", "谢谢，很有帮助。", "需要的话我可以帮你订下周六的餐厅。",
                  "如果我有条船，我会叫它海鸥号。", "我在想明天会不会下雨。", "帮我写一首关于秋天的短诗。"), "sun")
    text = _memory_md(root, "sun")
    for said in ("天气", "谢谢", "餐厅", "海鸥号", "下雨", "短诗"):
        assert said not in text, said
    assert [r.memory_type.value for r in mem.get_all("sun") if r.file] == []
