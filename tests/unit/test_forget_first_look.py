"""Forget requests' first look (``text/forget.py``): a message without any of the words a request
pattern needs skips the patterns; it finds exactly what every pattern finds, also for requests
spelled in capitals or with letters ``re.I`` takes for ASCII ones (ſ, İ, ı, K)."""

from __future__ import annotations

import pytest

from memfold.eval.bench import synthetic_texts
from memfold.text.forget import find_request

REQUESTS = [
    "forget this", "Okay. Forget it.", "Forget that I like sushi.", "Can you forget my birthday?",
    "Please delete my address from your memory", "don't remember that my salary is 5k", "Don't remember this",
    "Don't save this one.", "Don't record that in your memory", "忘了这个", "好的，忘了这个吧", "忘掉我的生日", "别记",
    "别记我的手机号", "我的生日别记", "把这件事忘了", "不要记住这个", "删掉关于咖啡的记忆", "Stop remembering my address.",
    "don't memorise this", "DON'T MEMORIZE THAT", "Please erase my phone number from the memory", "Don't write down this",
    "Don't keep that", "Don't store it in your memory", "FORGET THAT I LIKE SUSHI",
    # letters re.I takes for ASCII ones: long s, dotted and dotless i, the Kelvin sign
    "Don't ſave this one.", "don't memorıse this", "Don't \u212aeep that", "Don't wrİte down this",
    "Please delete my address from your memory",
]
NOT_REQUESTS = ["I always forget my keys", "Don't forget to call mom", "I forgot my password", "delete this file",
                "别忘了明天开会", "我又忘了带钥匙", "删掉这个文件", "I like coffee", "Don't store passwords in plain text",
                "Never keep cash at home", "别记仇", "不要记错时间", "Don't keep me waiting"]


@pytest.mark.parametrize("text", REQUESTS)
def test_a_request_is_found_with_and_without_the_first_look(text):
    req = find_request(text, first_look=False)
    assert req is not None, f"the patterns themselves miss {text!r}"
    assert find_request(text) == req


def test_the_first_look_finds_what_every_pattern_finds():
    texts = REQUESTS + NOT_REQUESTS + synthetic_texts(2000)
    texts += [t.upper() for t in texts] + [f"{a} {b}" for a, b in zip(texts, REQUESTS * 80)]
    differ = [t for t in texts if find_request(t) != find_request(t, first_look=False)]
    assert not differ, differ[:5]
