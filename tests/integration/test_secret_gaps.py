"""Secrets that used to get through (a Wi-Fi key, a MySQL password on the command line, HTTP basic
credentials, a wallet's recovery phrase, a password-keyed value in structured data), a sentence
with a token in it that is redacted rather than refused, and a forget that also takes an
assistant's echo of the words out of the next turn's indexed context."""

from __future__ import annotations

from pathlib import Path

import pytest

from memfold import Memory
from memfold.errors import SecretRefusedError

from .test_deleted_means_deleted import cut_snapshot, holders

PHRASE = "legal winner thank year wave sausage worth useful legal winner thank yellow"

SECRETS = [
    ("The office wifi WPA2 key: Tr0ub4dor&3horse and the printer is on floor two", "Tr0ub4dor&3horse"),
    ("Deploy notes: run mysql -u admin -pS3cretPass99 appdb before the migration on Friday", "S3cretPass99"),
    ("The staging proxy wants Authorization: Basic dXNlcjpwYXNzd29yZDEyMw== in every request from the CI",
     "dXNlcjpwYXNzd29yZDEyMw=="),
    (f"My hardware wallet seed phrase is {PHRASE} and the device sits in the blue drawer", "sausage worth useful"),
    (f"钱包助记词：{PHRASE}，设备放在蓝色抽屉里", "sausage worth useful"),
]


@pytest.mark.parametrize("text,secret", SECRETS)
def test_the_secret_is_never_stored(mem: Memory, root: Path, text: str, secret: str) -> None:
    try:
        res = mem.add(text, user_id="alice")
    except SecretRefusedError:
        res = None
    if res is not None:
        assert res.redacted, res
    assert secret not in (root / "alice" / "MEMORY.md").read_text(encoding="utf-8")
    assert all(secret not in r.content for r in mem.get_all("alice"))
    got = mem.add([{"role": "user", "content": text}], user_id="bob")
    assert all(secret not in r.content and secret not in r.context for r in mem.get_all("bob")), got


def test_a_sentence_with_a_token_is_redacted_not_refused(mem: Memory) -> None:
    res = mem.add("The invite token is Q7W3E9R1 for the book club meeting at Anna's house on Thursday", user_id="al")
    assert res.added and not res.refused
    stored = res.added[0].content
    assert "Q7W3E9R1" not in stored and "[redacted]" in stored and "book club" in stored
    with pytest.raises(SecretRefusedError):  # a text that is only the secret is still refused
        mem.add("my api token is Q7W3E9R1", user_id="al")


@pytest.mark.parametrize("data,where", [
    ({"login": {"user": "bob", "password": "correct horse"}}, "structured_data['login']['password']"),
    ({"Password": "abc"}, "structured_data['Password']"),
    ({"wallet": {"mnemonic": PHRASE}}, "structured_data['wallet']['mnemonic']"),
])
def test_a_password_keyed_value_in_structured_data_is_refused(mem: Memory, data: dict, where: str) -> None:
    with pytest.raises(SecretRefusedError, match=r"structured_data\[") as got:
        mem.add("my account settings", user_id="al", structured_data=data)
    assert where in str(got.value)
    assert mem.get_all("al") == []
    # a key that describes the password is not one
    assert mem.add("password rules", user_id="al", structured_data={"password_policy": "twelve characters"}).added


def test_forget_takes_the_assistants_echo_out_of_the_next_turns_context(mem: Memory, root: Path) -> None:
    mem.add([{"role": "user", "content": "My locker hint is Zorbelwick by the gym entrance"},
             {"role": "assistant", "content": "Got it, your locker hint is Zorbelwick. I will remember it."},
             {"role": "user", "content": "Also I train on Tuesdays with Marco at the climbing hall"}], user_id="al")
    # the turn itself (listings show the memory extracted from it in its place): read from the index
    turn = next(r for r in mem.index.list_records("al") if r.kind == "turn" and "Marco" in r.content)
    assert "Zorbelwick" in turn.context  # the next turn's context quotes the reply
    snap = cut_snapshot(mem, "al")
    assert holders(snap.parent, "zorbelwick")  # the snapshot's vocabulary has the echoed word
    assert mem.forget("Zorbelwick", user_id="al")
    left = mem.index.list_records("al", active_only=False)
    assert left and all("Zorbelwick" not in r.content and "Zorbelwick" not in r.context for r in left)
    after = next(r for r in left if r.kind == "turn" and "Marco" in r.content)
    assert after.context.startswith(turn.context[:10])  # the day stays
    # (a search for the words is a new query: record_access=False keeps it out of the usage record)
    assert all("Zorbelwick" not in h.record.context
               for h in mem.search("Zorbelwick", user_id="al", record_access=False))
    mem.close()
    assert holders(root, "Zorbelwick", "zorbelwick") == []  # no file keeps it: index, log, backups, snapshot
