"""Pure parts of conversation memory: capacity truncation, the pin list, prompts, summaries."""

from __future__ import annotations

import pytest

from memfold import prompts
from memfold.engine.conversation.summarizer import SessionSummarizer, summary_budget
from memfold.engine.storage.pin import PinList
from memfold.text.capacity import MARKERS, cap_text
from memfold.text.tokens import count_tokens


# ---- capacity (seed 002: head 70% + tail 20%) ---------------------------------------------
def test_text_within_the_limit_is_unchanged() -> None:
    text = "a" * 5000
    capped = cap_text(text, 5000)
    assert capped.text is text and not capped.truncated and capped.omitted_chars == 0


def test_long_text_keeps_head_and_tail_with_a_marker() -> None:
    lines = [f"- memory line {i:05d} " + "x" * 80 for i in range(220)]
    text = "\n".join(lines)
    assert len(text) > 20_000
    capped = cap_text(text, 5000)
    assert capped.truncated and len(capped.text) <= 5000
    head, _, rest = capped.text.partition("\n\n[… memory truncated:")
    tail = rest.split("…]\n\n", 1)[1]
    assert text.startswith(head) and text.endswith(tail)
    assert 0.6 * 5000 <= len(head) <= 0.7 * 5000
    assert 0.1 * 5000 <= len(tail) <= 0.2 * 5000
    assert head.endswith(lines[len(head.splitlines()) - 1])  # cut on a line break
    assert capped.omitted_chars == len(text) - len(head) - len(tail)
    assert f"{capped.omitted_chars} of {len(text)} characters omitted" in capped.text


def test_chinese_marker_and_tiny_limits() -> None:
    capped = cap_text("记忆" * 3000, 1000, "zh")
    assert capped.truncated and len(capped.text) <= 1000 and "记忆已截断" in capped.text
    assert MARKERS["zh"].split("：")[0].strip("[… ") in capped.text
    for limit in (1, 10, 60):
        assert len(cap_text("y" * 500, limit).text) <= limit
    with pytest.raises(ValueError):
        cap_text("x", 0)


# ---- pin list (seed 000) ------------------------------------------------------------------
@pytest.mark.parametrize("n", [0, 1, 10, 11, 25])
def test_pin_list_keeps_the_last_ten_oldest_first(n: int) -> None:
    pins = PinList("a", 10)
    for i in range(n):
        assert pins.add(f"memory {i}")
    expected = [f"memory {i}" for i in range(max(0, n - 10), n)]
    assert pins.recent_memories == expected
    assert pins.render() == "\n".join(expected)
    assert len(pins) == min(n, 10)


def test_pin_list_skips_empty_content_and_pin_content_has_no_effect() -> None:
    pins = PinList("a", 3)
    assert not pins.add("") and not pins.add("   \n") and not pins.add(None)
    assert pins.recent_memories == []
    assert pins.pin_content == ""
    pins.pin_content = "legacy text written by old code"
    pins.add("  keep me  ")
    assert pins.recent_memories == ["keep me"]
    assert "legacy" not in pins.render()
    returned = pins.recent_memories
    returned.append("mutating the copy")
    assert pins.recent_memories == ["keep me"]


def test_pin_list_from_old_or_foreign_state() -> None:
    assert PinList.from_state("a", 10, None).recent_memories == []
    assert PinList.from_state("a", 10, {"pin_content": "old agent"}).recent_memories == []
    assert PinList.from_state("a", 10, {"recent_memories": "not a list"}).recent_memories == []
    restored = PinList.from_state("a", 2, {"recent_memories": ["x", 3, "y", "z"]})
    assert restored.recent_memories == ["y", "z"]


# ---- prompts --------------------------------------------------------------------------------
def test_summary_prompts_hold_the_seed_template_and_render_once() -> None:
    zh = prompts.render("summary", "zh", current_summary="旧摘要 {new_dialogue_content}", new_dialogue_content="用户：你好")
    assert zh.startswith("请逐步总结提供的对话内容，将其补充到之前的摘要中并返回一个新的摘要。")
    assert "当前摘要：\n旧摘要 {new_dialogue_content}\n\n新的对话内容：\n用户：你好\n\n新摘要：" in zh
    en = prompts.render("summary", "en", current_summary="old summary", new_dialogue_content="User: hi")
    assert en.lower().startswith("progressively summari")
    assert "old summary" in en and "User: hi" in en and en.rstrip().endswith("New summary:")
    assert "{" not in en


# ---- extractive summary ----------------------------------------------------------------------
def _filler(i: int) -> str:
    return f"That sounds interesting, tell me more about it please, I am curious about point {'abc'[i % 3]}."


def test_extractive_summary_keeps_names_numbers_dates_within_budget() -> None:
    s = SessionSummarizer(None, budget_tokens=120)
    messages = []
    for i in range(40):
        messages.append({"role": "user", "content": _filler(i).replace(" point", " the topic")})
        messages.append({"role": "assistant", "content": "Sure, here is a long generic answer " + "blah " * 30})
    messages[10] = {"role": "user", "content": "My sister Alice arrives on March 3rd on flight CA1234."}
    messages[50] = {"role": "user", "content": "Remember that my budget is 4500 dollars."}
    res = s.summarize("", messages)
    assert res.method == "extractive"
    assert res.tokens <= 120 and count_tokens(res.text) <= 120
    for needle in ("Alice", "March 3rd", "CA1234", "4500"):
        assert needle in res.text


def test_chinese_extractive_summary_and_bounded_growth() -> None:
    s = SessionSummarizer(None, language="zh", budget_tokens=150)
    summary = ""
    for round_ in range(12):
        msgs = [{"role": "user", "content": f"第{round_}轮：我们随便聊聊天气和电影，没有什么特别的内容。" * 2},
                {"role": "assistant", "content": "好的，我们继续聊。" * 5}]
        if round_ == 2:
            msgs.append({"role": "user", "content": "我的女儿叫小美，她5月20日过生日。"})
        summary = s.summarize(summary, msgs).text
        assert count_tokens(summary) <= 150
    assert "小美" in summary and "5月20日" in summary
    assert "用户：" in summary


def test_fit_and_budget() -> None:
    assert summary_budget(32768) == 2000 and summary_budget(1024) == 128
    s = SessionSummarizer(None, budget_tokens=50)
    assert s.fit("short") == "short"
    long = " ".join(f"Sentence {i} mentions nothing at all." for i in range(60)) + " Bob was born in 1990."
    fitted = s.fit(long)
    assert count_tokens(fitted) <= 50 and "1990" in fitted


def test_pin_list_keeps_memory_ids_and_reads_states_without_them() -> None:
    pins = PinList("a", 3, [("first", "id1"), "second", ("third", "id3"), ("fourth", "id4")])
    assert pins.items == [("second", None), ("third", "id3"), ("fourth", "id4")]
    again = PinList.from_state("a", 3, pins.to_state())
    assert again.items == pins.items
    old = PinList.from_state("a", 3, {"recent_memories": ["x", "y"]})  # saved before pins kept ids
    assert old.items == [("x", None), ("y", None)]
    odd = PinList.from_state("a", 3, {"recent_memories": ["x", "y"], "ids": ["only-one"]})
    assert odd.items == [("x", None), ("y", None)]
