"""Pure text functions: terms, memory-file Markdown, secrets, extraction."""

from memfold.models import MemoryType
from memfold.text import memory_markdown as md
from memfold.text.extraction import classify, extract, follow_up
from memfold.text.secrets import find_secret, redact
from memfold.text.terms import terms


def test_terms_cjk_bigrams_and_stemmed_words():
    assert terms("我喜欢喝无糖拿铁") == ["我喜", "喜欢", "欢喝", "喝无", "无糖", "糖拿", "拿铁"]
    assert terms("When is Project A due?") == ["project", "due"]
    assert terms("running planned studies") == ["run", "plan", "study"]
    # query bigrams made only of question particles are dropped
    assert "什么" not in terms("咖啡偏好是什么", query=True)
    assert terms("the of and", query=True) == []



def test_short_chinese_queries_lose_their_function_word_bigrams():
    assert terms("我的猫", query=True) == ["猫"]  # 我的 would match every sentence a user writes about themselves
    assert terms("你的车呢？", query=True) == ["车"]
    assert terms("你的生日是不是五月", query=True) == ["生日", "五月"]
    assert terms("是不是", query=True) == ["是不", "不是"]  # nothing else to search: the bigrams stay
    assert terms("我的猫") == ["我的", "的猫"]  # stored documents keep every bigram


def test_memory_markdown_round_trip_keeps_meta_and_multiline():
    text = md.MEMORY_TEMPLATE["en"]
    lines = md.render("abc12345", "2026-01-02", "line one\nline two", {"type": "pattern", "importance": 0.9}, "en")
    text = md.insert_lines(text, "preferences", lines, "en")
    entries = md.parse(text)
    assert len(entries) == 1
    e = entries[0]
    assert (e.id, e.date, e.content, e.memory_type) == ("abc12345", "2026-01-02", "line one\nline two",
                                                        MemoryType.PATTERN)
    assert e.meta["importance"] == 0.9
    # the template's comments and footer are untouched
    assert text.endswith(md.MEMORY_TEMPLATE["en"].split("---")[1])


def test_zh_template_has_the_seed_sections():
    t = md.MEMORY_TEMPLATE["zh"]
    for heading in ("## 重要事件", "## 偏好与习惯", "## 待办与承诺", "## 笔记"):
        assert heading in t
    assert "_记住重要的事，忘掉不重要的。定期整理，保持精炼。_" in t


def test_hand_typed_bullet_without_id_is_an_entry():
    text = md.MEMORY_TEMPLATE["zh"].replace("<!-- 其他值得记住的信息 -->", "<!-- 其他值得记住的信息 -->\n\n- 我的猫叫咪咪")
    (e,) = md.parse(text)
    assert e.id is None and e.content == "我的猫叫咪咪" and e.section == "notes"


def test_secrets_are_detected_and_redacted():
    for s in ("my password is hunter22", "密码是abc12345", "key sk-proj-abcdefghijklmnop1234",
              "card 4111 1111 1111 1111", "身份证 110101199003071234", "token: ghp_abcdefghijklmnopqrstuv",
              "AKIAABCDEFGHIJKLMNOP"):
        assert find_secret(s), s
        assert "[redacted]" in redact(s)
    for s in ("I like 5 cats", "Project A is due on March 15", "我喜欢喝无糖拿铁，大杯", "call 555-1234"):
        assert find_secret(s) is None, s


def test_extraction_rules_zh_en():
    assert classify("我喜欢喝无糖拿铁，大杯")[0] is MemoryType.PREFERENCE
    assert classify("I prefer tea")[0] is MemoryType.PREFERENCE
    assert classify("my dog is called Bob") == (MemoryType.FACT, {"key": "dog", "value": "called Bob"})
    assert classify("我的猫叫咪咪")[0] is MemoryType.FACT
    assert classify("I will call mom tomorrow")[0] is MemoryType.TODO
    assert classify("Project A is due on March 15")[0] is MemoryType.EVENT
    (ex,) = extract("请记住：我的咖啡偏好是无糖拿铁，大杯。")
    assert ex.content == "我的咖啡偏好是无糖拿铁，大杯" and ex.importance == 0.8
    assert extract("What do you like?") == []
    assert extract("haha nice") == []


def test_a_reply_to_advice_is_not_a_todo_but_a_commitment_is():
    replies = [  # from LongMemEval's user turns, then made up; en and zh
        "I'll definitely search online for galleries and museums in my area.",
        "I think I'll go with the Lime-Honey Syrup.",
        "I'll definitely keep those tips in mind when organizing my collection.",
        "I'm not sure if I should bring my clipless pedals.",
        "I'll check out that café.", "I think I'll try it.", "Maybe I'll look into yoga classes.",
        "I'll give it a shot.", "Thanks, I'll follow your advice.", "我会试试这家店。", "那我考虑一下。", "我去看看吧。"]
    for text in replies:
        assert follow_up(text), text
        assert extract(text) == [], text
    commitments = ["I need to renew my passport.", "I have to pick up Emma from school.", "Remind me to water the plants.",
                   "I will send the report to Anna.", "I'm going to sell my car.", "我要交房租。", "提醒我给妈妈打电话。"]
    for text in commitments:
        assert not follow_up(text), text
        assert [e.memory_type for e in extract(text)] == [MemoryType.TODO], text
    # a date makes a reply a plan: kept
    (ex,) = extract("I'll check out the new café on Friday.")
    assert ex.memory_type is MemoryType.TODO and ex.structured_data == {"when": "on Friday"}
    # the other rules are untouched by the follow-up rule
    assert [e.memory_type for e in extract("I think I'll try it. I love spicy food.")] == [MemoryType.PREFERENCE]


def test_extraction_drops_the_pointer_words_of_a_request():
    cases = {
        "记住这个：我女儿叫小美": "我女儿叫小美",
        "请记住这一点：我对花生过敏。": "我对花生过敏",
        "别忘了这件事，周五开会": "周五开会",
        "记住：周五交报告": "周五交报告",
        "别忘了我周五要交报告": "我周五要交报告",
        "帮我记下以下内容：车停在B2": "车停在B2",
        "remember this: my dog is Bob": "my dog is Bob",
        "Remember this, I am allergic to peanuts.": "I am allergic to peanuts",
        "Please remember that my sister lives in Lisbon": "my sister lives in Lisbon",
        "remember that, the spare key is under the mat": "the spare key is under the mat",
        "Don't forget the following: call mom on Sunday": "call mom on Sunday",
    }
    for text, content in cases.items():
        (ex,) = extract(text)
        assert ex.content == content, (text, ex.content)
        assert ex.importance == 0.8
    # a demonstrative that belongs to the memory stays
    assert extract("记住这个人叫小王")[0].content == "这个人叫小王"
    assert extract("remember this song is by Queen")[0].content == "this song is by Queen"


def test_extraction_reads_what_is_liked_most_and_family_names():
    (ex,) = extract("我最喜欢的城市是成都")
    assert ex.memory_type is MemoryType.PREFERENCE and ex.content == "我最喜欢的城市是成都"
    assert ex.structured_data == {"key": "城市", "polarity": "like", "object": "成都"}
    assert classify("我最讨厌的天气是下雨天。")[1] == {"key": "天气", "polarity": "dislike", "object": "下雨天"}
    assert classify("我最爱的水果是芒果")[1]["object"] == "芒果"
    assert classify("我喜欢喝咖啡")[1] == {"polarity": "like", "object": "喝咖啡"}
    (ex,) = extract("记住这个：我女儿叫小美")
    assert ex.memory_type is MemoryType.FACT and ex.structured_data == {"key": "女儿", "value": "小美"}
    assert classify("我的猫叫咪咪")[1] == {"key": "猫", "value": "咪咪"}


def test_command_words_are_taken_off_and_a_bare_command_is_kept():
    from memfold.text.extraction import strip_command

    cases = {"Remember that my passport expires in June 2027": "my passport expires in June 2027",
             "FYI, my new address is 12 Elm Street": "my new address is 12 Elm Street",
             "Please note: I'm allergic to shellfish.": "I'm allergic to shellfish",
             "帮我记着明天要给银行打电话": "明天要给银行打电话", "请记下：我女儿吃全素。": "我女儿吃全素"}
    for text, body in cases.items():
        assert strip_command(text) == (body, True), text
    for text in ("Remember that", "remember this", "记住", "I remember my first bike", "Noted, thanks"):
        assert strip_command(text) == (text, False), text


def test_done_statements_name_what_is_finished():
    from memfold.text.extraction import done_statement

    cases = {"done: call the dentist": "call the dentist", "[x] renew passport": "renew passport",
             "✅ 交电费": "交电费", "pay rent (done)": "pay rent", "finished: the slides": "the slides",
             "完成了给王经理打电话": "给王经理打电话", "已完成：交电费": "交电费", "报税搞定了": "报税"}
    for text, what in cases.items():
        assert done_statement(text) == what, text
    for text in ("I went running", "Are you done?", "我完成不了", "done", "", "x" * 600):
        assert done_statement(text) is None, text


def test_family_habits_plans_health_work_and_places_are_typed():
    expected = {"My sister Anna lives in Berlin and works as a nurse.": MemoryType.FACT,
                "I usually work from home on Fridays.": MemoryType.PATTERN,
                "I'm planning a trip to Kyoto in April.": MemoryType.EVENT,
                "我每天早上七点去跑步。": MemoryType.PATTERN, "我下个月要去上海出差。": MemoryType.EVENT,
                "I'm allergic to peanuts.": MemoryType.FACT, "我在腾讯做产品经理。": MemoryType.FACT,
                "I grew up in Cork, Ireland.": MemoryType.FACT, "我受不了香菜的味道。": MemoryType.PREFERENCE,
                "I've got to book the flights for our honeymoon.": MemoryType.TODO}
    for text, mtype in expected.items():
        assert [e.memory_type for e in extract(text)] == [mtype], text
    # a new clause with 我 is a memory of its own; a hypothetical is nothing
    assert [e.content for e in extract("我对花生过敏，我在腾讯做产品经理。")] == ["我对花生过敏", "我在腾讯做产品经理"]
    assert extract("如果我有条船，我会叫它海鸥号。") == []
    for text in ("I'd be happy to help you plan your trip to Kyoto.", "我建议你在飞机上多喝水。", "我在想明天会不会下雨。"):
        assert extract(text) == [], text
