"""Deterministic memory extraction for Chinese and English (no LLM).

What a user says about themselves, one sentence at a time, in the user's own words:

- preferences: likes and dislikes ("I love…", "I can't stand…", "my favourite X is…", "I'd rather…",
  "我喜欢/讨厌/受不了…", "…是我的最爱") → ``preference``;
- habits and routines ("I usually…", "every morning…", "twice a week", "我每天/一般/经常…") → ``pattern``;
- commitments: what the user has to do or promised ("I need to…", "remind me…", "I promised…",
  "我得/必须/答应…", "提醒我…"), and intentions without a plan word ("I will call mom tomorrow",
  "我要交房租") → ``todo``;
- plans and dated events: trips, moves, appointments, weddings, bookings ("I'm planning a trip to
  Kyoto in April", "我下个月要去上海出差"), or anything with a date ("Project A is due on March 15") → ``event``;
- facts: family and people ("my sister Anna lives in Berlin", "我有两个孩子"), health and allergies
  ("I'm allergic to peanuts", "我对花生过敏"), work ("I work as…", "我在腾讯做产品经理"), places ("I
  grew up in Cork", "我住在杭州"), birthdays, ages and expiry dates, "my X is Y" / "我的X是Y" → ``fact``.

Explicit requests ("remember that…", "please note…", "FYI…", "记住…", "请记下…", "别忘了…") keep
what follows the command words, whatever its type (``strip_command``). Questions, hypotheticals,
small talk, requests to the assistant and assistant-style text ("I'd be happy to help…", "你可以…")
give nothing. "done: X" / "完成了X" says a todo is finished (``done_statement``); the write path
closes the matching open todo.

A reply to a suggestion is not a commitment: "I'll check out that café", "I think I'll try it",
"I'll keep that in mind", "我会试试" say the user heard the advice, not that there is something to
do (``follow_up``). Without a date they are not extracted; the turn itself is still stored.

``benchmarks/extraction_corpus.py`` measures these rules on a labelled corpus (docs/extraction.md)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ..models import MemoryType

_SENT_SPLIT = re.compile(r"(?<=[.!?。！？；;])\s*|\n+")
# a Chinese sentence often strings clauses with a comma: "我对花生过敏，我在腾讯做产品经理" says two
# things; a clause that starts again with 我 is one of its own
_ZH_CLAUSE = re.compile(r"[，,](?=我)")

# ---- explicit requests: the command words are not part of the memory ----------------------------
_LEAD_EN = r"(?:(?:ok(?:ay)?|oh|and|also|btw|by the way|hey)[,\s]+)*"
_REMEMBER_EN = re.compile(
    r"^" + _LEAD_EN + r"(?:(?:can|could|would|will) you\s+)?(?:please\s+|pls\s+|i want you to\s+)?"
    r"(?:remember|don'?t forget|do not forget|note|make a note|take note|keep in mind|bear in mind|fyi|"
    r"for your information|for the record|just so you know|heads up)"
    r"(?:\s+(?:this|that|the following|this one)\s*[,:;\u2014-]|\s+(?:of\s+)?that\b)?[,:\s]+(.+)$", re.I)
# "记住这个：…" / "别忘了这件事，…": the pointer word before the colon is not part of the memory
_REMEMBER_ZH = re.compile(r"^(?:请|请你|你|帮我|麻烦你?|顺便)?(?:记住|记一下|记住一下|记下|记下来|记着|记好|记得|别忘了|不要忘了|"
                          r"不要忘记|别忘记|记录一下|记录下|备忘一下|告诉你|跟你说)"
                          r"(?:(?:这个|这件事|这一点|这点|这些|以下(?:内容)?|下面(?:的|这些)?(?:内容|事)?)\s*[：:，,]"
                          r"|[：:，,\s])*(.+)$")

_POINTER_ONLY = re.compile(r"^(?:this|that|it|these|those|the following|this one|这个|这件事|这一点|这些|以下|下面)$", re.I)

# ---- what is not about the user: questions, hypotheticals, requests, assistant-style text --------
_QUESTION = re.compile(
    r"[?？]\s*$|^(?:what|when|where|who|why|how|which|whose|do you|did you|can you|could you|would you|will you|"
    r"is it|is there|are there|are you|have you|should i|do i|does)\b|\bi wonder\b|\bi(?:'m| am) wondering\b|"
    r"(?:吗|么|呢)\s*[。.!！～~]*$|会不会|是不是|要不要|能不能|有没有|可不可以|好不好|对不对|为什么|怎么|哪里|哪儿|哪个|哪些|几点|"
    r"多少|什么(?![都也])|我在想|我想知道|不知道|我好奇", re.I)
_HYPOTHETICAL = re.compile(r"^(?:if|suppose|imagine|what if)\b|\bif (?:i|we) (?:had|were|was|could|won)\b|"
                           r"^(?:如果|要是|假如|假设|万一)|如果我", re.I)
_ASSISTANT_EN = re.compile(
    r"^(?:sure|certainly|of course|absolutely|great question|good question|no problem|here(?:'s| is| are)|"
    r"in summary|to summari[sz]e|as an ai)\b|\bI(?:'d| would)? be (?:happy|glad|delighted) to\b|"
    r"\bI(?:'m| am) (?:happy|glad|here) to help\b|\bI (?:recommend|suggest|understand (?:how|that|your|why|what)|"
    r"hope (?:this|that|it) helps)\b|\bI(?:'m| am) sorry to hear\b|\blet me know\b|\bfeel free\b|\bfor you\b|"
    r"\byou(?:'ll| will| should| might| could| can| may| need to| have to| must|'d)\b|\b(?:before|if|when|once) you\b|"
    r"\bas an ai\b|\bI(?:'m| am) (?:an ai|a language model|an assistant)\b", re.I)
_REQUEST_EN = re.compile(r"^(?:please\s+)?(?:write|translate|summari[sz]e|tell me|give me|show me|explain|search|find|"
                         r"look up|list|draft|help me|make me|create|generate|compose|calculate|convert|recommend|"
                         r"suggest|let'?s|play)\b", re.I)
_ASSISTANT_ZH = re.compile(
    r"^(?:当然|没问题|好问题|下面是|以下是|这是(?:一个|一份|一些|几)|总之|总的来说)|我(?:很|非常)?(?:乐意|愿意|高兴|可以)(?:帮|为|给)你|"
    r"我(?:建议|推荐)|我理解|作为(?:一个|一名)?(?:AI|人工智能|助手|语言模型)|希望(?:这|这些|以上)?(?:对你|能)(?:有)?(?:所)?帮助|"
    r"你(?:可以|应该|不妨|最好|需要|可能会|会发现|也可以)|听起来你|看起来你|的话我|听到你|随时(?:问我|告诉我)|最好(?:先|提前)|很多人(?:发现|觉得|认为)",
    re.I)
_REQUEST_ZH = re.compile(r"^(?:请|麻烦你?|你)?(?:帮我|给我|替我|为我)|^(?:请)?(?:写|翻译|总结|解释|搜|查|列|讲|再把)|"
                         r"^(?:我们|咱们)来")

# ---- preferences -----------------------------------------------------------------------------------
_PREF_EN = re.compile(r"\b(?:I|we)\s+(?:really\s+|do\s+|also\s+|usually\s+|always\s+|absolutely\s+|just\s+)*"
                      r"(like|love|prefer|enjoy|adore|hate|dislike|can't stand|cannot stand|don't like|do not like|"
                      r"don't enjoy|detest|loathe)\s+(.+)", re.I)
_PREF_EN_MORE = re.compile(
    r"\b(?:my|our)\s+(?:all-time\s+|absolute\s+)?favou?rite\b|\b(?:is|are)\s+(?:my|our)\s+(?:all-time\s+|absolute\s+)?"
    r"(?:favou?rite|weakness|guilty pleasure|jam)\b|\bI(?:'m| am)\s+(?:not\s+)?(?:really\s+|such\s+)?(?:a\s+)?"
    r"(?:big\s+|huge\s+)?fan of\b|\bI(?:'m| am)\s+(?:not\s+)?(?:really\s+|so\s+|big\s+|totally\s+)?into\b|"
    r"\bI(?:'d| would)\s+(?:much\s+)?rather\b|\bI(?:'m| am) (?:crazy|passionate|obsessed|mad) (?:about|with)\b|"
    r"\bI can'?t get enough of\b|\bnothing beats\b|\bI find\s+(?:\w+\s+){1,4}?(?:boring|annoying|dull|tedious|relaxing|"
    r"fun|fascinating|delicious|disgusting|overrated|underrated|amazing|beautiful|soothing|stressful)\b|"
    r"\b(?:I|we)\s+(?:don'?t|do not|never)\s+(?:really\s+|much\s+|particularly\s+)?(?:like|enjoy|care for)\b", re.I)
_PREF_EN_NEG = re.compile(r"\bnot\s+(?:really\s+|such\s+)?(?:a\s+)?(?:big\s+|huge\s+)?fan\b|\bnot\s+(?:really\s+)?into\b|"
                          r"\b(?:don'?t|do not|never)\s+(?:really\s+|much\s+|particularly\s+)?(?:like|enjoy|care for)\b|"
                          r"\b(?:boring|annoying|dull|tedious|disgusting|overrated|stressful)\b",
                          re.I)
_PREF_ZH = re.compile(r"我(?:们)?(?:很|最|特别|比较|非常|更|一直|也|还是|通常|超|真的|挺)*"
                      r"(不太喜欢|不怎么喜欢|不喜欢|喜欢|爱喝|爱吃|爱看|爱听|不爱|热爱|酷爱|超爱|爱|偏好|偏爱|讨厌|受不了|忍受不了|"
                      r"更愿意|宁愿|宁可|迷上了|着迷于)(.+)")
_PREF_ZH_NEG = ("讨厌", "不喜欢", "不太喜欢", "不怎么喜欢", "不爱", "受不了", "忍受不了")
# "我最喜欢的城市是成都": what is liked (城市) and the answer (成都), not "的城市是成都"
_PREF_ZH_BEST = re.compile(r"我(?:们)?(?:最|特别|比较|非常|一直)*(喜欢|爱|偏爱|讨厌|不喜欢)([^，。！？\s的]{0,4})的"
                           r"([^，。！？\s]{0,12}?)(?:是|为|：|:)(.+)")
_PREF_ZH2 = re.compile(r"(?:我的)?(.{1,12}?)偏好(?:是|为|：|:)(.+)")
_PREF_ZH_MORE = re.compile(r"是我(?:们)?的(?:最爱|心头好|最喜欢的)|最(?:爽|棒|好吃|好喝|舒服|享受)|我(?:只|就只|一般只)(?:喝|吃|用|穿|看|听)|"
                           r"我觉得[^，。！？\s]{1,10}?(?:很|特别|非常|太|挺)?(?:无聊|好看|好听|好吃|难吃|难看|有意思|没意思|烦人)|我(?:们)?的最爱|我(?:的)?爱好是|我对.{1,12}?(?:很|特别|非常|比较|挺)?感兴趣")

# ---- commitments -------------------------------------------------------------------------------------
# an obligation or a promise: a todo even when a plan word is in it ("I've got to book the flights")
_TODO_STRONG_EN = re.compile(
    r"\b(?:I|we)(?:'ve| have)?\s+(?:still\s+|really\s+|also\s+|just\s+)*(?:need to|have to|got to|gotta|must|should|"
    r"ought to|promised?|owe(?! you one))\b|\b(?:I|we)(?:'m| am|'re| are)\s+supposed to\b|\b(?:I|we)(?:'d| had) better\b|"
    r"\b(?:I|we)\s+told\s+(?:\w+\s+){1,3}?(?:I'd|I would|I'll|I will|we'd|we'll)\b|"
    r"(?:^|please\s+|pls\s+|can you\s+|could you\s+)remind me\b|\bremind me to\b|"
    r"\b(?:don'?t|do not) let me forget\b|\bmake sure I\b", re.I)
# an intention: a todo unless it names a plan (a trip, an appointment: an event)
_TODO_WEAK_EN = re.compile(r"\b(?:I|we)(?:'ll| will|'m going to| am going to|'re going to| are going to| plan to|"
                           r"'m planning to| am planning to| intend to|'m about to)\b", re.I)
_TODO_STRONG_ZH = re.compile(r"(?:我|我们)(?:还|也|一定|必须)?(?:得|必须|需要|一定要|应该)(?!到|出|知|了)|必须|提醒我|"
                             r"(?:别|不要|不许)让我忘|答应|说好|约好了要|记得要|待办|截止|得(?:抓紧|赶紧|尽快|马上)|"
                             r"还没(?:订|买|交|做|写|办|付|还|回|打|发|寄|续|报|约)|我(?:还)?欠(?!缺)|"
                             r"(?:明天|后天|今晚|下周[一二三四五六日天]?|周[一二三四五六日天])(?:[^，。！？\s]{0,4})把[^，。！？\s]{1,12}?"
                             r"(?:发|寄|交|送|还|带|拿)(?:给|到|去|回)(?![^，。！？\s]*了\s*[。！]?$)")
_TODO_WEAK_ZH = re.compile(r"(?:我|我们)(?:[^，。！？\s]{0,6}?)(?:要|会|打算|计划|准备|想要)|"
                           r"^(?:明天|后天|今晚|晚上|下午|上午|下周[一二三四五六日天]?|周[一二三四五六日天])?要(?:给|把|去|交|买|打|发|寄|还|带|"
                           r"做|写|订|取|找|接|送|约|续|报|付)")

# a reply to what was just suggested (``follow_up``): an intention to try, look at or weigh something,
# a hedged intention, one that points back at the advice, or one the user is unsure of
_FU_ADV = (r"(?:\s+(?:definitely|probably|certainly|also|just|really|totally|first|then|now|still|surely|likely|"
           r"actually|maybe|perhaps|happily|gladly|so|too))*")
_FU_VERB_EN = re.compile(
    r"\b(?:I|we)(?:'ll|\u2019ll| will|'m going to| am going to|'d like to| would like to| might| may| could| should)"
    + _FU_ADV + r"\s+(?:check\b|try\b|give\b|look\b|consider\b|think\b|keep\b[^.]{0,40}\bin mind|bear\b[^.]{0,40}\bin mind|"
    r"keep (?:that|this|these|those|it|them|your)\b|go (?:with|for)\b|stick (?:with|to)\b|research\b|search\b|explore\b|"
    r"browse\b|let you know\b|keep you\b|reach out\b|take (?:a look|note|your|that|this|these|those|it)\b|"
    r"follow (?:your|these|those|that|this|the tips|the advice|up)\b|see (?:if|what|how|whether)\b|ask (?:about|around)\b|"
    r"start (?:by|with)\b|definitely\b|(?:be sure|make sure) to (?:check|try|look|keep|let|follow)\b)", re.I)
_FU_HEDGE_EN = re.compile(r"\b(?:I|we)\s+(?:think|guess|suppose|figure|might|may)\b|\b(?:maybe|perhaps|probably)\b", re.I)
_FU_POINTER_EN = re.compile(
    r"\b(?:you(?:'ve|\u2019ve)? (?:mentioned|suggested|recommended|provided|listed|shared|gave|said)|your (?:suggestions?|"
    r"advice|tips|recommendations?|ideas|help)|(?:these|those) (?:tips|suggestions|ideas|options|recommendations|"
    r"resources|steps))\b", re.I)
_FU_UNSURE_EN = re.compile(r"\b(?:not sure|unsure|wondering|don't know|do not know|undecided)\b[^.]{0,20}\b(?:if|whether)\b",
                           re.I)
_FU_ZH = re.compile(r"(?:我|我们)(?:会|要|就|得|再|先|也|去|可以)*(?:试试|试一试|试一下|看看|看一看|看一下|考虑|想想|想一想|"
                    r"研究一下|查查|查一下|留意|参考)|(?:也许|可能|或许|大概)(?:我|我们)?(?:会|要)|不确定(?:要不要|是否|该不该)")
# ---- plans and dates ---------------------------------------------------------------------------------
_PLAN_EN = re.compile(
    r"\b(?:trip|travel(?:l?ing)?|vacation|holiday|honeymoon|flight|flying|fly to|visit(?:ing)?|camping|cruise|"
    r"road trip|backpacking|wedding|appointment|interview|conference|concert|festival|party|marathon|race|"
    r"tournament|exam|reunion|ceremony|graduation|meeting|reservation|booked|reserved|scheduled|tickets?|check-?up|"
    r"moving|relocating|heading to|off to|driving to|move to|start(?:ing)? (?:my|a|the) new)\b", re.I)
_PLAN_ZH = re.compile(r"旅行|旅游|出差|度假|出国|出游|(?:去|到)[^，。！？\s]{1,8}?玩|露营|野餐|徒步|看牙医|看医生|体检|复查|面试|考试|"
                      r"婚礼|结婚|订婚|聚会|派对|生日会|音乐会|演唱会|比赛|马拉松|会议|开会|约会|搬家|入职|报到|毕业|航班|"
                      r"机票|火车票|高铁票|酒店|餐厅|回老家|过年|回国|探亲|来[^，。！？\s]{0,6}?看我|订了|约了")
_MONTHS = ("january|february|march|april|may|june|july|august|september|october|november|december|"
           "jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec")
_WEEKDAYS = "monday|tuesday|wednesday|thursday|friday|saturday|sunday"
_DATE_EN = re.compile(
    rf"\b(?:(?:{_MONTHS})\.?\s+\d{{1,2}}(?:st|nd|rd|th)?|\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?(?:{_MONTHS})"
    r"|\d{4}-\d{2}-\d{2}|\d{1,2}/\d{1,2}(?:/\d{2,4})?|tomorrow|tonight|yesterday|the day after tomorrow"
    r"|(?:next|last) (?:week|month|year|weekend|" + _WEEKDAYS + r")|the week after next"
    r"|on (?:" + _WEEKDAYS + r")|(?:this|for|by|until|since|before) (?:weekend|week|month|year|" + _WEEKDAYS + r")"
    r"|(?:" + _WEEKDAYS + r") (?:morning|afternoon|evening|night)"
    rf"|the (?:first|second|third|fourth|last) (?:week|weekend) of (?:{_MONTHS})"
    rf"|(?:in|early|mid|late|end of|since|until|by|before) (?:{_MONTHS})(?:\s+\d{{4}})?|(?:{_MONTHS}) \d{{4}}"
    r"|(?:over |this |during )?(?:labou?r day|memorial day|easter|christmas|thanksgiving|new year'?s(?: eve| day)?|"
    r"halloween|valentine'?s day)(?: weekend| break)?|(?:spring|summer|winter|fall|autumn) (?:break|vacation|holidays))\b",
    re.I)
_DATE_ZH = re.compile(r"(?:\d{4}年|\d{1,2}月\d{1,2}[日号]|[一二三四五六七八九十\d]{1,3}月[一二三四五六七八九十\d]{1,3}[日号]|"
                      r"(?:今年|明年|去年|后年)?[一二三四五六七八九十\d]{1,2}月(?:份|初|底|中旬|上旬|下旬)|"
                      r"(?:明年|去年|后年)(?:[一二三四五六七八九十\d]{1,2}月)?|"
                      r"(?:下|这|本|上)(?:个)?(?:周|星期|礼拜)[一二三四五六日天末]?|(?:这|本|下)个?周末|周[一二三四五六日天](?:上午|下午|晚上|早上)|"
                      r"明天|后天|今晚|明晚|明早|昨天|下周|下个月|上个月|"
                      r"国庆节?|春节|中秋节?|元旦|端午节?|清明节?|劳动节|五一|寒假|暑假|圣诞节?|元宵节)")

# ---- facts about the user ----------------------------------------------------------------------------
_FIRST_PERSON_EN = re.compile(r"\b(?:I|I'm|I've|I'd|my|me|we|we're|our|us)\b", re.I)
_HEALTH_EN = re.compile(
    r"\b(?:allergic|allerg(?:y|ies)|intoleran(?:t|ce)|diabet(?:es|ic)|c[oe]eliac|asthma(?:tic)?|epilep(?:sy|tic)|"
    r"migraines?|pregnan(?:t|cy)|vegetarian|vegan|pescatarian|gluten|lactose|medication|meds|blood pressure|"
    r"cholesterol|insulin|surgery|contact lenses|glasses|hearing aids?|wheelchair|adhd|autism|autistic|anxiety|"
    r"depression|arthritis|heart condition|cancer|chronic|injur(?:y|ed)|sprained|disabilit(?:y|ies)|disabled|"
    r"colou?r-?blind|dyslexi[ac]|insomnia|sleep apnea|thyroid|physical therapy|therapy|diagnosed|diet|keto|halal|kosher|"
    r"recovering from|broken (?:arm|leg|ankle|wrist|foot|hand|rib|toe|finger)|fracture[sd]?|blood type|sensitive to)\b"
    r"|\bI (?:can'?t|cannot|am not allowed to) (?:eat|drink)\b", re.I)
_HEALTH_ZH = re.compile(r"过敏|糖尿病|不耐受|高血压|低血压|手术|吃素|全素|素食|偏头痛|头疼|怀孕|近视|远视|散光|哮喘|心脏病|胃病|胃炎|"
                        r"失眠|抑郁|焦虑|痛风|胆固醇|血糖|甲状腺|过敏性|鼻炎|颈椎|腰椎|腰间盘|关节炎|贫血|不能吃|不能喝|忌口|"
                        r"在吃药|一直吃药|确诊|骨折|血型|型血|摄入|饮食|在恢复|康复|敏感|在减肥")
# attributes with a date that are facts, not events: birthdays, anniversaries, ages, expiry dates
_DATED_FACT = re.compile(r"\b(?:birthdays?|anniversary|expires?|expiry|expiration|turn(?:s|ing)? (?:\d+|one|two|three|"
                         r"four|five|six|seven|eight|nine|ten|eleven|twelve|[a-z]+teen|[a-z]+ty)|\d+ years old|"
                         r"born (?:on|in))\b|生日|纪念日|到期|过期|(?:\d+|[一二三四五六七八九十两百]+)(?:周)?岁", re.I)
_HABIT_EN = re.compile(
    r"\b(?:usually|always|never|often|normally|typically|generally|regularly|routinely|rarely|seldom|habitually|"
    r"daily|weekly|nightly)\b|\btend to\b|\bmost (?:days|mornings|afternoons|evenings|nights|weekends|weeks)\b|"
    r"\b(?:every|each)\s+(?:other\s+|single\s+)?(?:day|morning|afternoon|evening|night|week|weekend|weekday|month|year|"
    + _WEEKDAYS + r")\b|\b(?:once|twice|three times|four times|\d+ times)\s+(?:a|per|every)\s+(?:day|week|month|year)\b|"
    r"\b(?:on|at) (?:weekdays|weekends|mondays|tuesdays|wednesdays|thursdays|fridays|saturdays|sundays)\b|"
    r"^(?:weekdays|weekends|mondays|tuesdays|wednesdays|thursdays|fridays|saturdays|sundays)\b|"
    r"\b(?:" + _WEEKDAYS + r")s? (?:mornings|afternoons|evenings|nights)\b|\bin the (?:mornings|evenings)\b|"
    r"\bfirst thing in the morning\b|\b(?:before|after) (?:breakfast|lunch|dinner|work|bed)\b", re.I)
_HABIT_SUBJECT_EN = re.compile(r"\b(?:I|we)(?:'m|'re|'ve|'d)?\b", re.I)
_HABIT_NOT_EN = re.compile(r"\balways\s+(?:been\s+)?(?:up for|down for|there|proud|happy|glad|excited|grateful|thankful|"
                           r"welcome|here)\b|"
                           r"\b(?:always|never|often|usually)\s+(?:(?:have|had|would|will|'ve)\s+)?(?:thought|knew|know|"
                           r"realized|realised|wondered|heard|expected|imagined|understood|noticed|guessed|forget|"
                           r"forgot|said|meant)\b", re.I)
_HABIT_ZH = re.compile(r"每(?:天|晚|早|日|周|星期|礼拜|月|年|逢|次)|每个(?:星期|礼拜|月|周末|工作日|早上|晚上|周)|一般|通常|平时|"
                       r"平常|经常|常常|总是|老是|一向|向来|从来不|从不|很少|习惯|往往|时不时|隔三差五|第一件事|"
                       r"一(?:周|星期|礼拜|个月|天|年)[^，。！？\s]{0,6}?[一两二三四五六七八九十\d]+次|"
                       r"周[一二三四五六日天](?:、|和|跟)?周[一二三四五六日天]")
_PERSON_EN = (r"(?:mom|mum|mother|dad|father|parents|sisters?|brothers?|siblings?|sons?|daughters?|kids?|child|children|"
              r"bab(?:y|ies)|twins|wife|husband|partner|spouse|fianc[ée]e?|boyfriend|girlfriend|grandma|grandmother|"
              r"grandpa|grandfather|grandparents|grandsons?|granddaughters?|grandchildren|aunts?|uncles?|cousins?|"
              r"nieces?|nephews?|in-laws|(?:mother|father|sister|brother|son|daughter)-in-law|stepmom|stepdad|"
              r"stepson|stepdaughter|friends?|roommates?|flatmates?|housemates?|neighbou?rs?|boss|manager|"
              r"colleagues?|co-?workers?|teammates?|classmates?|landlord|landlady|doctor|therapist|dogs?|cats?|"
              r"pupp(?:y|ies)|kittens?|pets?|hamsters?|rabbits?|parrots?|horses?|fish)")
_FAMILY_EN = re.compile(
    r"\b(?:my|our)\s+(?:[a-z'-]+\s+){0,2}?" + _PERSON_EN + r"\b(?!\s+(?:says|said|thinks|thought|told me|suggested|"
    r"recommended|asked|wants me|keeps telling))|\b(?:I|we)(?:'ve got| have got| have|'ve)\s+(?:a|an|one|two|three|four|"
    r"five|six|\d+|twin)\s+"
    r"(?:[a-z'-]+\s+){0,2}?" + _PERSON_EN + r"\b|\b(?:I'm|I am|we're|we are)\s+(?:married|engaged) to\b|"
    r"\b(?:is|are)\s+(?:my|our)\s+(?:[a-z'-]+\s+){0,2}?" + _PERSON_EN + r"\b|\b[A-Z][a-z]+ is (?:my|our) (?!favou?rite)|\b(?:I|we)\s+(?:just\s+|recently\s+)?"
    r"(?:adopted|rescued|got)\s+(?:a|an|two|\d+)\s+(?:[a-z'-]+\s+){0,2}?" + _PERSON_EN + r"\b", re.I)
_KIN_ZH = (r"(?:女儿|儿子|孩子|宝宝|老婆|老公|妻子|丈夫|爱人|爸爸|妈妈|父亲|母亲|父母|爸妈|哥哥|姐姐|弟弟|妹妹|爷爷|奶奶|外公|外婆|姥姥|"
           r"姥爷|叔叔|阿姨|舅舅|姑姑|表哥|表姐|表弟|表妹|堂哥|堂姐|堂弟|堂妹|男朋友|女朋友|对象|未婚妻|未婚夫|好朋友|朋友|闺蜜|室友|"
           r"同事|同学|邻居|领导|老板|上司|宠物|爸|妈|哥|姐|猫|狗)")
_FAMILY_ZH = re.compile(r"(?:我|我们家)(?:的)?(?:最好的|最小的|大|小|亲|两个|三个)?" + _KIN_ZH + r"(?!(?:[^，。！？\s]{0,3})"
                        r"(?:说|觉得|认为|建议|让我|叫我|问我|告诉我|劝我))|是我(?:的)?" + _KIN_ZH + r"|我有(?:一|两|二|三|四|五|六|\d+)"
                        r"(?:个|只|条|位|对)?" + _KIN_ZH + r"|我养了|我(?:们)?家有|我和(?:我)?(?:的)?" + _KIN_ZH)
_WORK_EN = re.compile(
    r"\b(?:I|we)(?:'m| am|'ve been| have been)?\s+(?:currently\s+|now\s+|still\s+)?work(?:ing|ed)?\s+(?:as|at|for|in|on|"
    r"from)\b|\bI(?:'m| am)\s+(?:a|an|the)\s+(?:[\w-]+\s+){0,4}?(?:nurse|teacher|engineer|developer|programmer|"
    r"designer|doctor|physician|surgeon|lawyer|attorney|accountant|architect|chef|cook|baker|writer|author|"
    r"journalist|student|manager|consultant|scientist|researcher|analyst|pharmacist|dentist|therapist|electrician|"
    r"plumber|carpenter|mechanic|pilot|firefighter|officer|librarian|professor|lecturer|artist|musician|"
    r"photographer|translator|editor|freelancer|entrepreneur|founder|owner|ceo|cto|cfo|intern|barista|waiter|"
    r"waitress|cashier|driver|farmer|vet|veterinarian|paramedic|retiree|homemaker|director|lead|head|secretary|"
    r"assistant|clerk|technician|specialist|coordinator|administrator|[a-z]+ist|[a-z]+ician)\b|"
    r"\bI\s+(?:run|own|manage|founded|co-?founded|started)\s+(?:a|an|my own|our|the)\s+(?:[\w-]+\s+){0,3}?"
    r"(?:business|company|shop|store|bakery|caf[eé]|restaurant|bar|studio|firm|agency|clinic|practice|startup|blog|"
    r"podcast|channel|farm|salon|team|department|lab|school|hotel|kitchen|gym|brewery|nonprofit|charity)\b|"
    r"\b(?:between jobs|unemployed|out of work|laid off|retired|job[- ]hunting|looking for (?:a\s+)?(?:new\s+)?"
    r"(?:job|work)|self-employed)\b|\bI report to\b|\b(?:I|we) (?:study|studied|major in|majored in)\b|"
    r"\bwork(?:ing)? (?:remotely|from home|part-time|full-time|freelance|nights|shifts)\b|\bI (?:teach|tutor|coach)\b|"
    r"\b(?:got promoted|promotion|phd|master'?s|bachelor'?s|degree|thesis|dissertation)\b|"
    r"\b(?:my|our)\s+(?:team|company|employer|job|workplace|department|clients?|startup|business|shift|salary|"
    r"university|school|college|major)\b", re.I)
_PLACE_EN = re.compile(
    r"\b(?:I|we)(?:'re|'m| am| are|'ve been| have been|'ve| have)?\s+(?:currently\s+|now\s+|still\s+|always\s+)?(?:live|living|lived|based|"
    r"staying)\s+(?:in|at|near|on|outside|with)\b|\b(?:I|we)\s+(?:grew up|was born|were born|was raised|were raised)\b|"
    r"\bI(?:'m| am)\s+(?:originally\s+)?from\b|\bI come from\b|\b(?:I|we)\s+(?:just\s+|recently\s+)?(?:moved|relocated)"
    r"\s+(?:to|from|here|back)\b|\b(?:I|we)\s+(?:just\s+|recently\s+)?(?:bought|rent|rented|own)\s+(?:a|an|our|my)\s+"
    r"(?:[\w-]+\s+){0,2}?(?:house|home|flat|apartment|condo|place|cabin|cottage)\b|\b(?:my|our)\s+(?:[\w-]+\s+)?"
    r"(?:home|house|flat|apartment|hometown|home town|place|cabin|cottage|office|neighbou?rhood|address|street)\b|"
    r"^home (?:for (?:me|us) )?is\b", re.I)
_WORK_ZH = re.compile(r"我(?:现在|目前|一直)?(?:在|于)[^，。！？\s]{1,15}?(?:工作|上班|实习|任职|打工|当|做|干|教书|读书|上学|上大学|"
                      r"读研|读博|念书|夜班|白班|值班)|我给[^，。！？\s]{1,12}?(?:工作|打工|上班)|我(?:在)?教[^，。！？\s]{0,6}?(?:钢琴|英语|数学|语文|课|学生|小朋友)|"
                      r"读[^，。！？\s]{0,8}?(?:博士|硕士|研究生)|我是(?:一名|一个|一位|个|名)?[^，。！？\s]{0,8}?(?:老师|教师|护士|医生|工程师|程序员|"
                      r"设计师|律师|会计|厨师|记者|学生|经理|销售|司机|警察|消防员|研究员|教授|作家|翻译|编辑|自由职业|公务员|主管|"
                      r"总监|架构师|分析师|咨询师|药剂师|牙医|建筑师|摄影师|画家|演员|歌手|运营|客服|实习生|研究生|博士|大学生|"
                      r"高中生|创业者|老板|店主|主播)|我(?:自己)?开了(?:一家|一个|家|个)|(?:我们|我的|我)(?:公司|团队|部门|单位|"
                      r"客户|工作)|客户|我负责|找工作|失业|退休了|辞职了|跳槽|升职|我(?:学|读)的是|我的专业")
_PLACE_ZH = re.compile(r"我(?:们)?(?:现在|目前|一直)?住在|我(?:们)?家(?:住)?在|我(?:的)?(?:老家|家乡)|我是[^，。！？\s]{1,14}人|"
                       r"我(?:们)?在[^，。！？\s]{1,10}(?:长大|生活|定居|过)|我(?:出生|生)在|搬到了?|搬去了?|买了(?:房|房子|套房|公寓)|"
                       r"我(?:的|们的)?(?:办公室|家|学校|宿舍|公寓)在")
_ATTR_EN = re.compile(r"\bmy\s+([a-z][a-z' -]{0,40}?)\s+(?:is|are|was)\s+(.+)", re.I)
_ATTR_ZH = re.compile(r"我的([^，。！？\s]{1,12}?)(?:是|叫|为)(.+)")
# family and pets are named without 的: "我女儿叫小美"
_ATTR_ZH_KIN = re.compile(r"我(女儿|儿子|孩子|宝宝|老婆|老公|妻子|丈夫|爸爸|妈妈|爸|妈|哥哥|姐姐|弟弟|妹妹|男朋友|女朋友|"
                          r"猫|狗)(?:叫|名叫|名字叫|的名字是)(.+)")
_FIRST_PERSON_ZH = re.compile(r"我")

# ---- "done: X": a todo is finished -------------------------------------------------------------------
_DONE_EN = re.compile(r"^\s*(?:\[[xX]\]|✅|✔️?|☑️?)\s*(.+)$|^\s*(?:done|finished|completed|complete|did)\s*[:：\-\u2013\u2014]\s*(.+)$|"
                      r"^\s*(?:done|finished) with\s+(.+)$|^(.+?)\s*[:：\-\u2013\u2014]\s*(?:done|finished|completed)\s*[.!]*$|"
                      r"^(.+?)\s*[(（\[](?:done|completed|finished)[)）\]]\s*$", re.I)
_DONE_ZH = re.compile(r"^\s*(?:我)?(?:已经)?(?:已完成|完成了|做完了|搞定了?|办完了|办好了|已办完?|弄好了)\s*[:：，,]?\s*(.+)$|"
                      r"^(.+?)(?:已经)?(?:已完成|完成了|做完了|搞定了|办完了|办好了|弄好了)\s*[。！!～~]*\s*$|^(.+?)[(（](?:已完成|完成)[)）]\s*$")


@dataclass(frozen=True)
class Extracted:
    memory_type: MemoryType
    content: str
    importance: float
    structured_data: dict[str, Any] = field(default_factory=dict)


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENT_SPLIT.split(text) if s and s.strip()]


def strip_command(text: str) -> tuple[str, bool]:
    """``text`` without the command words of an explicit request ("Remember that…", "please note…",
    "FYI…", "记住…", "请记下：…"), and whether there were any. A request with nothing after its
    command words is returned as it is."""
    stripped = text.strip()
    m = _REMEMBER_EN.match(stripped) or _REMEMBER_ZH.match(stripped)
    if not m:
        return stripped, False
    body = _trim(m.group(1))
    return (body, True) if body and not _POINTER_ONLY.match(body) else (stripped, False)


def done_statement(text: str) -> str | None:
    """What a message says is finished ("done: call the dentist", "[x] renew passport",
    "完成了：给王经理打电话", "报税搞定了"), or None when it says no such thing."""
    text = text.strip()
    if not text or len(text) > 500 or "\n" in text:
        return None
    m = _DONE_EN.match(text) or _DONE_ZH.match(text)
    if not m:
        return None
    what = _trim(next(g for g in m.groups() if g))
    return what or None


def _fact(text: str) -> dict[str, Any] | None:
    """A fact about the user (or None): family and people, health, work, places."""
    zh = bool(_FIRST_PERSON_ZH.search(text))
    en = bool(_FIRST_PERSON_EN.search(text))
    for topic, pat_en, pat_zh in (("family", _FAMILY_EN, _FAMILY_ZH), ("work", _WORK_EN, _WORK_ZH),
                                  ("place", _PLACE_EN, _PLACE_ZH)):
        if (en and pat_en.search(text)) or (zh and pat_zh.search(text)):
            return {"topic": topic}
    return None


def classify(text: str) -> tuple[MemoryType, dict[str, Any]]:
    """The type a free text most likely is, and what structure the rules could read from it."""
    m = _PREF_ZH_BEST.search(text)
    if m:
        verb, key = m.group(1), (m.group(3) or m.group(2)).strip()
        pref = {"polarity": "dislike" if verb in ("讨厌", "不喜欢") else "like", "object": _trim(m.group(4))}
        return MemoryType.PREFERENCE, ({"key": key} if key else {}) | pref
    for pat, lang in ((_PREF_EN, "en"), (_PREF_ZH, "zh")):
        m = pat.search(text)
        if m:
            verb = m.group(1).lower()
            negative = verb in ("hate", "dislike", "can't stand", "cannot stand", "don't like", "do not like",
                                "don't enjoy", "detest", "loathe", *_PREF_ZH_NEG)
            return MemoryType.PREFERENCE, {"polarity": "dislike" if negative else "like",
                                           "object": _trim(m.group(2))}
    m = _PREF_ZH2.search(text)
    if m:
        return MemoryType.PREFERENCE, {"key": m.group(1).strip(), "value": _trim(m.group(2))}
    if _PREF_EN_MORE.search(text) or _PREF_ZH_MORE.search(text):
        return MemoryType.PREFERENCE, {"polarity": "dislike" if _PREF_EN_NEG.search(text) else "like"}
    when = _DATE_EN.search(text) or _DATE_ZH.search(text)
    dated = {"when": when.group(0)} if when else {}
    if _TODO_STRONG_EN.search(text) or _TODO_STRONG_ZH.search(text):
        return MemoryType.TODO, dated
    first_en, first_zh = bool(_FIRST_PERSON_EN.search(text)), bool(_FIRST_PERSON_ZH.search(text))
    if (first_en and _HEALTH_EN.search(text)) or (first_zh and _HEALTH_ZH.search(text)):
        return MemoryType.FACT, {"topic": "health"}
    if _DATED_FACT.search(text) and (first_en or first_zh):
        return MemoryType.FACT, dated
    if ((_HABIT_SUBJECT_EN.search(text) and _HABIT_EN.search(text) and not _HABIT_NOT_EN.search(text))
            or (first_zh and _HABIT_ZH.search(text))):
        return MemoryType.PATTERN, {}
    if (_PLAN_EN.search(text) and (first_en or when)) or (_PLAN_ZH.search(text) and (first_zh or when)):
        return MemoryType.EVENT, dated
    if _TODO_WEAK_EN.search(text) or _TODO_WEAK_ZH.search(text):
        return MemoryType.TODO, dated
    if when:
        return MemoryType.EVENT, dated
    for pat in (_ATTR_EN, _ATTR_ZH, _ATTR_ZH_KIN):
        m = pat.search(text)
        if m:
            return MemoryType.FACT, {"key": m.group(1).strip(), "value": _trim(m.group(2))}
    about = _fact(text)
    if about is not None:
        return MemoryType.FACT, about
    return MemoryType.NOTE, {}


def follow_up(sentence: str) -> bool:
    """An intention that answers a suggestion rather than commits to something: trying, looking at or
    weighing it ("I'll definitely check out those galleries", "I'll go with the blue one"), hedged
    ("I think I'll…", "maybe…"), pointing back at the advice ("your tips"), or unsure ("not sure if I
    should…"); "我会试试", "我考虑一下". Obligations ("I need to…", "remind me…") are not follow-ups."""
    return bool(_FU_VERB_EN.search(sentence) or _FU_HEDGE_EN.search(sentence) or _FU_POINTER_EN.search(sentence)
                or _FU_UNSURE_EN.search(sentence) or _FU_ZH.search(sentence))


def not_about_the_user(sentence: str) -> bool:
    """A question, a hypothetical, a request to the assistant or assistant-style text: nothing to keep."""
    return bool(_QUESTION.search(sentence) or _HYPOTHETICAL.search(sentence) or _ASSISTANT_EN.search(sentence)
                or _REQUEST_EN.search(sentence) or _ASSISTANT_ZH.search(sentence) or _REQUEST_ZH.search(sentence))


def _trim(s: str) -> str:
    return s.strip().rstrip(".!。！，,;；").strip()


IMPORTANCE = {MemoryType.PREFERENCE: 0.7, MemoryType.TODO: 0.7, MemoryType.FACT: 0.6, MemoryType.PATTERN: 0.6}
EXPLICIT_IMPORTANCE = 0.8  # the user asked for it to be remembered


def extract(text: str) -> list[Extracted]:
    """Memories worth keeping from one user turn; [] for small talk and questions."""
    out: list[Extracted] = []
    for sent in sentences(text):
        body, explicit = strip_command(sent)
        if explicit:
            mtype, data = classify(body)
            out.append(Extracted(mtype, body, EXPLICIT_IMPORTANCE, data))
            continue
        if not_about_the_user(sent):
            continue
        for clause in _ZH_CLAUSE.split(sent):
            mtype, data = classify(clause)
            if mtype is MemoryType.NOTE:
                continue
            if mtype is MemoryType.TODO and "when" not in data and follow_up(clause):
                continue  # a reply to advice, not a to-do (a dated one is a plan: kept)
            out.append(Extracted(mtype, _trim(clause), IMPORTANCE.get(mtype, 0.5), data))
    return out
