"""The secret screen's first look (``text/secrets.py``): a text runs only the rules whose hints it
holds. Whatever it skips, ``find_secrets`` finds exactly what every rule run on the text finds
(``first_look=False``): on the secrets corpus, on secrets written to slip past a hint (case,
look-alike letters, spread words, other scripts' digits) and on the bench's texts."""

from __future__ import annotations

import re
import sys

import pytest

from memfold.eval.bench import synthetic_texts
from memfold.text.casefold import lower_as_regex
from memfold.text.secrets import find_secret, find_secrets, screen

from ..support.secrets_corpus import CASES

# secrets each rule must still find after the first look, spelled to test its hints
STILL_CAUGHT = [
    "My PIN is 4821", "my PİN is 4821", "p@ssw0rd: Zx9!kLm2", "P A S S W O R D = qwerty99", "PAſſWORD is hunter2xyz",
    "paſsword is hunter2xyz", "Pass-Phrase is 'correct horse battery staple'", "pwd=Zx9!kLm2", "PW hunter2xyz",
    "the door code is 482913", "one-time code 739201", "cvv 371", "security code 4821", "verification-code 739201",
    "unlock code 2580", "login code 739201", "access code 482913", "OTP 739201",
    "my 密 码 is 12345678", "密\u3000码：abc12345", "门禁码是 482913", "验证码 739201",
    "ſecret key is Ab12345678xyz", "use toKen Ab12345678xyz", "api key: AbCd1234EfGh5678", "私钥 Ab12345678xyz",
    "令牌是 Ab12345678xyz", "Authorization: Bearer abcDEF1234567890xyz", "client secret = Ab12345678xyz",
    "refresh_token: Ab12345678xyz", "signing key Ab12345678xyz", "app secret Ab12345678xyz",
    "private key Ab12345678xyz",
    "card ４１１１ １１１１ １１１１ １１１１", "卡号 6222021234567890123", "SSN 123-45-6789", "SSN ۱۲۳-۴۵-۶۷۸۹",
    "Social Security No. 123 45 6789", "身份证 110101199003074578",
    "token ghp_abcdefghijklmnop1234567890", "npm_abcdefghijklmnop1234", "hf_abcdefghijklmnopqrstu",
    "xoxb-1234567890-abcdefghij", "glpat-abcdefghijklmnop1234", "AKIAABCDEFGHIJKLMNOP",
    "AIzaSyA1234567890abcdefghijklmnopqrstu", "rk_test_abcdefghijklmnop12", "pk-ant-abcdefghijklmnop1234",
    "visit https://bob:hunter2xyz@example.com/x", "https://api.example.com/v1?api_key=abcdef123456",
    "login admin / admin12345", "账号 zhangsan / Mima2024!",
]


@pytest.mark.parametrize("text", STILL_CAUGHT)
def test_a_secret_spelled_to_slip_past_a_hint_is_still_caught(text):
    assert find_secrets(text, first_look=False), f"the rules themselves miss {text!r}"
    assert find_secret(text) is not None
    assert find_secrets(text) == find_secrets(text, first_look=False)
    assert screen(text).redacted


def test_the_first_look_finds_what_every_rule_finds():
    texts = [c.text for c in CASES] + STILL_CAUGHT + synthetic_texts(2000)
    texts += [t.upper() for t in texts[:200]] + [f"note: {a} {b}" for a, b in zip(texts, texts[1:200])]
    differ = [t for t in texts if find_secrets(t) != find_secrets(t, first_look=False)]
    assert not differ, differ[:5]


def test_lower_casing_matches_the_rules_case_folding_for_every_character():
    """An ASCII letter is in ``lower_as_regex(c)`` exactly when ``(?i)`` takes ``c`` for it
    (İ and ı for i, ſ for s, the Kelvin sign for k), over all of Unicode."""
    letter = re.compile("(?i)[a-z]")
    wrong = []
    for cp in range(sys.maxunicode + 1):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        c = chr(cp)
        low = lower_as_regex(c)
        ascii_letters = [ch for ch in low if "a" <= ch <= "z"]
        if letter.fullmatch(c):
            if not (len(low) == 1 and ascii_letters and re.fullmatch("(?i)" + low, c)):
                wrong.append(c)
        elif ascii_letters:
            wrong.append(c)
    assert not wrong, wrong
