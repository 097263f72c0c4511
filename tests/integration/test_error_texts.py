"""Error texts read as English: the article before the kind of secret."""

from __future__ import annotations

import pytest

from memfold import SecretRefusedError
from memfold.text.secrets import a_kind

KEY = "sk-proj-" + "a1B2c3D4e5F6g7H8i9J0"


def test_the_kind_of_secret_gets_the_right_article(mem):
    assert [a_kind(k) for k in ("API key", "access token", "password", "US social security number", "card number")] \
        == ["an API key", "an access token", "a password", "a US social security number", "a card number"]
    with pytest.raises(SecretRefusedError, match="contains an API key and little else;"):
        mem.add_note(f"the deploy key is {KEY}")
    r = mem.add("I like green tea", memory_type="preference").added[0]
    with pytest.raises(SecretRefusedError, match="contains an API key and little else;"):
        mem.update(r.id, content=f"key: {KEY}")
    assert mem.get(r.id).content == "I like green tea"
    with pytest.raises(SecretRefusedError, match=r"structured_data\['key'\] contains an API key;"):
        mem.update(r.id, structured_data={"key": KEY})
