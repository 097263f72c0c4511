"""The secrets corpus (tests/support/secrets_corpus.py): every secret is found and fully
redacted with the words around it kept; every harmless look-alike is left alone; the counts in
docs/secrets.md are the corpus's."""

from __future__ import annotations

from pathlib import Path

import pytest

from memfold.text.secrets import MARKER, find_secret, find_secret_in_data, find_secrets, redact, redact_data, screen

from ..support.secrets_corpus import CASES, markdown_table

POSITIVE = [c for c in CASES if c.positive]
NEGATIVE = [c for c in CASES if not c.positive]
DOC = Path(__file__).resolve().parents[2] / "docs" / "secrets.md"


def test_the_corpus_is_large_and_bilingual():
    assert len(CASES) >= 60 and len(POSITIVE) >= 40 and len(NEGATIVE) >= 30
    for group in (POSITIVE, NEGATIVE):
        assert {c.lang for c in group} == {"en", "zh"}
    assert len({c.category for c in POSITIVE}) >= 9


@pytest.mark.parametrize("case", POSITIVE, ids=lambda c: f"{c.category}:{c.text[:30]}")
def test_secret_is_found_and_redacted(case):
    assert find_secret(case.text), case.text
    red = redact(case.text)
    for s in case.secrets:
        assert s not in red, f"{s!r} survives in {red!r}"
    assert MARKER in red
    for word in case.keep:
        assert word in red
    assert find_secret(red) is None and redact(red) == red  # redaction is final and idempotent


@pytest.mark.parametrize("case", NEGATIVE, ids=lambda c: f"{c.category}:{c.text[:30]}")
def test_look_alike_is_kept(case):
    assert find_secret(case.text) is None, find_secrets(case.text)
    assert redact(case.text) == case.text
    assert not screen(case.text).mostly_secret


def test_docs_report_the_corpus_counts():
    assert markdown_table() in DOC.read_text(encoding="utf-8"), \
        "docs/secrets.md is out of date: paste the output of `python -m tests.support.secrets_corpus`"


@pytest.mark.parametrize("text", ["wifi pw hunter2xyz", "the passcode for the door is 482913", "login: admin / admin12345",
                                  "postgresql://admin:SuperSecret99@db.internal/app", "card 4111.1111.1111.1111",
                                  "身份证 110101 19900307 4514", "p a s s w o r d is qwerty99",
                                  "我的密码是abc12345", "Pay with card 4111 1111 1111 1111 please."])
def test_a_text_that_is_mostly_a_secret(text):
    assert screen(text).mostly_secret


def test_the_rest_of_a_text_is_kept_around_a_secret():
    s = screen("Remember that my dog is called Bob. My password is Tr0ub4dor&3 and I prefer green tea.")
    assert not s.mostly_secret and s.kinds == ("password",)
    assert s.text == "Remember that my dog is called Bob. My password is [redacted] and I prefer green tea."
    assert s.kept == "Remember that my dog is called Bob. I prefer green tea."
    s = screen("我的密码是abc12345，我喜欢绿茶")
    assert s.text == "我的密码是[redacted]，我喜欢绿茶" and s.kept == "我喜欢绿茶" and not s.mostly_secret
    # a marker left by an earlier redaction counts as a secret's place
    assert screen("The user's password is [redacted]").mostly_secret


def test_structured_values_are_read_with_their_keys():
    assert find_secret_in_data({"wifi": {"password": "hunter2xyz"}}, "structured_data") == \
        ("structured_data['wifi']['password']", "password")
    assert find_secret_in_data({"keys": ["ok", "sk-abcdefghijklmnopqrstuvwx12"]}, "structured_data") == \
        ("structured_data['keys'][1]", "API key")
    assert find_secret_in_data({"card": 4111111111111111}, "d") == ("d['card']", "card number")
    assert find_secret_in_data(("t1", "ghp_abcdefghijklmnopqrstuv"), "source_ids") == ("source_ids[1]", "access token")
    assert find_secret_in_data({"polarity": "like", "object": "green tea", "when": "2026-11-23"}, "d") is None
    assert find_secret_in_data({"key": "dog", "value": "called Bob", "order": "4532 0151 1283 0366"}, "d") is None
    assert redact_data({"wifi": {"password": "hunter2xyz", "ssid": "home"}, "n": [1, "pw Zx9!kLm2"]}) == \
        {"wifi": {"password": MARKER, "ssid": "home"}, "n": [1, f"pw {MARKER}"]}
